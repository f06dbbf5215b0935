// Command weightsplugin is a flow-programming plugin for the end-to-end test of select groups
// whose weights change at run time (test/integration, TestSelectGroupWeightsThroughDaemon).
// On its configured bridge it programs one select group (dp_hash) with a bucket per
// configured interface, each outputting to that interface's ofport, and one flow sending the
// UDP traffic coming in from the source interface to the group. The weights are read, on every
// call of Flows, from the file "weights" in its data dir: one line of as many decimal weights
// (0..65535) as buckets, separated by spaces. It asks the daemon to call Flows again every
// refresh_millis, so a new weights file shows on the bridge within about that long plus the
// daemon's debounce.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// Bounds of the configuration and of the weights file.
const (
	maxBuckets     = 16
	maxWeightsFile = 1 << 10
	maxRefresh     = 60_000
)

type config struct {
	Bridge        string   `json:"bridge"`
	Source        string   `json:"source"`  // interface whose UDP traffic goes to the group
	Buckets       []string `json:"buckets"` // one bucket per interface, in order
	RefreshMillis uint32   `json:"refresh_millis"`
}

func check(c config) []api.Problem {
	var p []api.Problem
	if c.Bridge == "" || c.Source == "" {
		p = append(p, api.Problem{Field: "config.bridge", Message: "bridge and source are required"})
	}
	if len(c.Buckets) == 0 || len(c.Buckets) > maxBuckets {
		p = append(p, api.Problem{Field: "config.buckets", Message: fmt.Sprintf("give 1 to %d interface names, got %d", maxBuckets, len(c.Buckets))})
	}
	if c.RefreshMillis == 0 || c.RefreshMillis > maxRefresh {
		p = append(p, api.Problem{Field: "config.refresh_millis", Message: fmt.Sprintf("must be 1..%d", maxRefresh)})
	}
	return p
}

type plugin struct{ sdk.BaseWithConfig[config] }

func (p *plugin) Info(context.Context) (api.Info, error) {
	return api.Info{Name: "weights", Version: "0.0.1", Description: "a select group whose weights follow a file"}, nil
}

// Flows returns the group and its flow on the configured bridge, nothing elsewhere. Until the
// bridge reports an ofport for every configured interface it returns no flows and asks to be
// called again; a missing or bad weights file is an error (the daemon keeps what it
// programmed before).
func (p *plugin) Flows(ctx context.Context, bridge api.BridgeFacts) (api.FlowSet, error) {
	req, ok := p.Configured()
	cfg := p.Config()
	if !ok || bridge.Name != cfg.Bridge {
		return api.FlowSet{}, ctx.Err()
	}
	again := api.FlowSet{RefreshMillis: cfg.RefreshMillis}
	ofports := map[string]int64{}
	for _, bp := range bridge.Ports {
		ofports[bp.Interface] = bp.Ofport
	}
	for _, name := range append([]string{cfg.Source}, cfg.Buckets...) {
		if ofports[name] <= 0 {
			return again, ctx.Err()
		}
	}
	weights, err := readWeights(filepath.Join(req.Facts.DataDir, "weights"), len(cfg.Buckets))
	if err != nil {
		return api.FlowSet{}, api.Errorf(api.FailedPrecondition, "%v", err)
	}
	g := api.Group{ID: req.Groups.First, Type: "select", SelectionMethod: "dp_hash"}
	for i, name := range cfg.Buckets {
		g.Buckets = append(g.Buckets, api.Bucket{Actions: "output:" + strconv.FormatInt(ofports[name], 10), Weight: weights[i]})
	}
	again.Groups = []api.Group{g}
	again.Flows = []api.Flow{{Cookie: req.Cookies.Value | 1, Priority: 1000,
		Match:   "in_port=" + strconv.FormatInt(ofports[cfg.Source], 10) + ",udp",
		Actions: "group:" + strconv.FormatUint(uint64(g.ID), 10)}}
	return again, ctx.Err()
}

// readWeights reads n weights from the file at path (at most maxWeightsFile bytes).
func readWeights(path string, n int) ([]uint16, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("weights: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxWeightsFile+1))
	if err != nil {
		return nil, fmt.Errorf("weights: %s: %w", path, err)
	}
	if len(data) > maxWeightsFile {
		return nil, fmt.Errorf("weights: %s is over %d bytes; write one line of %d weights", path, maxWeightsFile, n)
	}
	fields := strings.Fields(string(data))
	if len(fields) != n {
		return nil, fmt.Errorf("weights: %s has %d weights, want %d (one per bucket)", path, len(fields), n)
	}
	out := make([]uint16, n)
	for i, s := range fields {
		w, err := strconv.ParseUint(s, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("weights: %s: weight %d: %w", path, i+1, errors.Unwrap(err))
		}
		out[i] = uint16(w)
	}
	return out, nil
}

func main() {
	p := &plugin{}
	p.Defaults = config{RefreshMillis: 100}
	p.Schema = api.ConfigSchema{Doc: "bridge, source and buckets name the bridge and its interfaces; refresh_millis is how often Flows re-reads the weights file"}
	p.Check = check
	sdk.Serve(p)
}
