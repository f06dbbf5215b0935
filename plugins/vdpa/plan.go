package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/ovsplane/ovsplane/vdpa"
)

// planOptions are the command line's --plan settings: the machine to read (as for --detect),
// the port's name and its options as key=value arguments (the keys of a vdpa interface's
// options: pf, vf, mac, mode, …).
type planOptions struct {
	Root, Simulate, Name string
	JSON                 bool
	Options              map[string]string
}

// parseKeyValues turns key=value arguments into options; a missing '=', an empty key or a key
// given twice is a usage error.
func parseKeyValues(args []string) (map[string]string, error) {
	opts := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		switch {
		case !ok || k == "":
			return nil, fmt.Errorf("argument %q: want key=value (an option of a vdpa interface, e.g. pf=0000:65:00.0)", a)
		case opts[k] != "":
			return nil, fmt.Errorf("option %q given twice", k)
		}
		opts[k] = v
	}
	return opts, nil
}

// runPlan prints what attaching a port with o's options would do on the machine o names, in
// order, with the reasons, the OVS shape and the guest endpoint — the library's dry run. It
// changes nothing; Ctrl-C or 30 seconds end it. Run by hand it knows nothing of OVS (the daemon
// hands the plugin those facts), so DPDK and hw-offload are not checked and other interfaces
// using the VF are not seen; the plan says so in a note.
func runPlan(o planOptions, stdout, stderr io.Writer) error {
	req, err := vdpa.RequestFromOptions(o.Name, o.Options)
	if err != nil {
		return fmt.Errorf("options: %w", err)
	}
	ctx, done, err := openCLIHost(o.Root, o.Simulate, stderr)
	if err != nil {
		return err
	}
	defer done()
	h, k := ctx.host, ctx.kernel
	plan, err := h.Plan(ctx, req, vdpa.OVSState{}, nil)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	return printResult(stdout, o.JSON, k, plan, plan.Text)
}
