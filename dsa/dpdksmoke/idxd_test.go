package dpdksmoke

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/dsa/simidxd"
)

// fixPackages is what a machine needs for this test (scripts/lab-setup.sh installs it).
const fixPackages = "apt-get install -y gcc pkg-config libdpdk-dev librte-dma-idxd23"

// Bounds of one idxdscan run.
const (
	runTimeout = 60 * time.Second
	maxOutput  = 1 << 20
	maxRecords = 256
)

// simWQ is one work queue the smoke configures on the simulated dsa0.
type simWQ struct {
	dev, typ, name, driver string
}

// simWQs are the smoke's work queues, all in group0.0 with engine0.0: two user queues bound to
// the user driver (so the simulated kernel creates their /dev/dsa nodes) and one kernel queue
// bound to dmaengine.
func simWQs() []simWQ {
	return []simWQ{
		{"wq0.0", "user", "dpdk_wq0.0", "user"},        // DPDK's own prefix: probed
		{"wq0.1", "user", "ovs_wq0.1", "user"},         // probed only with --file-prefix ovs
		{"wq0.2", "kernel", "dpdk_wq0.2", "dmaengine"}, // kernel type: never probed
	}
}

// layout writes a simulated 4th-gen Xeon DSA host (simidxd variant spr) under root and
// configures it through the simulated kernel with the raw sysfs sequence the dsa library and
// DPDK's dpdk_idxd_cfg.py use: engine to group, each WQ's attributes (max_batch_size and
// max_transfer_size included), idxd/bind dsa0, then each WQ bound to its driver. It returns
// DSA_SYSFS_PATH and DSA_DEV_PATH for the tree.
//
// The kernel creates no /dev/dsa node for a kernel-type queue; layout adds one (a 4 KiB regular
// file like the simulator's user nodes) so that only its type can keep DPDK from probing it.
func layout(t *testing.T, root string) (sysfsPath, devPath string) {
	t.Helper()
	if err := simidxd.Write(root, simidxd.SPR); err != nil {
		t.Fatal(err)
	}
	sim, err := simidxd.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	const bus = "sys/bus/dsa"
	write := func(p, v string) {
		t.Helper()
		if err := sim.WriteFile(p, v); err != nil {
			t.Fatalf("simulated kernel refused %s=%q: %v", p, v, err)
		}
	}
	write(bus+"/devices/engine0.0/group_id", "0")
	for _, wq := range simWQs() {
		d := bus + "/devices/" + wq.dev + "/"
		write(d+"group_id", "0")
		write(d+"mode", "dedicated")
		write(d+"priority", "10")
		write(d+"size", "32")
		write(d+"type", wq.typ)
		write(d+"name", wq.name)
		write(d+"driver_name", wq.driver)
		write(d+"max_batch_size", "32")
		write(d+"max_transfer_size", "2097152")
	}
	write(bus+"/drivers/idxd/bind", "dsa0")
	for _, wq := range simWQs() {
		write(bus+"/drivers/"+wq.driver+"/bind", wq.dev)
		if got, err := sim.ReadFile(bus + "/devices/" + wq.dev + "/state"); err != nil || got != "enabled" {
			t.Fatalf("%s state = %q, %v after binding %s", wq.dev, got, err, wq.driver)
		}
	}
	devPath = filepath.Join(root, "dev/dsa")
	for _, wq := range simWQs() {
		node := filepath.Join(devPath, wq.dev)
		_, err := os.Stat(node)
		switch {
		case wq.typ == "user" && err != nil:
			t.Fatalf("the simulated kernel made no node for user queue %s: %v", wq.dev, err)
		case wq.typ != "user" && err == nil:
			t.Fatalf("the simulated kernel made a node for %s queue %s", wq.typ, wq.dev)
		case wq.typ != "user":
			if err := os.WriteFile(node, make([]byte, 4096), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	return filepath.Join(root, bus, "devices"), devPath
}

// requireTools fails t, naming the Debian packages, when the compiler, pkg-config, DPDK's
// development files or the idxd driver are missing. It returns the path of librte_dma_idxd.so.
func requireTools(t *testing.T) string {
	t.Helper()
	for _, prog := range []string{"gcc", "pkg-config"} {
		if _, err := exec.LookPath(prog); err != nil {
			t.Fatalf("dpdksmoke: %s not found (%v); fix: %s", prog, err, fixPackages)
		}
	}
	libdir, err := exec.CommandContext(t.Context(), "pkg-config", "--variable=libdir", "libdpdk").Output()
	if err != nil {
		t.Fatalf("dpdksmoke: pkg-config libdpdk: %v (DPDK development files missing); fix: %s", err, fixPackages)
	}
	matches, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(libdir)), "dpdk", "pmds-*", "librte_dma_idxd.so*"))
	if len(matches) == 0 {
		t.Fatalf("dpdksmoke: no librte_dma_idxd.so under %s/dpdk/pmds-*; fix: %s", strings.TrimSpace(string(libdir)), fixPackages)
	}
	return matches[0]
}

