package main

import (
	"context"
	"log/slog"

	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/vswitchd/config"
	"github.com/ovsplane/ovsplane/vswitchd/overlayapi"
)

// overlayView is the API's read-only overlay view (vswitchd/overlayapi) over the fabric
// cluster named by overlay.fabric_remotes; with none configured its endpoints say so. The
// fabric client is opened on the first request (the daemon starts whether or not the fabric
// is up) and talks to the cluster's leader, so reads see every committed write.
func overlayView(cfg *config.Config, log *slog.Logger) *overlayapi.Handler {
	opts := overlayapi.Options{Logger: log}
	if remotes := cfg.Overlay.FabricRemotes; len(remotes) > 0 {
		opts.Open = func(ctx context.Context) (overlayapi.Fabric, error) {
			c, err := fabric.Open(ctx, fabric.Config{Endpoints: remotes, Logger: log})
			if err != nil {
				return nil, err
			}
			return c, nil
		}
		opts.Close = func(f overlayapi.Fabric) {
			if c, ok := f.(*fabric.Client); ok {
				c.Close()
			}
		}
	}
	return overlayapi.New(opts)
}
