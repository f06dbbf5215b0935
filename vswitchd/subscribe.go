package vswitchd

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/ovsplane/ovsplane/vswitchd/reconcile"
)

// subscriberBuffer is how many change sets a subscriber may lag behind before it is dropped
// (its channel closed), so a stuck watcher never slows the daemon down.
const subscriberBuffer = 256

type subscriber struct {
	ch   chan []reconcile.Status
	once sync.Once
}

func (s *subscriber) end() { s.once.Do(func() { close(s.ch) }) }

// Subscribe returns the current statuses and a channel of the changes after them (removed
// objects have an empty State). The channel is closed when ctx ends, when the Daemon closes,
// or when the subscriber fell subscriberBuffer change sets behind; call Subscribe again then.
func (d *Daemon) Subscribe(ctx context.Context) ([]reconcile.Status, <-chan []reconcile.Status) {
	s := &subscriber{ch: make(chan []reconcile.Status, subscriberBuffer)}
	d.mu.Lock()
	d.subs[s] = struct{}{}
	d.mu.Unlock()
	snapshot := d.Status()
	go func() {
		<-ctx.Done()
		d.mu.Lock()
		delete(d.subs, s)
		d.mu.Unlock()
		s.end()
	}()
	return snapshot, s.ch
}

// publish hands changed statuses to every subscriber and the Observer.
func (d *Daemon) publish(changed []reconcile.Status) {
	if d.opts.Plugins != nil {
		over := make([]reconcile.Status, len(changed))
		infos := d.pluginInfos()
		for i, s := range changed {
			over[i] = d.pluginStatusIn(s, infos)
		}
		changed = over
	}
	d.mu.Lock()
	for s := range d.subs {
		select {
		case s.ch <- changed:
		default:
			delete(d.subs, s)
			s.end()
			d.log.Warn("status subscriber fell behind; its stream is closed (it may subscribe again)")
		}
	}
	d.mu.Unlock()
	if d.opts.Observer != nil {
		d.opts.Observer.Statuses(d.rec.Counts())
	}
}

func unmarshalSpec(s string, v any) error { return json.Unmarshal([]byte(s), v) }
