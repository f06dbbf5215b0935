// Package datapath is docs/plugins.md's data-path job: job type "ticker" counts ticks in the
// background and streams the count.
package datapath

import (
	"context"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// Ticker is the plugin; New makes one.
type Ticker struct {
	sdk.Base
	mu   sync.Mutex
	jobs map[string]*job
}

type job struct {
	stop  context.CancelFunc
	ticks int64 // guarded by Ticker.mu
}

func New() *Ticker { return &Ticker{jobs: map[string]*job{}} }

func (*Ticker) Info(context.Context) (api.Info, error) {
	return api.Info{Name: "ticker", Version: "0.1.0",
		Types: []api.ObjectType{{Name: "ticker", Kind: api.ObjectKindJob, Doc: "counts ticks"}}}, nil
}

// Start starts a job unless it runs: jobs outlive the call, so not its ctx.
func (p *Ticker) Start(_ context.Context, j api.Job) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.jobs[j.Name] != nil {
		return "running", nil
	}
	ctx, stop := context.WithCancel(context.Background())
	jb := &job{stop: stop}
	p.jobs[j.Name] = jb
	go func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			p.mu.Lock()
			jb.ticks++
			p.mu.Unlock()
		}
	}()
	return "started", nil
}

// Stop stops a job; an unknown job is already stopped.
func (p *Ticker) Stop(_ context.Context, name string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if jb := p.jobs[name]; jb != nil {
		jb.stop()
		delete(p.jobs, name)
	}
	return nil
}

// Stats sends a sample of every job per interval until ctx ends or send fails.
func (p *Ticker) Stats(ctx context.Context, req api.StatsRequest, send func(api.StatsSample) error) error {
	every := time.Duration(max(req.IntervalMillis, 10)) * time.Millisecond
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		p.mu.Lock()
		var samples []api.StatsSample
		for name, jb := range p.jobs {
			samples = append(samples, api.StatsSample{Job: name, TimeUnixNano: time.Now().UnixNano(),
				Metrics: []api.Metric{{Name: "ticks", Kind: api.MetricCounter, Value: float64(jb.ticks)}}})
		}
		p.mu.Unlock()
		for _, s := range samples {
			if err := send(s); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
