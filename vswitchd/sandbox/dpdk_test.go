package sandbox

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/internal/ovsproc"
)

func TestDecideDPDK(t *testing.T) {
	plenty := ovsproc.Hugepages{Total: 1024, Free: 1024, PageBytes: 2 << 20} // 2048 MiB free
	ok := dpdkFacts{host: ovsproc.DPDKHost{Binary: "/x/ovs-vswitchd-dpdk", BinaryOK: true, Root: true, Hugepages: plenty, SocketMemMB: 512}}
	with := func(mode DPDKMode, change func(*dpdkFacts)) dpdkFacts {
		f := ok
		f.mode = mode
		if change != nil {
			change(&f)
		}
		return f
	}
	tests := []struct {
		name    string
		facts   dpdkFacts
		want    bool
		wantWhy string // substring of why (or of the error with DPDKOn)
		wantErr bool
	}{
		{"auto, all there", with(DPDKAuto, nil), true, "512 MiB of hugepages", false},
		{"auto, exactly enough", with(DPDKAuto, func(f *dpdkFacts) { f.host.SocketMemMB = 2048 }), true, "DPDK with 2048", false},
		{"auto, too few hugepages", with(DPDKAuto, func(f *dpdkFacts) { f.host.SocketMemMB = 4096 }), false, "2048 MiB of hugepages free", false},
		{"auto, no binary", with(DPDKAuto, func(f *dpdkFacts) { f.host.BinaryOK = false }), false, "openvswitch-switch-dpdk", false},
		{"auto, not root", with(DPDKAuto, func(f *dpdkFacts) { f.host.Root = false }), false, "needs root", false},
		{"auto, meminfo unreadable", with(DPDKAuto, func(f *dpdkFacts) { f.host.HugeErr = errors.New("nope") }), false, "nope", false},
		{"auto, dpdk-init=false", with(DPDKAuto, func(f *dpdkFacts) { f.initOff = "the desired other_config:dpdk-init" }), false,
			"no DPDK: the desired other_config:dpdk-init is false", false},
		{"off, all there", with(DPDKOff, nil), false, "off as asked", false},
		{"on, all there", with(DPDKOn, nil), true, "DPDK with", false},
		{"on, no hugepages", with(DPDKOn, func(f *dpdkFacts) { f.host.Hugepages = ovsproc.Hugepages{} }), false, "0 MiB of hugepages free", true},
		{"on, no binary", with(DPDKOn, func(f *dpdkFacts) { f.host.BinaryOK = false }), false, "/x/ovs-vswitchd-dpdk is not installed", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			use, why, err := decideDPDK(tt.facts)
			if tt.wantErr {
				if !errors.Is(err, errNoDPDK) || !strings.Contains(err.Error(), tt.wantWhy) {
					t.Fatalf("err = %v, want errNoDPDK saying %q", err, tt.wantWhy)
				}
				return
			}
			if err != nil || use != tt.want || !strings.Contains(why, tt.wantWhy) {
				t.Fatalf("decideDPDK = %v, %q, %v; want %v, …%q…", use, why, err, tt.want, tt.wantWhy)
			}
		})
	}
}

