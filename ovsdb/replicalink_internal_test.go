package ovsdb

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb/internal/replica"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// freezingProxy forwards unix-socket connections to target; while frozen it drops what it
// reads instead (a peer that stopped answering without closing, as a dead host over TCP
// looks), still closing both sides when one closes.
type freezingProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	frozen bool
}

func startFreezingProxy(t *testing.T, target string) *freezingProxy {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "proxy.sock"))
	if err != nil {
		t.Fatal(err)
	}
	p := &freezingProxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *freezingProxy) endpoint() string { return "unix:" + p.ln.Addr().String() }

func (p *freezingProxy) freeze(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frozen = on
}

func (p *freezingProxy) isFrozen() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.frozen
}

func (p *freezingProxy) serve(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("unix", strings.TrimPrefix(p.target, "unix:"))
	if err != nil {
		return
	}
	defer up.Close()
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if err != nil {
				return // a side closed: close both, frozen or not
			}
			if p.isFrozen() {
				continue // dropped: the stream is broken for good, as a lost peer leaves it
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
	}
	done := make(chan struct{}, 2)
	go func() { pipe(up, c); done <- struct{}{} }()
	go func() { pipe(c, up); done <- struct{}{} }()
	<-done
}

// TestReplicaLinkProbeReconnects: a connection whose peer stops answering without closing it
// is given up after an unanswered echo, and the link connects again once the peer answers;
// the replica then holds what was written meanwhile.
func TestReplicaLinkProbeReconnects(t *testing.T) {
	writer, srv := dialInternalPath(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := writer.Init(ctx); err != nil {
		t.Fatal(err)
	}
	proxy := startFreezingProxy(t, srv.Endpoint())
	store, err := replica.NewStore(replica.Options{})
	if err != nil {
		t.Fatal(err)
	}
	downs, retries := 0, 0
	var mu sync.Mutex
	l, err := startReplicaLink(ctx, replicaLinkOptions{Store: store, Endpoints: []string{proxy.endpoint()},
		ConnectTimeout: 300 * time.Millisecond, MonitorTimeout: 500 * time.Millisecond, Probe: 100 * time.Millisecond,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnRetry: func() {
			mu.Lock()
			retries++
			mu.Unlock()
		},
		OnState: func(up bool) {
			if !up {
				mu.Lock()
				downs++
				mu.Unlock()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if store.Root() == nil {
		t.Fatal("no Open_vSwitch row after the first monitor")
	}

	proxy.freeze(true)
	waitFor(t, "the probe to give the frozen connection up", func() bool { return !l.Connected() })
	if _, err := writer.NewTxn(1).EnsureBridge(model.Bridge{Name: "br-meanwhile"}, nil).Commit(ctx, CommitOptions{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if _, ok := store.Bridge("br-meanwhile"); ok {
		t.Fatal("the frozen replica saw a bridge written after the freeze")
	}
	proxy.freeze(false)
	waitFor(t, "the link to connect again", l.Connected)
	waitFor(t, "the bridge written meanwhile in the replica", func() bool {
		_, ok := store.Bridge("br-meanwhile")
		return ok
	})
	mu.Lock()
	defer mu.Unlock()
	if downs == 0 {
		t.Error("OnState never reported the link down")
	}
	if retries == 0 {
		t.Error("OnRetry was never called, yet the link connected again")
	}
	if store.Count(vswitch.OpenvSwitchTable) != 1 {
		t.Errorf("%d Open_vSwitch rows", store.Count(vswitch.OpenvSwitchTable))
	}
}
