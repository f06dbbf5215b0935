// Package vdpaexample_test keeps examples/vdpa honest: capture-fixture.sh, run against fixture
// trees materialised by the fake kernel (SYSFS_ROOT) with stand-in devlink and vdpa commands
// printing iproute2's JSON, must produce a fixture that loads back to the same host; and the
// sample config's vdpa ports must plan, apply and tear down on a ConnectX-6 Dx fixture.
package vdpaexample_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ovsplane/ovsplane/vdpa"
	"github.com/ovsplane/ovsplane/vdpa/simhost"
	"github.com/ovsplane/ovsplane/vdpa/simkernel"
)

var ctx = context.Background()

func boot(t *testing.T, name string) *simkernel.Kernel {
	t.Helper()
	f, err := simhost.Load(filepath.Join("..", "..", "vdpa", "testdata", name+".fixture"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := simkernel.New(filepath.Join(t.TempDir(), "root"), f)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// iproute2 writes the JSON that `devlink -j dev eswitch show` and `vdpa -j ...` would print
// for the kernel state in f, and stand-in commands that print it, into dir.
func iproute2(t *testing.T, dir string, f *simhost.Fixture) (devlinkCmd, vdpaCmd string) {
	t.Helper()
	write := func(name string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for h, mode := range f.Eswitch {
		if mode != "unsupported" {
			write("eswitch-"+strings.TrimPrefix(h, "pci/")+".json", map[string]any{"dev": map[string]any{
				h: map[string]string{"mode": mode, "inline-mode": "none", "encap-mode": "basic"}}})
		}
	}
	mgmt, devs, cfgs := map[string]any{}, map[string]any{}, map[string]any{}
	for h, a := range f.MgmtDevs {
		n, _ := strconv.Atoi(a["max_vqs"])
		mgmt[h] = map[string]any{"supported_classes": []string{a["classes"]}, "max_supported_vqs": n,
			"dev_features": []string{"CSUM", "GUEST_CSUM", "MTU", "MAC", "CTRL_VQ", "MQ", "VERSION_1"}}
	}
	for n, a := range f.VDPADevs {
		devs[n] = map[string]any{"type": "network", "mgmtdev": a["mgmtdev"], "vendor_id": 5555, "max_vqs": 17, "max_vq_size": 256}
		mtu, _ := strconv.Atoi(a["mtu"])
		qp, _ := strconv.Atoi(a["max_vqp"])
		cfgs[n] = map[string]any{"mac": a["mac"], "link": "up", "link_announce": false, "max_vq_pairs": qp, "mtu": mtu}
	}
	write("mgmtdev.json", map[string]any{"mgmtdev": mgmt})
	write("dev.json", map[string]any{"dev": devs})
	write("config.json", map[string]any{"config": cfgs})
	devlinkCmd, vdpaCmd = filepath.Join(dir, "devlink"), filepath.Join(dir, "vdpa")
	script := func(path, body string) {
		if err := os.WriteFile(path, []byte("#!/usr/bin/env bash\nD="+dir+"\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script(devlinkCmd, `f="$D/eswitch-${5#pci/}.json"
[ "$*" = "-j dev eswitch show $5" ] && [ -f "$f" ] && exec cat "$f"
echo "kernel answers: Operation not supported" >&2; exit 1
`)
	script(vdpaCmd, `case "$*" in
"-j mgmtdev show") exec cat "$D/mgmtdev.json" ;;
"-j dev show") exec cat "$D/dev.json" ;;
"-j dev config show") exec cat "$D/config.json" ;;
esac
echo "Failed to connect to vdpa Netlink" >&2; exit 1
`)
	return devlinkCmd, vdpaCmd
}

// TestCaptureRoundTrip: the script's fixture, loaded, equals the host it was run on.
func TestCaptureRoundTrip(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	cases := map[string][]string{
		"cx6dx-switchdev": nil, "cx6dx-inuse": nil, "bluefield-dpu": nil,
		// Only mlx5 PFs are found on their own; a PF the library refuses is named explicitly.
		"intel-e810": {"0000:65:00.0", "0000:65:00.1", "0000:3b:00.0"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			k := boot(t, name)
			want, err := k.Dump()
			if err != nil {
				t.Fatal(err)
			}
			want.Knobs = simhost.Attrs{} // knobs of the fake, never captured
			devlink, vdpaCmd := iproute2(t, t.TempDir(), want)
			cmd := exec.Command("bash", append([]string{"capture-fixture.sh"}, args...)...)
			cmd.Env = append(os.Environ(), "SYSFS_ROOT="+k.Dir(), "DEVLINK="+devlink, "VDPA="+vdpaCmd)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("capture-fixture.sh: %v\n%s", err, stderr.String())
			}
			got, err := simhost.Parse(out, "")
			if err != nil {
				t.Fatalf("the capture does not load: %v\n%s", err, out)
			}
			if g, w := string(got.Format()), string(want.Format()); g != w {
				t.Errorf("capture differs from the host (- host, + capture):\n%s", diff(w, g))
			}
			// A captured host boots in the fake kernel: a bug report becomes a test.
			if _, err := simkernel.New(t.TempDir(), got); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func diff(a, b string) string {
	in := map[string]int{}
	for _, l := range strings.Split(b, "\n") {
		in[l]++
	}
	var out []string
	for _, l := range strings.Split(a, "\n") {
		if in[l] > 0 {
			in[l]--
			continue
		}
		out = append(out, "- "+l)
	}
	for l, n := range in {
		for ; n > 0; n-- {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

// TestSampleConfigPorts: every interface of type vdpa in the sample config becomes a valid
// request that applies on a fresh ConnectX-6 Dx, one after the other, and tears down to the
// fixture again.
func TestSampleConfigPorts(t *testing.T) {
	raw, err := os.ReadFile("ovsplaned-vdpa.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Bridges []struct {
			Ports []struct {
				Interfaces []struct {
					Name    string            `yaml:"name"`
					Type    string            `yaml:"type"`
					Options map[string]string `yaml:"options"`
				} `yaml:"interfaces"`
			} `yaml:"ports"`
		} `yaml:"bridges"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	k := boot(t, "cx6dx-legacy")
	before, _ := k.Dump()
	h := k.Host(vdpa.Config{PollInterval: 5 * time.Millisecond, CharDevTimeout: time.Second, AppearTimeout: time.Second})
	ovs := vdpa.OVSState{Running: true, DPDKInitialized: true, IfaceTypes: []string{"dpdk"}}
	var states []*vdpa.State
	for _, b := range cfg.Bridges {
		for _, p := range b.Ports {
			for _, i := range p.Interfaces {
				if i.Type != "vdpa" {
					continue
				}
				req, err := vdpa.RequestFromOptions(i.Name, i.Options)
				if err != nil {
					t.Fatal(err)
				}
				plan, err := h.Plan(ctx, req, ovs, nil)
				if err != nil {
					t.Fatalf("%s: %v", i.Name, err)
				}
				st, err := h.Apply(ctx, plan, nil)
				if err != nil {
					t.Fatalf("%s: %v", i.Name, err)
				}
				t.Logf("%s: %s %s", i.Name, st.Endpoint.Kind, st.Endpoint.Path)
				states = append(states, st)
				ovs.Interfaces = append(ovs.Interfaces, st.OVS.Interface)
			}
		}
	}
	if len(states) != 2 {
		t.Fatalf("want 2 vdpa ports in the sample, got %d", len(states))
	}
	for i := len(states) - 1; i >= 0; i-- {
		if _, err := h.Teardown(ctx, states[i], vdpa.TeardownOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	after, _ := k.Dump()
	if string(after.Format()) != string(before.Format()) {
		t.Errorf("teardown of the sample's ports did not restore the host:\n%s", diff(string(before.Format()), string(after.Format())))
	}
}
