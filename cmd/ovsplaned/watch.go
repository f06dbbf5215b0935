package main

import (
	"context"
	"log/slog"
	"maps"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/vswitchd"
	"github.com/ovsplane/ovsplane/vswitchd/metrics"
	"github.com/ovsplane/ovsplane/vswitchd/watch"
)

// startWatch runs the watcher plugins' dispatcher (vswitchd/watch) on the client's cache: it
// delivers the interfaces to every plugin with the Watcher capability and writes their
// other_config changes through d's one writer. The plugin host's state changes (a plugin
// started, restarted, stopped, reloaded) reach it through ph (pluginHost.watch), so a
// restarted plugin gets a fresh snapshot. stop ends it and waits.
func startWatch(ctx context.Context, c *ovsdb.Client, d *vswitchd.Daemon, ph *pluginHost, log *slog.Logger) (stop func()) {
	feed := c.WatchInterfaces()
	disp := watch.New(feed, d, watch.Options{Owner: c.Owner(), PluginKey: vswitchd.PluginKey, Logger: log.With("component", "watch")})
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = disp.Run(wctx) // ends with wctx
	}()
	ph.watch.Store(disp)
	disp.SetWatchers(watch.HostWatchers(ph.h))
	return func() {
		ph.watch.Store(nil)
		cancel()
		<-done
		feed.Close()
	}
}

// watchChanged tells the dispatcher, if any, that a plugin's state changed. It calls the
// host: run it in its own goroutine (the host's OnChange must not call back synchronously).
func (p *pluginHost) watchChanged() {
	if disp := p.watch.Load(); disp != nil {
		disp.SetWatchers(watch.HostWatchers(p.h))
	}
}

// watchedStatuses returns the watcher plugins' interface statuses (none before the
// dispatcher runs or after it stopped): vswitchd.Options.WatchedStatuses.
func (p *pluginHost) watchedStatuses() []model.WatchedStatus {
	if disp := p.watch.Load(); disp != nil {
		return disp.Statuses()
	}
	return nil
}

// followOtherConfig asks d for a refresh of the plugins' facts whenever
// Open_vSwitch.other_config changes in c's cache (an operator's ovs-vsctl set Open_vSwitch .
// other_config:pmd-cpu-mask=…, or the daemon's own writes: the plugin host tells those apart,
// see plugins/host.Host.RefreshFacts), until ctx ends. The first value seen is the one the
// plugins were started with and asks nothing.
func followOtherConfig(ctx context.Context, c *ovsdb.Client, d *vswitchd.Daemon) {
	last := c.Facts().OtherConfig
	for {
		ch := c.Changes()
		if now := c.Facts().OtherConfig; !maps.Equal(now, last) {
			last = now
			d.KickFacts()
		}
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
	}
}

// watchQueues returns the watcher plugins' queues for the metrics (none before the dispatcher
// runs or after it stopped).
func (p *pluginHost) watchQueues() []metrics.WatcherQueue {
	disp := p.watch.Load()
	if disp == nil {
		return nil
	}
	var out []metrics.WatcherQueue
	for _, s := range disp.Stats() {
		out = append(out, metrics.WatcherQueue{Plugin: s.Plugin, Pending: s.Pending, MaxPending: s.MaxPending,
			Batches: s.Batches, Events: s.Events, Failures: s.Failures, Resyncs: s.Resyncs, Overflows: s.Overflows,
			Dropped: s.Dropped, Coalesced: s.Coalesced, Changes: s.Changes, Ignored: s.Ignored,
			Statuses: statusCounts(s.Statuses), StatusesRefused: s.StatusesRefused})
	}
	return out
}

// statusCounts turns the dispatcher's status counts into the metrics' (by level name).
func statusCounts(by map[api.StatusLevel]int) map[string]int {
	out := make(map[string]int, len(by))
	for l, n := range by {
		out[string(l)] = n
	}
	return out
}