func TestParseDPDKMode(t *testing.T) {
	for in, want := range map[string]DPDKMode{"": DPDKAuto, "auto": DPDKAuto, "on": DPDKOn, "off": DPDKOff} {
		if got, err := ParseDPDKMode(in); err != nil || got != want {
			t.Errorf("ParseDPDKMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseDPDKMode("yes"); err == nil {
		t.Error(`ParseDPDKMode("yes") succeeded, want an error`)
	}
}

func TestOptionsDefaults(t *testing.T) {
	o, err := Options{Dir: "/tmp/x"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.DPDK != DPDKAuto || o.SocketMemMB != DefaultSocketMemMB || o.DPDKExtra != DefaultDPDKExtra ||
		o.StartTimeout != DefaultStartTimeout || o.Logger == nil || o.Paths.Schema != DefaultSchema ||
		o.Paths.VswitchdDPDK != DefaultVswitchdDPDK || o.Paths.Meminfo != DefaultMeminfo || o.Paths.Vswitchd == "" {
		t.Errorf("defaults not filled: %+v", o)
	}
	for _, bad := range []Options{
		{},
		{Dir: "/tmp/" + strings.Repeat("d", MaxDirLen)},
		{Dir: "/tmp/x", DPDK: "maybe"},
		{Dir: "/tmp/x", SocketMemMB: -1},
	} {
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("withDefaults(%+v) succeeded, want an error", bad)
		}
	}
}

func TestParseRoot(t *testing.T) {
	got, err := parseRoot([]byte(`{"data":[[["map",[["dpdk-extra","--no-pci"],["pmd-maxsleep","1000"]]],` +
		`["map",[["sandbox-other-config","dpdk-extra,pmd-maxsleep"],["system-id","x"]]]]],"headings":["other_config","external_ids"]}`))
	want := map[string]string{"dpdk-extra": "--no-pci", "pmd-maxsleep": "1000"}
	if err != nil || !maps.Equal(got.otherConfig, want) || !slices.Equal(got.written, []string{"dpdk-extra", "pmd-maxsleep"}) {
		t.Errorf("parseRoot = %+v, %v; want other_config %v and both keys written", got, err, want)
	}
	got, err = parseRoot([]byte(`{"data":[[["map",[]],["map",[]]]],"headings":["other_config","external_ids"]}`))
	if err != nil || len(got.otherConfig) != 0 || got.written != nil {
		t.Errorf("empty maps: %+v, %v", got, err)
	}
	for _, bad := range []string{`{"data":[],"headings":[]}`, `{"data":[[["map",[]]]]}`, `{"data":[[["map",[]],["set",[1]]]]}`, `nope`} {
		if _, err := parseRoot([]byte(bad)); err == nil {
			t.Errorf("parseRoot(%s): want an error", bad)
		}
	}
}

func TestPlanOtherConfig(t *testing.T) {
	defaults := map[string]string{"pmd-maxsleep": "1000", "dpdk-init": "true", "dpdk-socket-mem": "512", "dpdk-extra": "--no-pci"}
	tests := []struct {
		name       string
		db         map[string]string
		written    []string
		desired    map[string]string
		wantSet    map[string]string
		wantRemove []string
		wantRecord []string
	}{
		{name: "fresh database", db: map[string]string{},
			wantSet:    defaults,
			wantRecord: []string{"dpdk-extra", "dpdk-init", "dpdk-socket-mem", "pmd-maxsleep"}},
		{name: "the desired state's keys are left to it",
			db:         map[string]string{},
			desired:    map[string]string{"dpdk-init": "true", "dpdk-socket-mem": "1024", "pmd-cpu-mask": "0x2"},
			wantSet:    map[string]string{"pmd-maxsleep": "1000", "dpdk-extra": "--no-pci"},
			wantRecord: []string{"dpdk-extra", "pmd-maxsleep"}},
		{name: "an operator's values stay and are not recorded",
			db:         map[string]string{"dpdk-socket-mem": "2048", "pmd-maxsleep": "50"},
			wantSet:    map[string]string{"dpdk-init": "true", "dpdk-extra": "--no-pci"},
			wantRecord: []string{"dpdk-extra", "dpdk-init"}},
		{name: "a restart changes nothing",
			db:         map[string]string{"pmd-maxsleep": "1000", "dpdk-init": "true", "dpdk-socket-mem": "512", "dpdk-extra": "--no-pci"},
			written:    []string{"dpdk-extra", "dpdk-init", "dpdk-socket-mem", "pmd-maxsleep"},
			wantSet:    map[string]string{},
			wantRecord: []string{"dpdk-extra", "dpdk-init", "dpdk-socket-mem", "pmd-maxsleep"}},
		{name: "earlier defaults are handed over to the desired state",
			db:         map[string]string{"pmd-maxsleep": "1000", "dpdk-init": "true", "dpdk-socket-mem": "512", "dpdk-extra": "--no-pci"},
			written:    []string{"dpdk-extra", "dpdk-init", "dpdk-socket-mem", "pmd-maxsleep"},
			desired:    map[string]string{"dpdk-init": "true", "dpdk-socket-mem": "1024"},
			wantSet:    map[string]string{},
			wantRemove: []string{"dpdk-init", "dpdk-socket-mem"},
			wantRecord: []string{"dpdk-extra", "pmd-maxsleep"}},
		{name: "recorded keys removed by hand leave the record and come back",
			db:         map[string]string{"dpdk-init": "true"},
			written:    []string{"dpdk-init", "pmd-maxsleep"},
			desired:    map[string]string{"dpdk-socket-mem": "1024", "dpdk-extra": "", "dpdk-init": "true"},
			wantSet:    map[string]string{"pmd-maxsleep": "1000"},
			wantRemove: []string{"dpdk-init"},
			wantRecord: []string{"pmd-maxsleep"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := rootConfig{otherConfig: tt.db, written: tt.written}
			p := planOtherConfig(rc, tt.desired, defaults)
			if !maps.Equal(p.set, tt.wantSet) || !slices.Equal(p.remove, tt.wantRemove) || !slices.Equal(p.record, tt.wantRecord) {
				t.Fatalf("plan = %+v\nwant set %v, remove %v, record %v", p, tt.wantSet, tt.wantRemove, tt.wantRecord)
			}
			after := p.result(rc)
			for k := range tt.desired {
				if _, written := p.set[k]; written {
					t.Errorf("key %s of the desired state written by the sandbox", k)
				}
				if v, left := after[k]; left && slices.Contains(tt.written, k) {
					t.Errorf("the sandbox's earlier %s=%s left in place of the desired state's", k, v)
				}
			}
			if p.changes(tt.written) != (len(tt.wantSet)+len(tt.wantRemove) > 0 || !slices.Equal(tt.wantRecord, tt.written)) {
				t.Errorf("changes() = %v", p.changes(tt.written))
			}
		})
	}
}
