package daemoncmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ovsplane/ovsplane/internal/desired"
	"github.com/ovsplane/ovsplane/model"
)

// defaultJobs bounds the ApplyPort calls in flight: enough for the daemon's batcher to fill
// big transactions, few enough not to queue thousands of streams.
const defaultJobs = 64

// applyKeys are the top-level keys an apply file may have.
var applyKeys = []string{"bridges"}

// failure is one object that was not applied, or that ovs-vswitchd refused.
type failure struct{ object, msg string }

// apply reads the file, validates it as the daemon's config loader does, applies its bridges
// one by one, then their ports concurrently, and prints a summary; errNotReady when any
// object failed.
func (r *runner) apply(ctx context.Context) error {
	if len(r.o.args) > 0 {
		return &usageError{fmt.Sprintf("unexpected argument %q (the objects come from -f FILE)", r.o.args[0])}
	}
	bridges, err := r.readFile()
	if err != nil {
		return err
	}
	start := time.Now()
	var fails []failure
	type job struct {
		bridge string
		port   model.Port
	}
	var jobs []job
	for _, b := range bridges {
		ports := b.Ports
		b.Ports = nil
		if err := r.c.applyBridge(ctx, b); err != nil {
			if ctx.Err() != nil || isUnreachable(err) {
				return err
			}
			fails = append(fails, failure{"bridge/" + b.Name, describe(err, r.o.daemon)})
			for _, p := range ports {
				fails = append(fails, failure{"port/" + p.Name, fmt.Sprintf("not applied: its bridge %s failed", b.Name)})
			}
			continue
		}
		for _, p := range ports {
			jobs = append(jobs, job{b.Name, p})
		}
	}

	prog := newProgress(r.env.Stderr, r.env.StderrTerminal, len(jobs))
	var (
		mu      sync.Mutex
		ready   int
		pending int
		wg      sync.WaitGroup
		sem     = make(chan struct{}, r.o.jobs)
		fatal   error
	)
	for _, j := range jobs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			info, err := r.c.applyPort(ctx, j.bridge, j.port)
			mu.Lock()
			defer mu.Unlock()
			defer prog.add(1)
			switch {
			case err != nil && (ctx.Err() != nil || isUnreachable(err)):
				if fatal == nil {
					fatal = err
				}
			case err != nil:
				fails = append(fails, failure{"port/" + j.port.Name, describe(err, r.o.daemon)})
			default:
				var state string
				if info.Status != nil {
					state = info.Status.State
				}
				switch state {
				case "STATE_READY":
					ready++
				case "STATE_ERROR":
					fails = append(fails, failure{"port/" + j.port.Name, portError(info)})
				default:
					pending++
				}
			}
		})
	}
	wg.Wait()
	prog.done()
	if fatal != nil {
		return fatal
	}
	sort.SliceStable(fails, func(i, k int) bool { return fails[i].object < fails[k].object })
	fmt.Fprintf(r.env.Stdout, "applied %d bridge(s) and %d port(s) in %s: %d ready, %d pending, %d failed\n",
		len(bridges), len(jobs), time.Since(start).Round(time.Millisecond), ready, pending, len(fails))
	for _, f := range fails {
		fmt.Fprintf(r.env.Stderr, "%s: apply: %s: %s\n", r.o.progName, f.object, oneLine(f.msg))
	}
	if len(fails) > 0 {
		return errNotReady
	}
	return nil
}

func isUnreachable(err error) bool {
	return errors.Is(err, errUnreachable)
}

// portError is the message of a port in the error state: its own, else its interfaces'.
func portError(p *wirePortInfo) string {
	var msgs []string
	if p.Status != nil && p.Status.Error != "" {
		msgs = append(msgs, p.Status.Error)
	}
	for _, in := range p.Interfaces {
		if in.State == "STATE_ERROR" && !strings.Contains(strings.Join(msgs, "\n"), in.Error) {
			msgs = append(msgs, "interface "+in.Name+": "+in.Error)
		}
	}
	if len(msgs) == 0 {
		return "in the error state"
	}
	return strings.Join(msgs, "; ")
}

// readFile reads and validates the apply file: only the desired-state keys, then the daemon's
// own rules for them (desired.Load, which config.Load applies to the same keys), so every
// problem is reported with its key path and the loader's wording.
func (r *runner) readFile() ([]model.Bridge, error) {
	if r.o.file == "" {
		return nil, &usageError{"-f FILE is required (a YAML file with bridges:, as in ovsplaned's config)"}
	}
	var (
		data []byte
		err  error
		name = r.o.file
	)
	if name == "-" {
		name = "standard input"
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, err
	}
	var top map[string]yaml.Node
	if err := yaml.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("%s: parsing YAML: %w", name, err)
	}
	var extra []string
	for k := range top {
		if k != applyKeys[0] {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return nil, fmt.Errorf("%s: %s: not part of what apply sends (only bridges: with their ports); daemon settings and other_config belong in ovsplaned's config file",
			name, strings.Join(extra, ", "))
	}
	st, err := desired.Load(name, data)
	if err != nil {
		return nil, err
	}
	if len(st.Bridges) == 0 {
		return nil, fmt.Errorf("%s: no bridges to apply", name)
	}
	return st.Bridges, nil
}
