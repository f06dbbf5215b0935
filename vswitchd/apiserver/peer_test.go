package apiserver_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"connectrpc.com/connect"

	"github.com/ovsplane/ovsplane/api/client"
	v1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/vswitchd/apiserver"
	"github.com/ovsplane/ovsplane/vswitchd/config"
)

// envHelper makes the test binary a client: TestPeerHelperProcess dials the socket it names
// and prints one "RESULT <call> <code>" line per call of envCalls.
const (
	envHelper = "APISERVER_PEER_HELPER_SOCKET"
	envCalls  = "APISERVER_PEER_HELPER_CALLS"
)

// TestPeerHelperProcess is not a test: it is the client that TestUnixPeerRoles runs under
// other uids. Without its environment it does nothing.
func TestPeerHelperProcess(t *testing.T) {
	sock := os.Getenv(envHelper)
	if sock == "" {
		return
	}
	c, err := client.Dial("unix:" + sock)
	if err != nil {
		fmt.Printf("RESULT dial %v\n", err)
		return
	}
	defer c.Close()
	ctx := context.Background()
	for _, call := range strings.Split(os.Getenv(envCalls), ",") {
		var err error
		switch call {
		case "ListStatus":
			_, err = c.ListStatus(ctx, connect.NewRequest(&v1.ListStatusRequest{}))
		case "ApplyBridge":
			_, err = c.ApplyBridge(ctx, connect.NewRequest(&v1.ApplyBridgeRequest{Bridge: &v1.Bridge{Name: fmt.Sprintf("br-%d", os.Getuid())}}))
		default:
			err = fmt.Errorf("unknown call %q", call)
		}
		code := "ok"
		switch {
		case errors.Is(err, client.ErrUnreachable):
			code = "unreachable"
		case err != nil:
			code = connect.CodeOf(err).String()
		}
		fmt.Printf("RESULT %s %s %s\n", call, code, strings.ReplaceAll(fmt.Sprint(err), "\n", " "))
	}
}

// callAs runs the calls against sock from a process with the given credentials and returns
// call → "code message".
func callAs(t *testing.T, helper, sock string, cred *syscall.Credential, calls ...string) map[string]string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), helper, "-test.run=^TestPeerHelperProcess$", "-test.count=1")
	cmd.Env = []string{envHelper + "=" + sock, envCalls + "=" + strings.Join(calls, ","), "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Dir = filepath.Dir(helper)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper as uid %d: %v\n%s", cred.Uid, err, out)
	}
	res := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "RESULT "); ok {
			call, result, _ := strings.Cut(rest, " ")
			res[call] = result
		}
	}
	if len(res) == 0 {
		t.Fatalf("helper as uid %d printed no result:\n%s", cred.Uid, out)
	}
	return res
}

