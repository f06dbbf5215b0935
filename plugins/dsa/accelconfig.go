package main

import (
	"fmt"
	"io"
	"os"

	"github.com/ovsplane/ovsplane/dsa"
	"github.com/ovsplane/ovsplane/dsa/accelconfig"
	"github.com/ovsplane/ovsplane/plugins/dsa/internal/dsaplugin"
)

// runExportAccelConfig prints the host's DSA configuration (root or simulate) as an
// accel-config JSON file (accelconfig.FromInventory), which `accel-config load-config` loads and
// --import-accel-config reads back. It changes nothing and returns the exit status: 1 when the
// host cannot be read.
func runExportAccelConfig(root, simulate string, stdout, stderr io.Writer) int {
	ctx, done := cliContext()
	defer done()
	h, _, err := openHost(root, simulate, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "ovsplane-plugin-dsa: %v\n", err)
		return 1
	}
	inv, err := h.Discover(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "ovsplane-plugin-dsa: discover the DSA devices: %v\n", err)
		return 1
	}
	out, err := accelconfig.Marshal(accelconfig.FromInventory(inv))
	if err == nil {
		_, err = stdout.Write(out)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ovsplane-plugin-dsa: export: %v\n", err)
		return 1
	}
	return 0
}

// readAccelConfig reads an accel-config file of at most accelconfig.MaxBytes.
func readAccelConfig(path string) (accelconfig.Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return accelconfig.Config{}, fmt.Errorf("--import-accel-config: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, accelconfig.MaxBytes+1))
	if err != nil {
		return accelconfig.Config{}, fmt.Errorf("--import-accel-config %s: %w", path, err)
	}
	if len(b) > accelconfig.MaxBytes {
		return accelconfig.Config{}, fmt.Errorf("--import-accel-config %s: over %d bytes; not an accel-config file?", path, accelconfig.MaxBytes)
	}
	c, err := accelconfig.Parse(b)
	if err != nil {
		return accelconfig.Config{}, fmt.Errorf("--import-accel-config %s: %w", path, err)
	}
	return c, nil
}

// runImportPlan prints the plan that adopts the accel-config file o.Import on the host
// (accelconfig.ToRequest, then Plan): a host already set up as the file says plans nothing.
// The OVS user is the owner of ovs-vswitchd's pidfile in o.OVSRunDir, if any; the name prefix
// DPDK accepts comes from o.DPDKExtra's --file-prefix. Exit status as runPlan's.
func runImportPlan(o planOptions, stdout, stderr io.Writer) int {
	fail := func(rc int, err error) int {
		fmt.Fprintf(stderr, "ovsplane-plugin-dsa: %v\n", err)
		return rc
	}
	c, err := readAccelConfig(o.Import)
	if err != nil {
		return fail(2, err)
	}
	req, err := accelconfig.ToRequest(c)
	if err != nil {
		return fail(2, fmt.Errorf("--import-accel-config %s: %w", o.Import, err))
	}
	owner, err := dsaplugin.OVSOwner(dsaplugin.Config{}, o.OVSRunDir)
	if err != nil {
		return fail(2, err)
	}
	req.OVSUser = owner
	prefix, err := dsa.FilePrefix(o.DPDKExtra)
	if err != nil {
		return fail(2, fmt.Errorf("--dpdk-extra: %w", err))
	}
	if err := req.Normalize(prefix); err != nil {
		return fail(2, fmt.Errorf("--import-accel-config %s: %w", o.Import, err))
	}
	ctx, done := cliContext()
	defer done()
	h, m, err := openHost(o.Root, o.Simulate, stderr)
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
