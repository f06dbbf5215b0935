package apiserver_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	"github.com/ovsplane/ovsplane/api/client"
	v1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/vswitchd/apiserver"
	"github.com/ovsplane/ovsplane/vswitchd/apiserver/apitest"
	"github.com/ovsplane/ovsplane/vswitchd/config"
)

func TestWatchSnapshotThenChangesEndsOnStop(t *testing.T) {
	d, c := startSeeded(t)
	stream, err := c.Watch(t.Context(), connect.NewRequest(&v1.WatchRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if !stream.Receive() {
		t.Fatalf("no snapshot: %v", stream.Err())
	}
	if m := stream.Msg(); !m.Snapshot || len(m.Statuses) != 3 {
		t.Fatalf("first message = %v, want the snapshot of 3 objects", m)
	}
	if _, err := d.fake.ApplyPort(t.Context(), "br0", model.Port{Name: "p2", Interfaces: []model.Interface{{Name: "p2"}}}); err != nil {
		t.Fatal(err)
	}
	if !stream.Receive() {
		t.Fatalf("no change: %v", stream.Err())
	}
	if m := stream.Msg(); m.Snapshot || len(m.Statuses) != 2 || m.Statuses[0].Key != "port/p2" {
		t.Fatalf("change = %v, want port/p2 and interface/p2", m)
	}
	if err := d.fake.DeletePort(t.Context(), "p2"); err != nil {
		t.Fatal(err)
	}
	if !stream.Receive() || stream.Msg().Statuses[0].State != v1.State_STATE_REMOVED {
		t.Fatalf("deletion not streamed as removed: %v %v", stream.Msg(), stream.Err())
	}
	if err := d.stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if stream.Receive() {
		t.Fatalf("message after the server stopped: %v", stream.Msg())
	}
	if err := stream.Err(); err != nil {
		t.Errorf("stream ended with %v, want a clean end", err)
	}
	if _, err := os.Stat(d.sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket %s still there after shutdown: %v", d.sock, err)
	}
}

func TestWatchDropsSlowSubscriber(t *testing.T) {
	d := startDaemon(t, config.API{Listen: []string{"unix:SOCK"}})
	seed(t, d)
	// Stall the stream: ask for the snapshot, then read nothing while far more changes than
	// the fake buffers (and than HTTP/2 flow control lets through) happen.
	stream, err := dial(t, d.addrs[0]).Watch(t.Context(), connect.NewRequest(&v1.WatchRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if !stream.Receive() {
		t.Fatal(stream.Err())
	}
	ext := map[string]string{"pad": strings.Repeat("z", 1024)}
	for i := range 2000 {
		if _, err := d.fake.ApplyPort(t.Context(), "br0", model.Port{Name: fmt.Sprintf("q%d", i), ExternalIDs: ext, Interfaces: []model.Interface{{Name: fmt.Sprintf("q%d", i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	for stream.Receive() {
	}
	if connect.CodeOf(stream.Err()) != connect.CodeResourceExhausted {
		t.Errorf("slow watcher ended with %v, want ResourceExhausted", stream.Err())
	}
}

func TestWaitReady(t *testing.T) {
	d, c := startSeeded(t)
	d.fake.SetPending("port/p1", true)

	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(100*time.Millisecond, cancel)
		_, err := c.WaitReady(ctx, connect.NewRequest(&v1.WaitReadyRequest{Keys: []string{"port/p1"}}))
		if connect.CodeOf(err) != connect.CodeCanceled {
			t.Errorf("canceled WaitReady: %v, want Canceled", err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		_, err := c.WaitReady(ctx, connect.NewRequest(&v1.WaitReadyRequest{Keys: []string{"port/p1"}}))
		if connect.CodeOf(err) != connect.CodeDeadlineExceeded {
			t.Errorf("WaitReady past its deadline: %v, want DeadlineExceeded", err)
		}
	})
	t.Run("becomes ready", func(t *testing.T) {
		time.AfterFunc(100*time.Millisecond, func() { d.fake.SetPending("port/p1", false) })
		got, err := c.WaitReady(t.Context(), connect.NewRequest(&v1.WaitReadyRequest{Keys: []string{"port/p1"}}))
		if err != nil || got.Msg.Statuses[0].State != v1.State_STATE_READY {
			t.Errorf("WaitReady = %v, %v", got, err)
		}
	})
	t.Run("error state is aborted", func(t *testing.T) {
		if _, err := d.fake.ApplyPort(t.Context(), "br0", model.Port{Name: "bad", Interfaces: []model.Interface{{Name: "bad",
			Options: map[string]string{apitest.RefuseOption: "could not add network device bad to ofproto (No such device)"}}}}); err != nil {
			t.Fatal(err)
		}
		_, err := c.WaitReady(t.Context(), connect.NewRequest(&v1.WaitReadyRequest{Keys: []string{"port/p1", "interface/bad"}}))
		if connect.CodeOf(err) != connect.CodeAborted || !strings.Contains(err.Error(), "interface/bad") || !strings.Contains(err.Error(), "No such device") {
			t.Errorf("WaitReady on an interface in error: %v, want Aborted naming it", err)
		}
	})
	t.Run("bad keys", func(t *testing.T) {
		for _, keys := range [][]string{nil, {"p1"}, {"port/"}, {"switch/p1"}} {
			_, err := c.WaitReady(t.Context(), connect.NewRequest(&v1.WaitReadyRequest{Keys: keys}))
			if connect.CodeOf(err) != connect.CodeInvalidArgument {
				t.Errorf("WaitReady(%q): %v, want InvalidArgument", keys, err)
			}
		}
	})
	t.Run("server stops", func(t *testing.T) {
		d.fake.SetPending("port/p1", true)
		time.AfterFunc(100*time.Millisecond, func() { _ = d.stop() })
		_, err := c.WaitReady(t.Context(), connect.NewRequest(&v1.WaitReadyRequest{Keys: []string{"port/p1"}}))
		if connect.CodeOf(err) != connect.CodeUnavailable || !strings.Contains(err.Error(), "shutting down") {
			t.Errorf("WaitReady while the server stops: %v, want Unavailable", err)
		}
		// Like every Unavailable, with the retry hint.
		var ce *connect.Error
		hinted := false
		if errors.As(err, &ce) {
			for _, detail := range ce.Details() {
				if v, derr := detail.Value(); derr == nil {
					ri, ok := v.(*errdetails.RetryInfo)
					hinted = hinted || ok && ri.GetRetryDelay().AsDuration() == apiserver.RetryDelay
				}
			}
		}
		if !hinted {
			t.Errorf("WaitReady while the server stops: %v, want a google.rpc.RetryInfo of %v", err, apiserver.RetryDelay)
		}
	})
}

func TestUnixSocketModeAndGroup(t *testing.T) {
	group := "daemon" // exists on Debian; root may give a file to any group
	if os.Geteuid() != 0 {
		g, err := user.LookupGroupId(strconv.Itoa(os.Getegid()))
		if err != nil {
			t.Fatal(err)
		}
		group = g.Name
	}
	grp, err := user.LookupGroup(group)
	if err != nil {
		t.Fatalf("group %s: %v", group, err)
	}
	wantGID, _ := strconv.Atoi(grp.Gid)
	for _, tc := range []struct{ mode, group string }{{"0640", group}, {"660", grp.Gid}} {
		t.Run(tc.mode+"/"+tc.group, func(t *testing.T) {
			d := startDaemon(t, config.API{Listen: []string{"unix:SOCK"}, SocketMode: tc.mode, SocketGroup: tc.group})
			fi, err := os.Stat(d.sock)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := strconv.ParseUint(tc.mode, 8, 32)
			if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != os.FileMode(want) {
				t.Errorf("socket mode = %v, want socket %#o", fi.Mode(), want)
			}
			if gid := int(fi.Sys().(*syscall.Stat_t).Gid); gid != wantGID {
				t.Errorf("socket group = %d, want %d (%s)", gid, wantGID, group)
			}
		})
	}
	t.Run("unknown group", func(t *testing.T) {
		srv := apiserver.New(apitest.New(), apiserver.Options{})
		sock := filepath.Join(t.TempDir(), "s.sock")
		err := srv.Serve(t.Context(), config.API{Listen: []string{"unix:" + sock}, SocketGroup: "no-such-group-ovsplane"})
		if err == nil || !strings.Contains(err.Error(), "api.socket_group") || !strings.Contains(err.Error(), "does not exist") {
			t.Errorf("Serve with an unknown group: %v, want an error naming api.socket_group", err)
		}
		if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("socket created despite the error: %v", err)
		}
	})
}

func TestStaleSocketReplacedLiveOneKept(t *testing.T) {
	dir, err := os.MkdirTemp("", "ovsplane-api")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s.sock")
	// A crashed daemon's socket: the file stays, nobody accepts.
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()

	listening := make(chan string, 1)
	srv := apiserver.New(apitest.New(), apiserver.Options{OnListen: func(a string) { listening <- a }})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, config.API{Listen: []string{"unix:" + sock}}) }()
	select {
	case <-listening:
	case err := <-done:
		t.Fatalf("Serve over a stale socket: %v", err)
	}
	// A second server on the same live socket must refuse, leaving the first one's in place.
	err = apiserver.New(apitest.New(), apiserver.Options{}).Serve(t.Context(), config.API{Listen: []string{"unix:" + sock}})
	if err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("second Serve on a live socket: %v, want an 'in use' error", err)
	}
	if _, err := dial(t, "unix:"+sock).Health(t.Context(), connect.NewRequest(&v1.HealthRequest{})); err != nil {
		t.Errorf("first server unreachable after the second one failed: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	// A regular file is never removed.
	if err := os.WriteFile(sock, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	err = apiserver.New(apitest.New(), apiserver.Options{}).Serve(t.Context(), config.API{Listen: []string{"unix:" + sock}})
	if err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("Serve over a regular file: %v", err)
	}
	if b, _ := os.ReadFile(sock); !bytes.Equal(b, []byte("data")) {
		t.Error("the regular file was changed")
	}
}

func TestClientReportsDaemonNotRunning(t *testing.T) {
	c := dial(t, "unix:"+filepath.Join(t.TempDir(), "absent.sock"))
	_, err := c.Health(t.Context(), connect.NewRequest(&v1.HealthRequest{}))
	if !errors.Is(err, client.ErrUnreachable) || connect.CodeOf(err) != connect.CodeUnavailable || !strings.Contains(err.Error(), "absent.sock") {
		t.Errorf("call to a missing socket: %v, want Unavailable matching ErrUnreachable and naming the socket", err)
	}
}
