// Command tickplugin is the plugin of the data-path job tests, run as a real process. Its name
// is its argv[0], "tick" below. It provides the port type "tick" (one internal interface named
// like the port, and one job "<port>-ticks" of type "ticker" per port) and the job type
// "ticker" (its name + "er"): a job that counts ticks every every_ms (default 50) from its
// start. Its stats stream sends, per
// job, the counter "ticks" and the gauge "every_ms"; a job whose config says
// {"bad": "nan"|"many"|"name"} sends a NaN value, 300 metrics or a metric named "Bad-Name"
// instead, which the daemon must refuse; with {"bad": "ghost"} it also sends samples of a job
// "ghost" nobody started; {"hang": true} makes Start never answer.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

type jobConfig struct {
	EveryMS int    `json:"every_ms"`
	Bad     string `json:"bad"`
	Hang    bool   `json:"hang"` // Start never answers
}

type ticker struct {
	cfg    jobConfig
	raw    string
	cancel context.CancelFunc
	ticks  int64
}

type tickPlugin struct {
	name string
	log  *slog.Logger
	mu   sync.Mutex
	jobs map[string]*ticker
}

func (p *tickPlugin) Info(context.Context) (api.Info, error) {
	return api.Info{Name: p.name, Version: "0.0.1", Types: []api.ObjectType{
		{Name: p.name, Kind: api.ObjectKindPort},
		{Name: p.name + "er", Kind: api.ObjectKindJob},
	}}, nil
}

func (p *tickPlugin) ConfigSchema(context.Context) (api.ConfigSchema, error) {
	return api.ConfigSchema{}, nil
}
func (p *tickPlugin) Configure(context.Context, api.ConfigureRequest) error { return nil }
func (p *tickPlugin) Health(context.Context) (api.Health, error) {
	return api.Health{State: api.HealthOK}, nil
}

func (p *tickPlugin) Validate(context.Context, api.PortRequest) ([]api.Problem, error) {
	return nil, nil
}

// Attach asks for one job per port; with options:jobs=many, for 9 (more than the daemon runs
// per port).
func (p *tickPlugin) Attach(_ context.Context, req api.PortRequest) (api.Attachment, error) {
	a := api.Attachment{
		Ports:  []api.OVSPort{sdk.SinglePort(req.Name, "internal", nil)},
		State:  []byte(`{}`),
		Status: "ticking port",
		Jobs:   []api.Job{{Name: req.Name + "-ticks", Type: p.name + "er", Config: []byte(`{"every_ms": 20}`)}},
	}
	if req.Options["jobs"] == "many" {
		for i := range 8 {
			a.Jobs = append(a.Jobs, api.Job{Name: fmt.Sprintf("%s-%d", req.Name, i), Type: p.name + "er"})
		}
	}
	return a, nil
}

// Detach logs the port it detaches.
func (p *tickPlugin) Detach(_ context.Context, req api.PortRequest) error {
	p.log.Info("port detached", "port", req.Name)
	return nil
}
func (p *tickPlugin) List(context.Context) ([]api.OwnedPort, error) { return nil, nil }

// Start starts a ticker, or leaves a running one with the same config alone.
func (p *tickPlugin) Start(ctx context.Context, job api.Job) (string, error) {
	var cfg jobConfig
	if len(job.Config) > 0 {
		if err := json.Unmarshal(job.Config, &cfg); err != nil {
			return "", api.Errorf(api.InvalidArgument, "job %s: config: %v", job.Name, err)
		}
	}
	if cfg.EveryMS <= 0 {
		cfg.EveryMS = 50
	}
	if cfg.Hang {
		p.log.Info("job start hangs", "job", job.Name)
		<-ctx.Done()
		return "", ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur := p.jobs[job.Name]; cur != nil {
		if cur.raw == string(job.Config) {
			return fmt.Sprintf("ticking every %dms", cfg.EveryMS), nil
		}
		cur.cancel()
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &ticker{cfg: cfg, raw: string(job.Config), cancel: cancel}
	p.jobs[job.Name] = t
	go func() {
		tk := time.NewTicker(time.Duration(cfg.EveryMS) * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
				p.mu.Lock()
				t.ticks++
				p.mu.Unlock()
			}
		}
	}()
	p.log.Info("job started", "job", job.Name, "every_ms", cfg.EveryMS)
	return fmt.Sprintf("ticking every %dms", cfg.EveryMS), nil
}

// Stop stops a ticker; an unknown one is already stopped.
func (p *tickPlugin) Stop(_ context.Context, name string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t := p.jobs[name]; t != nil {
		t.cancel()
		delete(p.jobs, name)
		p.log.Info("job stopped", "job", name)
	}
	return nil
}

// Stats sends a sample per selected job every interval until ctx ends.
func (p *tickPlugin) Stats(ctx context.Context, req api.StatsRequest, send func(api.StatsSample) error) error {
	every := time.Duration(req.IntervalMillis) * time.Millisecond
	if every <= 0 {
		every = 200 * time.Millisecond
	}
	tk := time.NewTicker(every)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tk.C:
		}
		for _, s := range p.samples(req.Jobs) {
			if err := send(s); err != nil {
				return err
			}
		}
	}
}

func (p *tickPlugin) samples(only []string) []api.StatsSample {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now().UnixNano()
	var out []api.StatsSample
	for name, t := range p.jobs {
		if len(only) > 0 && !slices.Contains(only, name) {
			continue
		}
		s := api.StatsSample{Job: name, TimeUnixNano: now, Metrics: []api.Metric{
			{Name: "ticks", Kind: api.MetricCounter, Value: float64(t.ticks)},
			{Name: "every_ms", Kind: api.MetricGauge, Value: float64(t.cfg.EveryMS), Labels: map[string]string{"unit": "ms"}},
		}}
		switch t.cfg.Bad {
		case "nan":
			s.Metrics[1].Value = math.NaN()
		case "many":
			for i := range 300 {
				s.Metrics = append(s.Metrics, api.Metric{Name: fmt.Sprintf("m%d", i), Kind: api.MetricGauge, Value: 1})
			}
		case "name":
			s.Metrics[1].Name = "Bad-Name"
		case "ghost":
			out = append(out, api.StatsSample{Job: "ghost", TimeUnixNano: now})
		}
		out = append(out, s)
	}
	return out
}

func main() {
	sdk.Serve(&tickPlugin{name: filepath.Base(os.Args[0]), log: sdk.NewLogger(os.Stderr, slog.LevelInfo), jobs: map[string]*ticker{}})
}
