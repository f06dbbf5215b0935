package writer

import (
	"context"

	"github.com/ovsplane/ovsplane/ovsdb"
)

// InterfaceConfig is the watchers' door: it applies one watcher plugin's other_config changes
// (ovsdb.Txn.SetInterfaceConfig, tagged with the plugin's name: only other_config keys, a key
// someone else set is left alone, only keys the plugin set are removed) in a transaction of
// its own, holding the turn. It does not wait for ovs-vswitchd: a change is a request, and the
// interface's next event shows its effect. It fails with ctx's error, having written nothing,
// if ctx ends while it waits for the turn; no changes, nothing sent.
func (w *Writer) InterfaceConfig(ctx context.Context, plugin string, changes []ovsdb.InterfaceConfig) error {
	if len(changes) == 0 {
		return nil
	}
	if _, err := w.take(ctx, true); err != nil {
		return err
	}
	defer w.release()
	opts := w.opts.Commit
	opts.NoWait = true
	_, err := w.db.NewTxn(w.opts.Generation()).SetInterfaceConfig(plugin, changes...).Commit(ctx, opts)
	return err
}
