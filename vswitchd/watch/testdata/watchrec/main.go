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
//
// It appends every batch it receives, as one JSON line (its pid, the time it arrived, the
// batch), to ./events.log (its working directory is its data dir) before answering.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
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

type config struct {
	Block   bool     `json:"block"`
	Fail    int      `json:"fail"`
	Changes []change `json:"changes"`
}

// Record is one line of events.log.
type Record struct {
	PID    int                `json:"pid"`
	At     int64              `json:"at"` // unix nanoseconds
	Failed bool               `json:"failed"`
	Batch  api.PortEventBatch `json:"batch"`
}

type watchrec struct {
	name   string
	filter api.WatchFilter
	mu     sync.Mutex
	cfg    config
	failed int
	out    *os.File
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
	p.mu.Lock()
	p.cfg = c
	p.mu.Unlock()
	return nil
}

func (p *watchrec) Health(context.Context) (api.Health, error) {
	return api.Health{State: api.HealthOK}, nil
}

func (p *watchrec) OnPortEvents(ctx context.Context, b api.PortEventBatch) ([]api.InterfaceChange, error) {
	at := time.Now().UnixNano()
	p.mu.Lock()
	cfg := p.cfg
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
