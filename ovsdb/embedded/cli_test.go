package embedded

import (
	"bytes"
	"context"
	"log/slog"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/ovsplane/ovsplane/ovsdb/simvswitchd"
	"github.com/ovsplane/ovsplane/test/lab"
)

// warnings records the log records at level Warn and above.
type warnings struct {
	mu   sync.Mutex
	recs []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler           { return w }
func (w *warnings) WithGroup(string) slog.Handler                { return w }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.recs = append(w.recs, r.Level.String()+" "+r.Message)
	return nil
}

func (w *warnings) get() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.recs...)
}

// buildVsctl builds cmd/vsctl into a temporary directory.
func buildVsctl(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "vsctl")
	out, err := exec.CommandContext(ctxT(t), "go", "build", "-o", bin, "github.com/ovsplane/ovsplane/cmd/vsctl").CombinedOutput()
	if err != nil {
		t.Fatalf("go build cmd/vsctl: %v\n%s", err, out)
	}
	return bin
}

// TestCLIs drives the embedded database with the real ovs-vsctl and with
// our vsctl, taking turns on the same bridges: add-br, add-port, del-port
// and del-br all send "wait" operations for what they read, and (without
// --no-wait) wait for the simulated ovs-vswitchd to acknowledge next_cfg
// through a monitor. Every command must succeed, both tools must list the
// same result, and the server must log nothing alarming (the tools' _Server
// queries included).
func TestCLIs(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	logs := &warnings{}
	db := open(t, shortDir(t), Options{Logger: slog.New(logs)})
	v, err := simvswitchd.New(ctxT(t), simvswitchd.Config{Endpoint: db.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	tools := map[string]string{"ovs-vsctl": "ovs-vsctl", "vsctl": buildVsctl(t)}
	run := func(tool string, args ...string) string {
		t.Helper()
		// -t is a safety net against a hang, not a timing assertion.
		cmd := exec.CommandContext(ctxT(t), tools[tool], append([]string{"--db=" + db.Endpoint(), "-t", "30"}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, stderr.String())
		}
		return strings.TrimSpace(stdout.String())
	}
	// names lists the column "name" of table with both tools, which must agree.
	names := func(table string) []string {
		t.Helper()
		var first []string
		for _, tool := range []string{"ovs-vsctl", "vsctl"} {
			got := strings.Fields(run(tool, "--bare", "--columns=name", "list", table))
			sort.Strings(got)
			if tool == "ovs-vsctl" {
				first = got
			} else if !reflect.DeepEqual(got, first) {
				t.Fatalf("list %s: ovs-vsctl %v, vsctl %v", table, first, got)
			}
		}
		return first
	}
	expect := func(table string, want ...string) {
		t.Helper()
		sort.Strings(want)
		if got := names(table); !reflect.DeepEqual(got, want) && (len(got) != 0 || len(want) != 0) {
			t.Fatalf("%s names: got %v, want %v", table, got, want)
		}
	}
	run("ovs-vsctl", "--no-wait", "init")
	for _, pair := range [][2]string{{"ovs-vsctl", "vsctl"}, {"vsctl", "ovs-vsctl"}} {
		a, b := pair[0], pair[1]
		t.Run(a+" then "+b, func(t *testing.T) {
			br := "br-" + a
			run(a, "add-br", br)
			expect("Bridge", br)
			run(b, "add-port", br, "p-"+b, "--", "set", "Interface", "p-"+b, "type=internal")
			run(a, "add-port", br, "q", "--", "set", "Interface", "q", "type=internal")
			expect("Port", br, "p-"+b, "q")
			expect("Interface", br, "p-"+b, "q")
			run(b, "del-port", br, "q")
			expect("Port", br, "p-"+b)
			if got := run(a, "list-ports", br); got != "p-"+b {
				t.Fatalf("list-ports %s: %q", br, got)
			}
			run(a, "del-port", br, "p-"+b)
			expect("Port", br)
			run(b, "del-br", br)
			expect("Bridge")
			expect("Port")
			expect("Interface")
		})
	}
	if w := logs.get(); len(w) > 0 {
		t.Fatalf("the server logged:\n%s", strings.Join(w, "\n"))
	}
}
