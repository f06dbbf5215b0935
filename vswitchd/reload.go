package vswitchd

import (
	"context"
	"fmt"
	"strings"

	"github.com/ovsplane/ovsplane/model"
)

// Reload loads the configuration again and makes it the desired state. An invalid
// configuration, one that claims objects created through the API, or one that drops a bridge
// still holding ports created through the API (they would be left on a bridge nobody manages),
// is rejected whole with ErrConflict naming them, and the running one stays.
func (d *Daemon) Reload(ctx context.Context) error {
	if d.opts.Reload == nil {
		return fmt.Errorf("%w: this daemon has no configuration source to reload", model.ErrInvalid)
	}
	cfg, err := d.opts.Reload(ctx)
	if err != nil {
		return fmt.Errorf("%w: reload rejected, the running configuration stays: %w", model.ErrInvalid, err)
	}
	clashes, held, gone := d.store.reload(cfg)
	if len(clashes) > 0 {
		return fmt.Errorf("%w: reload rejected, the running configuration stays: %s created through the API; delete them through the API first or rename them in the file",
			model.ErrConflict, strings.Join(clashes, ", "))
	}
	if len(held) > 0 {
		return fmt.Errorf("%w: reload rejected, the running configuration stays: the new file drops %s, which still hold ports created through the API; delete those ports through the API first (DeletePort), or keep the bridge in the file",
			model.ErrConflict, strings.Join(held, ", "))
	}
	d.rec.Update(d.desired())
	d.log.Info("configuration reloaded")
	if len(gone) > 0 { // their rows go first, then their plugins detach them
		if err := d.rec.Reconcile(ctx); err != nil {
			d.log.Warn("reconcile after reload", "error", err)
		}
	}
	if d.opts.Plugins != nil {
		err := d.opts.Plugins.Reload(ctx, cfg.Plugins)
		if d.jobs != nil {
			d.jobs.SetConfig(cfg.Plugins)
		}
		d.RefreshPluginConfig(ctx)
		if d.att.attachConfig(ctx, gone) {
			d.rec.Update(d.desired())
		}
		d.KickFlows()
		if err != nil {
			return fmt.Errorf("%w: configuration reloaded, but plugins: %w", model.ErrFailed, err)
		}
	}
	return nil
}
