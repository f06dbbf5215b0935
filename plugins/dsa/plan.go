package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ovsplane/ovsplane/dsa"
	"github.com/ovsplane/ovsplane/plugins/dsa/internal/dsaplugin"
)

// planOptions are the command line's --plan settings: the configuration (a file, or inline
// JSON when it starts with '{') and the machine, which --root or --simulate set over the
// configuration's own root and simulate.
type planOptions struct {
	Root, Simulate, Config string
	// OVSRunDir is where ovs-vswitchd's pidfile is: its owner is the OVS user when the
	// configuration names none (ovs.user), as in the plugin.
	OVSRunDir string
	// DPDKExtra is other_config:dpdk-extra, for its --file-prefix (work queue name prefix).
	DPDKExtra string
	// Import is an accel-config file to adopt instead of Config (--import-accel-config).
	Import string
	JSON   bool
}

// readConfig returns the configuration text o names, at most dsaplugin.MaxConfigBytes.
func readConfig(arg string) ([]byte, error) {
	if strings.HasPrefix(strings.TrimSpace(arg), "{") {
		return []byte(arg), nil
	}
	f, err := os.Open(arg)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, dsaplugin.MaxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("--config %s: %w", arg, err)
	}
	return b, nil // parseConfig refuses more than MaxConfigBytes
}

// runPlan prints what the plugin would write for o's configuration, without writing it, and
// returns the exit status: 2 for an unreadable or invalid configuration, 1 when the host cannot
// be read or the library refuses the plan. The OVS user is the configuration's ovs.user, else
// the owner of ovs-vswitchd's pidfile in o.OVSRunDir, else none (then no chown/chmod steps: the
// device nodes keep the kernel's owner and mode); DPDK's --file-prefix is read from
// o.DPDKExtra (DPDK's default when it has none).
func runPlan(o planOptions, stdout, stderr io.Writer) int {
	fail := func(rc int, err error) int {
		fmt.Fprintf(stderr, "ovsplane-plugin-dsa: %v\n", err)
		return rc
	}
	raw, err := readConfig(o.Config)
	if err != nil {
		return fail(2, err)
	}
	cfg, err := dsaplugin.ParseConfig(raw)
	if err != nil {
		return fail(2, fmt.Errorf("invalid configuration: %w", err))
	}
	root, simulate := cfg.Root, cfg.Simulate
	if o.Root != "" || o.Simulate != "" {
		root, simulate = o.Root, o.Simulate
	}
	if simulate != "" {
		root = ""
	}
	owner, err := dsaplugin.OVSOwner(cfg, o.OVSRunDir)
	if err != nil {
		return fail(2, fmt.Errorf("invalid configuration: ovs.user: %w", err))
	}
	prefix, err := dsa.FilePrefix(o.DPDKExtra)
	if err != nil {
		return fail(2, fmt.Errorf("--dpdk-extra: %w", err))
	}
	req := cfg.Request(owner)
	if err := req.Normalize(prefix); err != nil {
		return fail(2, fmt.Errorf("invalid configuration: %w", err))
	}
	ctx, done := cliContext()
	defer done()
	h, m, err := openHost(root, simulate, stderr)
	if err != nil {
		return fail(1, err)
	}
	plan, err := h.Plan(ctx, req)
	if err != nil {
		return fail(1, fmt.Errorf("plan: %w", err))
	}
	if err := printPlan(plan, m, o.JSON, stdout); err != nil {
		return fail(1, err)
	}
	return 0
}

// printPlan writes plan to stdout: JSON when asJSON, else planText after a line saying when
// the machine m is simulated.
func printPlan(plan *dsa.Plan, m *dsaplugin.Machine, asJSON bool, stdout io.Writer) error {
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(plan)
	}
	if m.Simulated != "" {
		fmt.Fprintf(stdout, "SIMULATED host: the simulated idxd kernel in %s (nothing is written)\n", m.Simulated)
	}
	_, err := io.WriteString(stdout, planText(plan))
	return err
}

// planText renders a plan for people: per device its action, reason and writes in order; the
// warnings; the dpdk-extra arguments and the dmadevs DPDK would see.
func planText(p *dsa.Plan) string {
	var b strings.Builder
	changes := 0
	for _, d := range p.Devices {
		fmt.Fprintf(&b, "%s: %s — %s\n", d.Device, d.Action, d.Reason)
		for _, s := range d.Steps {
			changes++
			switch s.Op {
			case dsa.OpChown:
				fmt.Fprintf(&b, "  chown %s to %s", s.Path, s.Value)
			case dsa.OpChmod:
				fmt.Fprintf(&b, "  chmod %s to %s", s.Path, s.Value)
			default:
				fmt.Fprintf(&b, "  write %q to %s", s.Value, s.Path)
			}
			if s.Reason != "" {
				fmt.Fprintf(&b, "  (%s)", s.Reason)
			}
			b.WriteString("\n")
		}
	}
	for _, w := range p.Warnings {
		fmt.Fprintf(&b, "warning %s: %s: %s\n", w.Code, w.Object, w.Message)
	}
	if len(p.DPDKExtra) > 0 {
		fmt.Fprintf(&b, "dpdk-extra: %s\n", strings.Join(p.DPDKExtra, " "))
	}
	var wqs []string
	for _, w := range p.WQs {
		wqs = append(wqs, fmt.Sprintf("%s (%s, NUMA %d)", w.Name, w.Device, w.NUMA))
	}
	fmt.Fprintf(&b, "dmadevs DPDK would see: %s\n", orDash(strings.Join(wqs, ", ")))
	if changes == 0 {
		b.WriteString("nothing to write: the host already matches\n")
	} else {
		fmt.Fprintf(&b, "%d changes; nothing was written (dry run)\n", changes)
	}
	return b.String()
}
