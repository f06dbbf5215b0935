package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBarrier: the first call for a held port records the pid and blocks until its context
// ends, then records why it left; later calls for it, and calls for other ports, pass.
func TestBarrier(t *testing.T) {
	dir := t.TempDir()
	b := &barrier{Dir: dir, Hold: []string{"vk1"}}
	log := slog.New(slog.DiscardHandler)
	if err := b.hold(t.Context(), log, "vk0"); err != nil {
		t.Fatalf("a port not held: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "vk0.inside")); !os.IsNotExist(err) {
		t.Errorf("a port not held was recorded: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- b.hold(ctx, log, "vk1") }()
	inside := filepath.Join(dir, "vk1.inside")
	for { // until the call is inside; the test's deadline bounds it
		if _, err := os.Stat(inside); err == nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("the held call returned before its context ended: %v", err)
	default:
	}
	if got, _ := os.ReadFile(inside); strings.TrimSpace(string(got)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("%s = %q, want the pid %d", inside, got, os.Getpid())
	}
	if _, err := os.Stat(filepath.Join(dir, "vk1.left")); !os.IsNotExist(err) {
		t.Errorf("left recorded while held: %v", err)
	}
	if err := b.hold(t.Context(), log, "vk1"); err != nil {
		t.Errorf("a second call for a port held once: %v", err)
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("held call ended with %v, want its context's end", err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "vk1.left")); err != nil || !strings.Contains(string(got), "canceled") {
		t.Errorf("vk1.left = %q, %v", got, err)
	}
	var nilBarrier *barrier
	if err := nilBarrier.hold(t.Context(), log, "vk1"); err != nil {
		t.Errorf("no barrier: %v", err)
	}
}

// TestSplitConfig: the barrier key is taken out, the rest goes to vethplugin unchanged.
func TestSplitConfig(t *testing.T) {
	b, rest, err := splitConfig([]byte(`{"host_netns":"ovs","barrier":{"dir":"/tmp/b","hold":["vk1","vk4"]}}`))
	if err != nil || b == nil || b.Dir != "/tmp/b" || len(b.Hold) != 2 || string(rest) != `{"host_netns":"ovs"}` {
		t.Errorf("barrier %+v, rest %s, %v", b, rest, err)
	}
	if b, rest, err := splitConfig([]byte(`{"host_netns":"ovs"}`)); b != nil || string(rest) != `{"host_netns":"ovs"}` || err != nil {
		t.Errorf("without a barrier: %+v, %s, %v", b, rest, err)
	}
	if _, _, err := splitConfig([]byte(`{"barrier":{"hold":["vk1"]}}`)); err == nil {
		t.Error("a barrier without dir accepted")
	}
}