// copyHelper copies the test binary where other uids may run it (go test's build directory
// is private to root).
func copyHelper(t *testing.T, dir string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	path := filepath.Join(dir, "apiserver-helper")
	dst, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// Unix callers are identified by the kernel (SO_PEERCRED, SO_PEERGROUPS) and get their role
// from api.auth and api.socket_group; the socket in a 0750 root-owned directory — the default
// data dir — is reachable by socket_group's members and by nobody else. Runs real processes
// under other uids, so it needs root.
func TestUnixPeerRoles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: runs clients under other uids (setuid); as root it runs")
	}
	const (
		group      = 48620 // api.socket_group, numeric: no /etc/group entry needed
		adminGroup = 48621
		member     = 48630 // in group only: reader
		outsider   = 48631 // in no group: cannot reach the socket
		adminUID   = 48632 // in group, and listed in api.auth.admins.uids
		adminByGID = 48633 // in group and adminGroup, listed in api.auth.admins.gids
	)
	base := peerBase(t)
	dataDir := filepath.Join(base, "data")
	if err := os.Mkdir(dataDir, 0o750); err != nil { // as the daemon's main creates data_dir
		t.Fatal(err)
	}
	helper := copyHelper(t, base)
	var audit auditBuffer
	sock := filepath.Join(dataDir, model.SocketName)
	d := startDaemonWith(t, config.API{Listen: []string{"unix:" + sock}, SocketMode: "0660", SocketGroup: fmt.Sprint(group),
		Auth: config.Auth{Admins: config.Principals{UIDs: []int{adminUID}, GIDs: []int{adminGroup}}}},
		apiserver.Options{Audit: auditLogger(&audit)})

	fi, err := os.Stat(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Gid != group || fi.Mode().Perm() != 0o710 {
		t.Errorf("data dir: gid %d mode %#o, want gid %d mode 0710 (search only for socket_group)", st.Gid, fi.Mode().Perm(), group)
	}

	res := callAs(t, helper, sock, &syscall.Credential{Uid: member, Gid: member, Groups: []uint32{group}}, "ListStatus", "ApplyBridge")
	if !strings.HasPrefix(res["ListStatus"], "ok") {
		t.Errorf("socket_group member ListStatus: %s, want ok", res["ListStatus"])
	}
	if r := res["ApplyBridge"]; !strings.HasPrefix(r, "permission_denied") || !strings.Contains(r, fmt.Sprintf("uid %d", member)) ||
		!strings.Contains(r, "api.auth.admins.uids") {
		t.Errorf("socket_group member ApplyBridge: %s, want permission_denied naming uid %d and api.auth.admins.uids", r, member)
	}
	if _, err := d.fake.Bridge(fmt.Sprintf("br-%d", member)); err == nil {
		t.Error("a reader's ApplyBridge was served")
	}

	res = callAs(t, helper, sock, &syscall.Credential{Uid: outsider, Gid: outsider, Groups: []uint32{}}, "ListStatus")
	if r := res["ListStatus"]; !strings.HasPrefix(r, "unreachable") || !strings.Contains(r, "permission denied") {
		t.Errorf("non-member ListStatus: %s, want unreachable (permission denied)", r)
	}

	for _, cred := range []*syscall.Credential{
		{Uid: adminUID, Gid: adminUID, Groups: []uint32{group}},
		{Uid: adminByGID, Gid: adminByGID, Groups: []uint32{group, adminGroup}},
	} {
		res = callAs(t, helper, sock, cred, "ApplyBridge")
		if !strings.HasPrefix(res["ApplyBridge"], "ok") {
			t.Errorf("admin uid %d (groups %v) ApplyBridge: %s, want ok", cred.Uid, cred.Groups, res["ApplyBridge"])
		}
		if _, err := d.fake.Bridge(fmt.Sprintf("br-%d", cred.Uid)); err != nil {
			t.Errorf("admin uid %d: %v", cred.Uid, err)
		}
	}

	for _, want := range []string{
		fmt.Sprintf(`"transport":"unix","uid":%d,"gid":%d`, member, member),
		// A refusal is decided before the body is read: its line names no objects.
		fmt.Sprintf(`"procedure":"/ovsplane.v1.SwitchService/ApplyBridge","transport":"unix","uid":%d,"gid":%d`, member, member),
		`"role":"reader","result":"permission_denied"`,
		fmt.Sprintf(`"uid":%d,"gid":%d`, adminByGID, adminByGID),
		fmt.Sprintf(`"role":"admin","bridge":"br-%d","result":"ok"`, adminByGID),
	} {
		if !strings.Contains(audit.String(), want) {
			t.Errorf("audit log lacks %s:\n%s", want, audit.String())
		}
	}
}

// A unix caller with no role is refused, naming its uid and the keys that would let it in.
func TestUnixPeerWithoutRole(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: runs a client under another uid (setuid); as root it runs")
	}
	base := peerBase(t)
	helper := copyHelper(t, base)
	sock := filepath.Join(base, "api.sock")
	startDaemon(t, config.API{Listen: []string{"unix:" + sock}, SocketMode: "0666"})
	res := callAs(t, helper, sock, &syscall.Credential{Uid: 48640, Gid: 48640, Groups: []uint32{}}, "ListStatus", "ApplyBridge")
	if r := res["ListStatus"]; !strings.HasPrefix(r, "permission_denied") || !strings.Contains(r, "uid 48640") || !strings.Contains(r, "api.auth.readers.uids") {
		t.Errorf("ListStatus by a uid with no role: %s, want permission_denied naming uid 48640 and api.auth.readers.uids", r)
	}
	if r := res["ApplyBridge"]; !strings.HasPrefix(r, "permission_denied") || !strings.Contains(r, "api.auth.admins.uids") {
		t.Errorf("ApplyBridge by a uid with no role: %s, want permission_denied naming api.auth.admins.uids", r)
	}
}

// peerBase makes a short temporary directory that every uid may traverse (0755), for the
// data dirs and helper binaries of the tests that run clients under other uids.
func peerBase(t *testing.T) string {
	t.Helper()
	base := testkit.ShortTempDir(t, "ovsplane-peer")
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	return base
}
