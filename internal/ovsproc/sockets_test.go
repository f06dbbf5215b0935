package ovsproc

import (
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/internal/testkit"
)

func TestParseProcNetUnix(t *testing.T) {
	const table = `Num       RefCount Protocol Flags    Type St Inode Path
0000000000000000: 00000002 00000000 00010000 0001 01 24001 /run/a.sock
0000000000000000: 00000002 00000000 00000000 0001 03 24002 /run/connected.sock
0000000000000000: 00000002 00000000 00010000 0001 01 24003 @abstract
0000000000000000: 00000003 00000000 00000000 0001 03 24004
0000000000000000: 00000002 00000000 00010000 0001 01 24005 /run/with space.sock
`
	got, err := parseProcNetUnix(strings.NewReader(table))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"/run/a.sock": true, "/run/with space.sock": true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("listening = %v, want %v", got, want)
	}
	if _, err := parseProcNetUnix(strings.NewReader("h\n0: 1 0 zz 1 1 1 /x\n")); err == nil {
		t.Error("bad flags accepted")
	}
}

// testLogger logs to the test's output.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testkit.Output(t), nil))
}

// staleSocket leaves a unix socket file at path that nobody listens on, as a process killed
// with -9 leaves it.
func staleSocket(t *testing.T, path string) {
	t.Helper()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
}

func TestRemoveStaleSockets(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "vhost")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	stale := []string{filepath.Join(dir, "vhu-server0"), filepath.Join(sub, "vhu-server1")}
	for _, p := range stale {
		staleSocket(t, p)
	}
	// A VM side's socket (dpdkvhostuserclient): it listens, ovs-vswitchd connects to it.
	vm, err := net.Listen("unix", filepath.Join(dir, "vm.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	// Not sockets: a regular file, a directory, a symlink to a stale socket.
	file := filepath.Join(dir, "conf.db")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "outside.sock")
	staleSocket(t, outside)
	link := filepath.Join(dir, "link.sock")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}

	removed, err := RemoveStaleSockets(t.Context(), []string{dir, sub, filepath.Join(dir, "missing")}, testLogger(t))
	if err != nil {
		t.Fatalf("RemoveStaleSockets: %v", err)
	}
	slices.Sort(removed)
	slices.Sort(stale)
	if !slices.Equal(removed, stale) {
		t.Errorf("removed %v, want %v", removed, stale)
	}
	for _, p := range stale {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s: %v, want it removed", p, err)
		}
	}
	for _, p := range []string{filepath.Join(dir, "vm.sock"), file, sub, link, outside} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s removed (%v), want it kept", p, err)
		}
	}
	// The listener still serves.
	c, err := net.Dial("unix", filepath.Join(dir, "vm.sock"))
	if err != nil {
		t.Fatalf("the VM side's socket no longer answers: %v", err)
	}
	c.Close()
}
