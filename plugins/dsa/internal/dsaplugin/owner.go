package dsaplugin

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/ovsplane/ovsplane/dsa"
)

// maxPasswdBytes bounds the passwd file lookupPasswd reads.
const maxPasswdBytes = 4 << 20

// lookupPasswd finds user in a passwd(5) file and returns its uid and primary gid.
func lookupPasswd(r io.Reader, user string) (*dsa.Owner, error) {
	sc := bufio.NewScanner(io.LimitReader(r, maxPasswdBytes))
	for sc.Scan() {
		f := strings.Split(sc.Text(), ":")
		if len(f) < 4 || f[0] != user {
			continue
		}
		uid, err1 := strconv.Atoi(f[2])
		gid, err2 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("user %q: malformed passwd entry", user)
		}
		return &dsa.Owner{UID: uid, GID: gid, Name: user}, nil
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("look up user %q: %w", user, err)
	}
	return nil, fmt.Errorf("no user %q in the passwd file: create it or give uid:gid", user)
}

// vswitchdOwner returns the owner of ovs-vswitchd's pidfile in runDir, the user ovs-vswitchd
// runs as (it writes the file after dropping privileges with --user), or nil when there is no
// pidfile to look at.
func vswitchdOwner(runDir string) *dsa.Owner {
	if runDir == "" {
		return nil
	}
	fi, err := os.Stat(filepath.Join(runDir, "ovs-vswitchd.pid"))
	if err != nil {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	return &dsa.Owner{UID: int(st.Uid), GID: int(st.Gid), Name: fmt.Sprintf("%d:%d", st.Uid, st.Gid)}
}

// OVSOwner is the OVS user the configuration names (ovs.user), else the one ovs-vswitchd's
// pidfile in runDir tells, else nil: then the work queues' device nodes are not chowned or
// chmodded at all and keep the owner and mode the kernel gave them (root, 0600 on stock
// kernels), which a non-root ovs-vswitchd cannot open. The plugin and --plan both use it.
func OVSOwner(cfg Config, runDir string) (*dsa.Owner, error) { return ovsOwner(cfg, runDir) }

// ovsOwner is OVSOwner.
func ovsOwner(cfg Config, runDir string) (*dsa.Owner, error) {
	if cfg.OVS.User != "" {
		return parseUser(cfg.Root, cfg.OVS.User)
	}
	return vswitchdOwner(runDir), nil
}
