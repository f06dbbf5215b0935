package vswitchd

import (
	"context"

	"github.com/ovsplane/ovsplane/ovsdb"
)

// InterfaceConfig writes a watcher plugin's other_config changes through the daemon's one
// OVSDB writer (writer.Writer.InterfaceConfig): it is the Applier of package vswitchd/watch.
func (d *Daemon) InterfaceConfig(ctx context.Context, plugin string, changes []ovsdb.InterfaceConfig) error {
	return d.w.InterfaceConfig(ctx, plugin, changes)
}
