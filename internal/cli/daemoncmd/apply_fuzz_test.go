package daemoncmd_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/internal/cli/daemoncmd"
	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/vswitchd/apiserver/apitest"
	"github.com/ovsplane/ovsplane/vswitchd/config"
)

// FuzzVsctlApply runs `vsctl apply -f FILE` on arbitrary files against the real API server
// (over its unix socket, so with the caller's role checks) backed by apitest.Fake. It checks
// that nothing panics; that the exit status is one daemoncmd documents (0, 1 with a message,
// 2); that a file the loader refuses sends nothing; and that whatever reached the daemon is
// within model/limits (vsctl checks with the daemon's own functions before it sends).
func FuzzVsctlApply(f *testing.F) {
	f.Add([]byte("bridges:\n  - name: br0\n    datapath_type: netdev\n    ports:\n      - name: p1\n        tag: 5\n        interfaces: [{name: p1, type: internal}]\n"))
	f.Add([]byte("bridges:\n  - name: br0\n    ports:\n      - {name: bond0, bond_mode: balance-slb, interfaces: [{name: e1, type: internal}, {name: e2, type: internal}]}\n"))
	f.Add([]byte("bridges:\n  - name: br0\n    ports:\n      - {name: \"a\\0b\", interfaces: [{name: \"a\\0b\"}]}\n"))
	f.Add([]byte("bridges:\n  - name: \"..\"\n"))
	f.Add([]byte("bridges:\n  - name: br0\n    other_config: {\"k\\u200b\": v}\n"))
	f.Add([]byte("log: {level: debug}\nbridges:\n  - name: br0\n"))
	f.Add([]byte("bridges: []\n"))
	f.Add([]byte("bridges: " + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + "\n"))
	f.Add([]byte("a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nbridges: [*b]\n"))
	f.Add([]byte("bridges:\n  - name: br0\n    ports:\n      - {name: p, interfaces: [{name: p, type: dpdk, options: {dpdk-devargs: \"\\xff\"}}]}\n"))
	fake, addr := serve(f)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "apply.yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		defer resetFake(t, fake)
		// A safety net against a hang, not a timing assertion: the run ends with status 1.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var stdout, stderr bytes.Buffer
		code := daemoncmd.Main(ctx, daemoncmd.Env{
			Args:   []string{"vsctl", "--daemon=" + addr, "--timeout=10s", "apply", "-f", path},
			Getenv: func(string) string { return "" },
			Stdout: &stdout, Stderr: &stderr,
		})
		switch code {
		case 0:
		case 1, 2:
			if stderr.Len() == 0 {
				t.Fatalf("status %d without a message; stdout %.2000q", code, stdout.Bytes())
			}
		default:
			t.Fatalf("status %d\nstdout: %.2000s\nstderr: %.2000s", code, stdout.Bytes(), stderr.Bytes())
		}
		if n, limit := stdout.Len()+stderr.Len(), 1<<20+64*len(data); n > limit {
			t.Fatalf("%d bytes of output for a %d-byte file (limit %d)", n, len(data), limit)
		}
		sent := len(fake.Bridges()) + len(fake.Ports(""))
		if _, err := config.Load(ctx, config.Options{File: path, Data: bytes.Clone(data)}); err != nil && sent > 0 {
			t.Fatalf("the loader refuses the file (%v) but %d objects reached the daemon", err, sent)
		}
		var errs []error
		for _, b := range fake.Bridges() {
			errs = append(errs, limits.CheckName(limits.Bridge, b.Spec.Name),
				limits.CheckMap("bridge", "other_config", b.Spec.OtherConfig), limits.CheckMap("bridge", "external_ids", b.Spec.ExternalIDs))
		}
		for _, p := range fake.Ports("") {
			errs = append(errs, limits.CheckName(limits.Port, p.Spec.Name), limits.CheckInterfaces("port", len(p.Spec.Interfaces)),
				limits.CheckMap("port", "other_config", p.Spec.OtherConfig), limits.CheckMap("port", "external_ids", p.Spec.ExternalIDs))
			for _, in := range p.Spec.Interfaces {
				errs = append(errs, limits.CheckInterfaceName(in.Name, in.Type), limits.CheckMap("interface", "options", in.Options),
					limits.CheckMap("interface", "other_config", in.OtherConfig), limits.CheckMap("interface", "external_ids", in.ExternalIDs))
			}
		}
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("objects out of model/limits reached the daemon:\n%v", err)
		}
	})
}

// resetFake deletes every bridge and port the fake holds.
func resetFake(t *testing.T, fake *apitest.Fake) {
	t.Helper()
	ctx := context.Background()
	for _, p := range fake.Ports("") {
		if err := fake.DeletePort(ctx, p.Spec.Name); err != nil {
			t.Fatalf("reset: %v", err)
		}
	}
	for _, b := range fake.Bridges() {
		if err := fake.DeleteBridge(ctx, b.Spec.Name); err != nil {
			t.Fatalf("reset: %v", err)
		}
	}
}
