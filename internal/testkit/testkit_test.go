package testkit

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLogBufferConcurrentWrites(t *testing.T) {
	var b LogBuffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 100 {
				fmt.Fprintf(&b, "{\"w\":%d}\n", i)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	recs, err := b.Records()
	if err != nil || len(recs) != 800 {
		t.Fatalf("Records: %d records, %v", len(recs), err)
	}
}

func TestLogBufferRecordsSkipsAndNamesNonJSON(t *testing.T) {
	var b LogBuffer
	b.Write([]byte("{\"a\":1}\nnot json\n{\"b\":2}\n"))
	recs, err := b.Records()
	if len(recs) != 2 || recs[0]["a"] != 1.0 || recs[1]["b"] != 2.0 {
		t.Errorf("records %v", recs)
	}
	if err == nil || !strings.Contains(err.Error(), `"not json"`) {
		t.Errorf("err %v, want one naming the non-JSON line", err)
	}
}

func TestTail(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{{"abc", 3, "abc"}, {"abcdef", 3, "…def"}, {"", 3, ""}} {
		if got := Tail(c.s, c.n); got != c.want {
			t.Errorf("Tail(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestEventually(t *testing.T) {
	n := 0
	Eventually(t, 5*time.Second, time.Millisecond, func() error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if n != 3 {
		t.Errorf("cond called %d times, want 3", n)
	}
}

func TestEventuallyTrue(t *testing.T) {
	n := 0
	EventuallyTrue(t, 5*time.Second, time.Millisecond, "n to reach 3", func() bool { n++; return n >= 3 })
	if n != 3 {
		t.Errorf("cond called %d times, want 3", n)
	}
}

func TestPIDsFindsThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("no /proc")
	}
	self := os.Getpid()
	if got := PIDs(t, func(pid int) bool { return pid == self }); len(got) != 1 || got[0] != self {
		t.Errorf("PIDs = %v, want [%d]", got, self)
	}
}

func TestShortTempDirFitsASocketPath(t *testing.T) {
	dir := ShortTempDir(t, "tk-")
	if p := filepath.Join(dir, "some-daemon.sock"); len(p) > 107 {
		t.Errorf("socket path %q is %d bytes", p, len(p))
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("stat %s: %v", dir, err)
	}
}

func TestProcStopAndOutput(t *testing.T) {
	p := Start(t, exec.Command("sh", "-c", "echo started; trap 'echo bye; exit 0' TERM; while :; do sleep 0.01; done"))
	Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		if !strings.Contains(p.Out.String(), "started") {
			return fmt.Errorf("output %q", p.Out.String())
		}
		return nil
	})
	if p.Exited() {
		t.Fatal("exited early")
	}
	if !p.Stop(10 * time.Second) {
		t.Fatal("did not stop on SIGTERM")
	}
	if !p.Exited() || !strings.Contains(p.Out.String(), "bye") {
		t.Errorf("exited %v, output %q", p.Exited(), p.Out.String())
	}
}

func TestBuildOnceBuildsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	src := t.TempDir()
	for name, data := range map[string]string{
		"go.mod":  "module example.com/hello\n\ngo 1.21\n",
		"main.go": "package main\n\nfunc main() { println(\"hello\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(src)
	a := BuildOnce(t, ".")
	b := BuildOnce(t, ".")
	if a != b {
		t.Errorf("two builds: %s, %s", a, b)
	}
	out, err := exec.Command(a).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "hello" {
		t.Errorf("running %s: %q %v", a, out, err)
	}
	sum := InstallPlugin(t, ".", filepath.Join(t.TempDir(), "plugins"), "hello")
	if len(sum) != 64 {
		t.Errorf("sum %q", sum)
	}
}
