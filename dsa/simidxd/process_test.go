package simidxd_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ovsplane/ovsplane/dsa/simidxd"
)

// helperEnv makes the test binary act as another process using the simulator (see TestMain).
const helperEnv = "SIMIDXD_TEST_HELPER_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		os.Exit(helper(dir))
	}
	os.Exit(m.Run())
}

// helper configures and enables dsa0 and wq0.0 in dir, then takes the simulator's lock as a
// process inside a write would, says "ready" and waits to be killed.
func helper(dir string) int {
	s, err := simidxd.Open(dir)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	for _, w := range [][2]string{
		{devs + "engine0.0/group_id", "0"}, {devs + "wq0.0/group_id", "0"}, {devs + "wq0.0/mode", "dedicated"},
		{devs + "wq0.0/type", "user"}, {devs + "wq0.0/name", "dpdk_wq0.0"}, {devs + "wq0.0/size", "32"},
		{devs + "wq0.0/driver_name", "user"}, {drivers + "idxd/bind", "dsa0"}, {drivers + "user/bind", "wq0.0"},
	} {
		if err := s.WriteFile(w[0], w[1]); err != nil {
			fmt.Println(err)
			return 1
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, ".simidxd", "lock"), os.O_RDWR, 0)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("ready")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until killed
	return 0
}

// TestKilledProcess has another process change the tree and die by SIGKILL while holding the
// lock: this process sees its writes, and the kernel's release of the lock lets it carry on.
func TestKilledProcess(t *testing.T) {
	s := boot(t, simidxd.SPR)
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+s.Dir())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stdin.Close() }()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper process: %q %v", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("the helper process was not killed")
	}
	want(t, s, devs+"dsa0/state", "enabled")
	want(t, s, devs+"wq0.0/state", "enabled")
	if fi, err := s.Stat("dev/dsa/wq0.0"); err != nil || fi.Size() != 4096 {
		t.Fatalf("dev/dsa/wq0.0: %v %v", fi, err)
	}
	do(t, s, drivers+"user/unbind=wq0.0", drivers+"idxd/unbind=dsa0")
	want(t, s, devs+"wq0.0/size", "0")
}

// TestEnsure writes a host once and reopens it with its state afterwards.
func TestEnsure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "host")
	s, err := simidxd.Ensure(dir, simidxd.NoPASID)
	if err != nil {
		t.Fatal(err)
	}
	do(t, s, devs+"wq0.0/size=8")
	again, err := simidxd.Ensure(dir, simidxd.NoPASID)
	if err != nil {
		t.Fatal(err)
	}
	want(t, again, devs+"wq0.0/size", "8")
	if _, err := simidxd.Ensure(dir, simidxd.SPR); err == nil {
		t.Error("Ensure reopened a no-pasid host as spr")
	}
	wantErrno(t, "write into the simulator's state", s.WriteFile(".simidxd/spec.json", "{}"), syscall.EACCES)
	wantErrno(t, "write to dev/vfio/vfio", s.WriteFile("dev/vfio/vfio", "x"), syscall.EINVAL)
}

// TestLinksOutOfTheRoot checks that a link planted in the tree does not lead the simulator out.
func TestLinksOutOfTheRoot(t *testing.T) {
	s := boot(t, simidxd.SPR)
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(s.Dir(), "dev/dsa/wq0.0")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadFile("dev/dsa/wq0.0"); !errors.Is(err, syscall.EACCES) {
		t.Errorf("read through a link out of the root: %v", err)
	}
	if err := s.Chmod("dev/dsa/wq0.0", 0o666); !errors.Is(err, syscall.EACCES) {
		t.Errorf("chmod through a link out of the root: %v", err)
	}
	if _, err := s.Stat("dev/dsa/wq0.0"); !errors.Is(err, syscall.EACCES) {
		t.Errorf("stat through a link out of the root: %v", err)
	}
	wantErrno(t, "write through a link out of the root", s.WriteFile("dev/dsa/wq0.0", "1"), syscall.EACCES)
	if fi, err := os.Stat(outside); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the outside file changed: %v %v", fi, err)
	}
}

// TestDamagedSpec checks that Open refuses a spec with absurd values.
func TestDamagedSpec(t *testing.T) {
	s := boot(t, simidxd.SPR)
	file := filepath.Join(s.Dir(), ".simidxd", "spec.json")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{`"wqs": 100000000`, `"bdf": "../../etc"`, `"variant": "icelake"`} {
		key, _, _ := strings.Cut(bad, ":")
		lines := strings.Split(string(b), "\n")
		for i, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), key+":") {
				lines[i] = "  " + bad + map[bool]string{true: ",", false: ""}[strings.HasSuffix(l, ",")]
			}
		}
		if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := simidxd.Open(s.Dir()); err == nil {
			t.Errorf("Open accepted a spec with %s", bad)
		}
		if err := os.WriteFile(file, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := simidxd.Open(s.Dir()); err != nil {
		t.Errorf("the restored spec: %v", err)
	}
}
