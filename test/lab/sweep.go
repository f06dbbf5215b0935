//go:build linux

package lab

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ovsplane/ovsplane/internal/ovsproc"
)

// Name prefixes of what the lab creates. Every name carries its owner's tag (ownerTag), so a
// later test process can tell leftovers of a dead one (killed by -timeout before its cleanups
// ran) from what a live one still uses.
const (
	netnsPrefix = "ovlns"  // + tag + 8 random characters
	vethPrefix  = "ovl"    // + tag + 6 random characters + "a"/"b"
	dirPrefix   = "ovslab" // + tag + "-" + os.MkdirTemp's random suffix
	tagLen      = 5
	vethNameLen = len(vethPrefix) + tagLen + 6 + 1
)

// ownerTag returns pid in base 36, zero-padded to 5 characters (pid_max is at most 2^22).
func ownerTag(pid int) string {
	s := strconv.FormatInt(int64(pid), 36)
	if len(s) < tagLen {
		s = strings.Repeat("0", tagLen-len(s)) + s
	}
	return s
}

// ownerGone reports whether the process whose tag is given no longer exists. Tags it cannot
// parse count as alive, so the sweep leaves such names alone.
func ownerGone(tag string) bool {
	pid, err := strconv.ParseInt(tag, 36, 64)
	if err != nil || pid <= 0 {
		return false
	}
	_, err = os.Stat("/proc/" + strconv.FormatInt(pid, 10))
	return os.IsNotExist(err)
}

// randomChars returns n (at most 8) random lower-case base32 characters.
func randomChars(n int) string {
	var b [5]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux.
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))[:n]
}

// sweep removes the namespaces, veths of the test's namespace and temporary directories that
// lab processes which no longer exist left behind, logging each. It reads directories only,
// so it is cheap when there is nothing to remove; failures are logged and ignored.
func sweep(t testing.TB) {
	t.Helper()
	ctx, cancel := testContext(t, cmdTimeout)
	defer cancel()
	for _, name := range dirNames(netnsDir) {
		if strings.HasPrefix(name, netnsPrefix) && len(name) > len(netnsPrefix)+tagLen &&
			ownerGone(name[len(netnsPrefix):][:tagLen]) {
			sweepNetns(ctx, t, name)
		}
	}
	for _, name := range dirNames("/sys/class/net") {
		if strings.HasPrefix(name, vethPrefix) && len(name) == vethNameLen &&
			ownerGone(name[len(vethPrefix):][:tagLen]) {
			t.Logf("lab: removing veth %s of a dead test process", name)
			_, _, _ = ovsproc.Run(ctx, nil, "ip", "link", "del", "dev", name)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*-*"))
	for _, dir := range dirs {
		tag := strings.TrimPrefix(filepath.Base(dir), dirPrefix)
		if len(tag) > tagLen && tag[tagLen] == '-' && ownerGone(tag[:tagLen]) {
			t.Logf("lab: removing %s of a dead test process", dir)
			_ = os.RemoveAll(dir)
		}
	}
}

// sweepNetns kills what still runs in a dead process's namespace and deletes it.
func sweepNetns(ctx context.Context, t testing.TB, name string) {
	t.Helper()
	t.Logf("lab: removing netns %s of a dead test process", name)
	if out, _, err := ovsproc.Run(ctx, nil, "ip", "netns", "pids", name); err == nil {
		for _, f := range strings.Fields(out) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	_, _, _ = ovsproc.Run(ctx, nil, "ip", "netns", "del", name)
}

// dirNames lists the names in dir, or nothing when it cannot be read.
func dirNames(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names
}
