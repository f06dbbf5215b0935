// Command watchrec is the watcher plugin the watch tests run as a real process (served by
// plugins/sdk). Its name is its argv[0] (the host passes the configured name); its filter is
// the JSON api.WatchFilter in $WATCHREC_FILTER; its config says how it answers:
//
//	{"block": true}                 every OnPortEvents waits until its context ends (a plugin
//	                                that never reads)
//	{"fail": N}                     the first N batches of this process fail
//	{"changes": [{"prefix": "ch", "set": {"k": "v"}, "remove": ["k2"]}]}
//	                                asks, for every live event of an interface whose name starts
//	                                with prefix, to set and remove those other_config keys
//	{"statuses": [{"prefix": "vhu", "level": "warning", "summary": "CPU copy (mask {pmd-cpu-mask})",
//	  "details": {"k": "v"}}]}
//	                                sets, for every live event of an interface whose name starts
//	                                with prefix, that status; {KEY} in the summary is replaced by
//	                                other_config:KEY of the facts of its last Configure
//	{"contribute": {"other_config": {"vhost-async-support": "true"}, "dpdk_extra": ["--x"],
//	  "count_key": "watchrec-configures"}}
//	                                its global config contribution; count_key, when set, is a key
//	                                whose value is the number of Configure calls of the process (a
//	                                contribution that changes with every Configure)
//
// It appends every batch it receives, as one JSON line (its pid, the time it arrived, the
// batch), to ./events.log (its working directory is its data dir) before answering, and every
// Configure it accepts, as one JSON line (its pid, the facts), to ./configured.log.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

type change struct {
	Prefix string            `json:"prefix"`
	Set    map[string]string `json:"set"`
	Remove []string          `json:"remove"`
}

type status struct {
	Prefix  string            `json:"prefix"`
	Level   api.StatusLevel   `json:"level"`
	Summary string            `json:"summary"`
	Details map[string]string `json:"details"`
}

type contribution struct {
	OtherConfig map[string]string `json:"other_config"`
	DPDKExtra   []string          `json:"dpdk_extra"`
	CountKey    string            `json:"count_key"`
}

type config struct {
	Block      bool         `json:"block"`
	Fail       int          `json:"fail"`
	Changes    []change     `json:"changes"`
	Statuses   []status     `json:"statuses"`
	Contribute contribution `json:"contribute"`
}

// Configured is one line of configured.log.
type Configured struct {
	PID   int           `json:"pid"`
	Facts api.HostFacts `json:"facts"`
}

// Record is one line of events.log.
type Record struct {
	PID    int                `json:"pid"`
	At     int64              `json:"at"` // unix nanoseconds
	Failed bool               `json:"failed"`
	Batch  api.PortEventBatch `json:"batch"`
}

type watchrec struct {
	name       string
	filter     api.WatchFilter
	mu         sync.Mutex
	cfg        config
	facts      api.HostFacts
	configures int
	failed     int
	out        *os.File
}

func (p *watchrec) Info(context.Context) (api.Info, error) {
	return api.Info{Name: p.name, Version: "1.0.0", Watch: p.filter, Description: "records what it watches"}, nil
}

func (p *watchrec) ConfigSchema(context.Context) (api.ConfigSchema, error) {
	return api.ConfigSchema{}, nil
}

func (p *watchrec) Configure(_ context.Context, req api.ConfigureRequest) error {
	var c config
	if err := json.Unmarshal(req.Config, &c); err != nil {
		return api.Errorf(api.InvalidArgument, "config: %v", err)
	}
	line, err := json.Marshal(Configured{PID: os.Getpid(), Facts: req.Facts})
	if err != nil {
		return api.Errorf(api.Internal, "encoding the facts: %v", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := os.OpenFile("configured.log", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return api.Errorf(api.Internal, "configured.log: %v", err)
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		return api.Errorf(api.Internal, "configured.log: %v", err)
	}
	p.cfg, p.facts = c, req.Facts
	p.configures++
	return nil
}

// Contribute returns the configured contribution (see the package comment).
func (p *watchrec) Contribute(context.Context) (api.GlobalConfig, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.cfg.Contribute
	g := api.GlobalConfig{OtherConfig: map[string]string{}, DPDKExtra: c.DPDKExtra}
	for k, v := range c.OtherConfig {
		g.OtherConfig[k] = v
	}
	if c.CountKey != "" {
		g.OtherConfig[c.CountKey] = strconv.Itoa(p.configures)
	}
	return g, nil
}

func (p *watchrec) Health(context.Context) (api.Health, error) {
	return api.Health{State: api.HealthOK}, nil
}

func (p *watchrec) OnPortEvents(ctx context.Context, b api.PortEventBatch) ([]api.InterfaceChange, error) {
	at := time.Now().UnixNano()
	p.mu.Lock()
	cfg, facts := p.cfg, p.facts
	fail := p.failed < cfg.Fail
	if fail {
		p.failed++
	}
	p.mu.Unlock()
	if cfg.Block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	line, err := json.Marshal(Record{PID: os.Getpid(), At: at, Failed: fail, Batch: b})
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	_, err = p.out.Write(append(line, '\n'))
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if fail {
		return nil, errors.New("failing on purpose")
	}
	var out []api.InterfaceChange
	for _, ev := range b.Events {
		if ev.Kind == api.EventRemoved {
			continue
		}
		for _, c := range cfg.Changes {
			if strings.HasPrefix(ev.Interface, c.Prefix) {
				out = append(out, api.InterfaceChange{Interface: ev.Interface, Set: c.Set, Remove: c.Remove})
			}
		}
		for _, s := range cfg.Statuses {
			if strings.HasPrefix(ev.Interface, s.Prefix) {
				summary := s.Summary
				for k, v := range facts.OtherConfig {
					summary = strings.ReplaceAll(summary, "{"+k+"}", v)
				}
				out = append(out, api.InterfaceChange{Interface: ev.Interface,
					Status: &api.InterfaceStatus{Level: s.Level, Summary: summary, Details: s.Details}})
			}
		}
	}
	return out, nil
}

func main() {
	log := sdk.NewLogger(os.Stderr, slog.LevelInfo)
	p := &watchrec{name: filepath.Base(os.Args[0])}
	if f := os.Getenv("WATCHREC_FILTER"); f != "" {
		if err := json.Unmarshal([]byte(f), &p.filter); err != nil {
			log.Error("WATCHREC_FILTER", "error", err)
			os.Exit(1)
		}
	}
	out, err := os.OpenFile("events.log", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		log.Error("events.log", "error", err)
		os.Exit(1)
	}
	p.out = out
	sdk.Serve(p)
}
