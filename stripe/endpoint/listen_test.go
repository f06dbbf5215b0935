package endpoint_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/stripe/endpoint"
)

func TestListen(t *testing.T) {
	ctx := t.Context()
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", ":0", "localhost:0"} {
		if ln, err := endpoint.ListenTCP(ctx, addr, false); err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("ListenTCP(%q) = %v, %v: want a loopback refusal", addr, ln, err)
		}
		if pc, err := endpoint.ListenUDP(ctx, addr, false); err == nil {
			t.Errorf("ListenUDP(%q) = %v: want a loopback refusal", addr, pc.LocalAddr())
		}
	}
	ln, err := endpoint.ListenTCP(ctx, "[::1]:0", false)
	if err != nil {
		t.Fatal(err)
	}
	_ = ln.Close()
	pc, err := endpoint.ListenUDP(ctx, "127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	_ = pc.Close()

	dir, err := os.MkdirTemp("", "ep")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "s")
	first, err := endpoint.ListenUnix(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := endpoint.ListenUnix(ctx, path); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second listener on a live socket: %v", err)
	}
	// A stale socket file (its listener gone without unlinking) is replaced.
	first.(*net.UnixListener).SetUnlinkOnClose(false)
	_ = first.Close()
	again, err := endpoint.ListenUnix(ctx, path)
	if err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	_ = again.Close()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := endpoint.ListenUnix(ctx, file); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("regular file: %v", err)
	}
	if _, err := endpoint.ListenUnix(ctx, strings.Repeat("x", 200)); err == nil {
		t.Fatal("a 200-byte path was taken")
	}
}
