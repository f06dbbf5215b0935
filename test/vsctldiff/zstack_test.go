//go:build linux

package vsctldiff

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/test/lab"
)

// zstackCorpus is the file of the ZStack agent's command-line shapes (see its header).
const zstackCorpus = "testdata/zstack/agent.txt"

// loadZStack reads the ZStack corpus.
func loadZStack(t *testing.T) Session {
	t.Helper()
	f, err := os.Open(zstackCorpus)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := ParseSession(filepath.Base(zstackCorpus), f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sortFindRows rewrites the stdout of every find step of o as its records (blank-line separated
// blocks) in sorted order: ovs-vsctl prints them in the order of its hash table of UUIDs, which
// differs from run to run, so only the set of records is a fact about the tool.
func sortFindRows(o *Outcome) {
	for i := range o.Steps {
		if !slices.Contains(o.Steps[i].Args, "find") || o.Steps[i].Stdout == "" {
			continue
		}
		blocks := strings.Split(strings.TrimSuffix(o.Steps[i].Stdout, "\n"), "\n\n")
		slices.Sort(blocks)
		o.Steps[i].Stdout = strings.Join(blocks, "\n\n") + "\n"
	}
}

// TestZStackAgentCorpus replays the ZStack agent's ovs-vsctl command lines (with the typos and
// bad values the corpus adds) through ovs-vsctl and through vsctl on twin databases: exit
// statuses, stdout, stderr and the final database must be identical, so every error the agent
// sees is ovs-vsctl's and no failed line leaves anything behind that ovs-vsctl would not.
func TestZStackAgentCorpus(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	s := loadZStack(t)
	if len(s.Lines) < 80 {
		t.Fatalf("%s has %d lines; the corpus is the agent's whole repertoire, not a sample", zstackCorpus, len(s.Lines))
	}
	vsctl := buildVsctl(t)
	ref, cand := Run(t, "ovs-vsctl", s), Run(t, vsctl, s)
	sortFindRows(ref)
	sortFindRows(cand)
	if diffs := Compare(ref, cand, true); len(diffs) != 0 {
		t.Errorf("vsctl differs from ovs-vsctl on the ZStack corpus in %d places:\n%s", len(diffs), strings.Join(diffs, "\n\n"))
	}
	// The corpus must exercise what it claims: successes, failures (the bad input), rows found by
	// the agent's find conditions, including the escaped PCI address, and a database left with
	// the agent's bridges, bond and VM NIC in it.
	ex := exitCounts(ref)
	if ex[0] < 40 || ex[1] < 25 || ex[-1] != 0 {
		t.Errorf("exit statuses %v: want at least 40 successes, 25 failures, no timeouts", ex)
	}
	found := false
	for _, st := range ref.Steps {
		if slices.Contains(st.Args, `options:dpdk-devargs=0000\:17\:00.0`) {
			found = st.Stdout == "name                : uplink0\n"
		}
	}
	if !found {
		t.Errorf("the find on an escaped PCI address did not print the uplink's row")
	}
	for _, want := range []string{`name="br_uplink0"`, `name="obond0"`, `vm-id","99887766554433221100ffeeddccbbaa"`, `dpdk-devargs","eth_bond1,mode=2,`} {
		if !strings.Contains(ref.Dump, want) {
			t.Errorf("final database lacks %s", want)
		}
	}
	if strings.Contains(ref.Dump, "vnic8.1") || strings.Contains(ref.Dump, "br_bad0") {
		t.Errorf("a failed line left rows behind in ovs-vsctl's database:\n%s", ref.Dump)
	}
}

// TestZStackVDPAPortGoesToTheDaemon pins the one ZStack shape vsctl does not pass to OVSDB: a
// vDPA port of type dpdkvdpa, which only Mellanox's Open vSwitch fork knows. ovs-vsctl writes the
// row (and its ovs-vswitchd reports the type unknown); vsctl, like for any type Open vSwitch does
// not list, hands the line to ovsplaned, and with no ovsplaned reachable it fails and writes
// nothing. docs/zstack.md tells the operator.
func TestZStackVDPAPortGoesToTheDaemon(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	t.Setenv("OVSPLANE_API", "unix:"+filepath.Join(t.TempDir(), "no-daemon.sock"))
	s := Session{Name: "zstack-vdpa"}
	for _, l := range []string{
		"add-br br_uplink0 -- set Bridge br_uplink0 datapath_type=netdev",
		"add-port br_uplink0 vnic9.0 -- set Interface vnic9.0 type=dpdkvdpa options:vdpa-socket-path=/var/run/zstack/vdpa/vm-c/vnic9.0 " +
			"options:vdpa-accelerator-devargs=0000:3b:00.2 options:dpdk-devargs=0000:3b:00.0,representor=[2] " +
			"options:vdpa-max-queues=8 options:n_rxq=1 options:vdpa-sw=true",
		"--timeout=5 list-ports br_uplink0",
	} {
		w, err := SplitWords(l)
		if err != nil {
			t.Fatal(err)
		}
		s.Lines = append(s.Lines, w)
	}
	ref, cand := Run(t, "ovs-vsctl", s), Run(t, buildVsctl(t), s)
	if ref.Steps[1].Exit != 0 || ref.Steps[2].Stdout != "vnic9.0\n" {
		t.Fatalf("ovs-vsctl: add-port exit %d, ports %q; want 0 and vnic9.0", ref.Steps[1].Exit, ref.Steps[2].Stdout)
	}
	add := cand.Steps[1]
	if add.Exit != 1 || !strings.Contains(add.Stderr, `interface type "dpdkvdpa" is not an Open vSwitch type`) || !strings.Contains(add.Stderr, "nothing was written") {
		t.Errorf("vsctl add-port dpdkvdpa: exit %d, stderr %q; want 1 and a message that ovsplaned was not reached and nothing was written", add.Exit, add.Stderr)
	}
	if cand.Steps[2].Stdout != "" || strings.Contains(cand.Dump, "vnic9.0") {
		t.Errorf("vsctl left the refused port in the database: ports %q", cand.Steps[2].Stdout)
	}
}