// build compiles testdata/idxdscan.c into a temporary directory and returns the binary.
func build(t *testing.T) string {
	t.Helper()
	flags, err := exec.CommandContext(t.Context(), "pkg-config", "--cflags", "--libs", "libdpdk").Output()
	if err != nil {
		t.Fatalf("dpdksmoke: pkg-config --cflags --libs libdpdk: %v; fix: %s", err, fixPackages)
	}
	bin := filepath.Join(t.TempDir(), "idxdscan")
	args := append([]string{"-O1", "-Wall", "-Werror", "-o", bin, filepath.Join("testdata", "idxdscan.c")},
		strings.Fields(string(flags))...)
	ctx, cancel := context.WithTimeout(t.Context(), 2*runTimeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("dpdksmoke: gcc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin
}

// scan is what idxdscan reported.
type scan struct {
	avail int
	ids   map[string]int // dmadev name → id, -1 (or a negative errno) when unknown
	numa  map[string]int
}

// run runs idxdscan on the tree with the given --file-prefix and parses its output.
func run(t *testing.T, bin, idxd, sysfsPath, devPath, prefix string) scan {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
	defer cancel()
	args := []string{"--no-pci", "--no-huge", "--no-shconf", "--no-telemetry", "-m", "64",
		"--file-prefix", prefix, "-d", idxd, "--log-level", "pmd.dma.idxd:debug", "--"}
	for _, wq := range simWQs() {
		args = append(args, wq.dev)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "DSA_SYSFS_PATH="+sysfsPath, "DSA_DEV_PATH="+devPath)
	// Even with --no-shconf the EAL creates its runtime directory: for root /var/run/dpdk/<prefix>
	// (removed again below when this run made it), otherwise under XDG_RUNTIME_DIR, pointed at a
	// temporary directory.
	if os.Geteuid() == 0 {
		runtime := filepath.Join("/var/run/dpdk", prefix)
		if _, err := os.Stat(runtime); os.IsNotExist(err) {
			t.Cleanup(func() { os.Remove(runtime) })
		}
	} else {
		cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+t.TempDir())
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("dpdksmoke: idxdscan --file-prefix %s: %v\n%s", prefix, err, stderr.String())
	}
	t.Logf("idxdscan --file-prefix %s:\n%s%s", prefix, stdout.String(), stderr.String())
	s, err := parse(stdout.Bytes())
	if err != nil {
		t.Fatalf("dpdksmoke: idxdscan output: %v\n%s", err, stdout.String())
	}
	return s
}

// parse reads idxdscan's "avail N" and "dev NAME ID NUMA" records; other records are ignored.
func parse(out []byte) (scan, error) {
	if len(out) > maxOutput {
		return scan{}, fmt.Errorf("output of %d bytes exceeds %d", len(out), maxOutput)
	}
	s := scan{avail: -1, ids: map[string]int{}, numa: map[string]int{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for n := 0; sc.Scan(); n++ {
		if n >= maxRecords {
			return scan{}, fmt.Errorf("more than %d lines", maxRecords)
		}
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "avail":
			v, err := strconv.Atoi(f[1])
			if err != nil {
				return scan{}, fmt.Errorf("line %d %q: %w", n+1, sc.Text(), err)
			}
			s.avail = v
		case len(f) == 4 && f[0] == "dev":
			id, err1 := strconv.Atoi(f[2])
			numa, err2 := strconv.Atoi(f[3])
			if err1 != nil || err2 != nil {
				return scan{}, fmt.Errorf("line %d %q: want dev NAME ID NUMA", n+1, sc.Text())
			}
			s.ids[f[1]], s.numa[f[1]] = id, numa
		}
	}
	if s.avail < 0 {
		return scan{}, fmt.Errorf("no avail record")
	}
	return s, sc.Err()
}

// TestIdxdBusEnumeratesSimulatedWQs runs DPDK's idxd bus on the simulated tree twice: with a
// private --file-prefix only dpdk_wq0.0 is a dmadev; with --file-prefix ovs, ovs_wq0.1 is one
// too. The kernel-type queue never is.
func TestIdxdBusEnumeratesSimulatedWQs(t *testing.T) {
	idxd := requireTools(t)
	bin := build(t)
	sysfsPath, devPath := layout(t, t.TempDir())

	cases := []struct {
		prefix string
		want   map[string]bool // work queue → enumerated as a dmadev
	}{
		{"dsasmoke", map[string]bool{"wq0.0": true, "wq0.1": false, "wq0.2": false}},
		{"ovs", map[string]bool{"wq0.0": true, "wq0.1": true, "wq0.2": false}},
	}
	for _, c := range cases {
		s := run(t, bin, idxd, sysfsPath, devPath, c.prefix)
		n := 0
		for wq, want := range c.want {
			id, ok := s.ids[wq]
			if !ok {
				t.Fatalf("--file-prefix %s: no record for %s", c.prefix, wq)
			}
			if got := id >= 0; got != want {
				t.Errorf("--file-prefix %s: %s enumerated = %v (dev id %d), want %v", c.prefix, wq, got, id, want)
			}
			if want {
				n++
				if s.numa[wq] != 0 {
					t.Errorf("--file-prefix %s: %s numa node %d, want 0 (dsa0/numa_node)", c.prefix, wq, s.numa[wq])
				}
			}
		}
		if s.avail != n {
			t.Errorf("--file-prefix %s: rte_dma_count_avail = %d, want %d", c.prefix, s.avail, n)
		}
	}
}

// TestParse covers the parser's bounds and errors.
func TestParse(t *testing.T) {
	s, err := parse([]byte("avail 1\ndev wq0.0 0 0\ndev wq0.1 -22 -1\nid 0 wq0.0 0\n"))
	if err != nil || s.avail != 1 || s.ids["wq0.0"] != 0 || s.ids["wq0.1"] != -22 {
		t.Errorf("parse = %+v, %v", s, err)
	}
	for _, bad := range []string{"", "dev wq0.0 x 0\navail 1\n", "avail x\n", strings.Repeat("id 0 wq 0\n", maxRecords+1)} {
		if _, err := parse([]byte(bad)); err == nil {
			t.Errorf("parse(%.40q) accepted", bad)
		}
	}
}
