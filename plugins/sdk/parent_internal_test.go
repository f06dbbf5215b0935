package sdk

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestExitWithParent(t *testing.T) {
	var ppid atomic.Int64
	ppid.Store(100)
	exited := make(chan struct{})
	var out strings.Builder
	go exitWithParent(&out, 100, func() int { return int(ppid.Load()) }, time.Millisecond, func() { close(exited) })
	select {
	case <-exited:
		t.Fatal("exited while the parent runs")
	case <-time.After(20 * time.Millisecond):
	}
	ppid.Store(1) // re-parented to init
	<-exited
	if !strings.Contains(out.String(), "pid 100") {
		t.Errorf("message %q does not name the parent", out.String())
	}
}
