package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/ovsplane/ovsplane/examples/veth-reference/internal/vethplugin"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// barrierKey is the configuration key of the barrier; the rest is vethplugin's.
const barrierKey = "barrier"

// barrier holds the first Attach of each port of Hold inside the plugin (see the command's doc).
type barrier struct {
	// Dir receives <port>.inside (the pid, written when a call is held) and <port>.left (why
	// a held call ended, written only when it ended without the process dying).
	Dir string `json:"dir"`
	// Hold names the ports whose first Attach is held.
	Hold []string `json:"hold"`
}

// plugin is vethplugin.Plugin (every capability, promoted) with Configure and Attach wrapped.
type plugin struct {
	*vethplugin.Plugin
	log *slog.Logger

	mu      sync.Mutex
	barrier *barrier // nil: no barrier configured
}

// Configure takes the barrier out of the configuration and hands the rest to vethplugin; the
// barrier applies only when vethplugin accepted the rest.
func (p *plugin) Configure(ctx context.Context, req api.ConfigureRequest) error {
	b, rest, err := splitConfig(req.Config)
	if err != nil {
		return err
	}
	req.Config = rest
	if err := p.Plugin.Configure(ctx, req); err != nil {
		return err
	}
	p.mu.Lock()
	p.barrier = b
	p.mu.Unlock()
	return nil
}

// splitConfig returns the barrier of a configuration (nil without one) and the configuration
// without it.
func splitConfig(raw []byte) (*barrier, []byte, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, raw, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, raw, nil // not an object: vethplugin says what is wrong with it
	}
	b, ok := m[barrierKey]
	if !ok {
		return nil, raw, nil
	}
	delete(m, barrierKey)
	var out barrier
	if err := json.Unmarshal(b, &out); err != nil || out.Dir == "" {
		return nil, nil, api.Errorf(api.InvalidArgument, "config.barrier: want {dir: DIR, hold: [PORT...]}: %v", err)
	}
	rest, err := json.Marshal(m)
	if err != nil {
		return nil, nil, api.Errorf(api.Internal, "config without the barrier: %v", err)
	}
	return &out, rest, nil
}

// Attach is vethplugin's Attach followed, for a port of the barrier, by the hold.
func (p *plugin) Attach(ctx context.Context, req api.PortRequest) (api.Attachment, error) {
	a, err := p.Plugin.Attach(ctx, req)
	if err != nil {
		return a, err
	}
	p.mu.Lock()
	b := p.barrier
	p.mu.Unlock()
	if err := b.hold(ctx, p.log, req.Name); err != nil {
		return api.Attachment{}, err
	}
	return a, nil
}

// hold blocks the first call for a port of b.Hold until ctx ends, after recording it in
// <port>.inside; it returns nil at once for any other port, any later call, or a nil b.
func (b *barrier) hold(ctx context.Context, log *slog.Logger, port string) error {
	if b == nil || !slices.Contains(b.Hold, port) {
		return nil
	}
	inside := filepath.Join(b.Dir, port+".inside")
	// Written aside and linked into place, so a reader never sees a partial file and only
	// the first call of the port gets to hold.
	tmp, err := os.CreateTemp(b.Dir, "."+port+".*")
	if err != nil {
		return api.Errorf(api.Internal, "barrier: %v", err)
	}
	_, werr := tmp.WriteString(strconv.Itoa(os.Getpid()) + "\n")
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Link(tmp.Name(), inside)
	}
	_ = os.Remove(tmp.Name())
	switch {
	case errors.Is(werr, fs.ErrExist):
		return nil // held once already: a replay or a retry passes
	case werr != nil:
		return api.Errorf(api.Internal, "barrier: %s: %v", inside, werr)
	}
	log.Info("holding Attach inside the plugin until the call ends", "port", port, "record", inside)
	<-ctx.Done()
	why := fmt.Sprintf("the call ended before the process: %v\n", ctx.Err())
	if err := os.WriteFile(filepath.Join(b.Dir, port+".left"), []byte(why), 0o644); err != nil {
		log.Error("barrier: cannot record a held call's end", "port", port, "error", err)
	}
	return ctx.Err()
}
