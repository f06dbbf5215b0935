//go:build linux

package lab

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// PostgresBinDir is where Debian 12's postgresql-15 package installs the server programs
// (outside $PATH); StartPostgres runs initdb, postgres and pg_isready from it.
const PostgresBinDir = "/usr/lib/postgresql/15/bin"

// Fix for a missing PostgreSQL server.
const fixPostgres = "apt-get install -y postgresql-15 (Debian 12's PostgreSQL 15 server; CI installs it)"

// postgresStartTimeout bounds how long the server may take to accept queries.
const postgresStartTimeout = 30 * time.Second

// postgresPort is the port number the server names its socket by; it listens on no TCP port.
const postgresPort = 5432

// Postgres is a private PostgreSQL 15 server in its own temporary directory, reachable only
// through a unix socket there. As root it runs as the postgres system user (postgres refuses
// root), which owns the directory. Its fields are fixed for its lifetime and survive Stop and
// Start, and so does its data.
type Postgres struct {
	// Dir is the private directory; DataDir the cluster (initdb's -D), SockDir the socket's
	// directory and LogPath the server's log. Removed at cleanup.
	Dir, DataDir, SockDir, LogPath string
	// User is the database superuser tests connect as (trust authentication).
	User string

	cred *syscall.Credential
	cmd  *exec.Cmd
	done chan error
}

// StartPostgres creates a cluster in a new temporary directory and starts a server on it,
// waiting until it accepts queries. At cleanup it stops the server and removes the directory,
// logging the tail of the server's log when the test failed. It fails the test (never skips)
// when the PostgreSQL 15 server programs are missing, naming the Debian package.
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	for _, prog := range []string{"initdb", "postgres", "pg_isready"} {
		if _, err := os.Stat(filepath.Join(PostgresBinDir, prog)); err != nil {
			t.Fatalf("lab: PostgreSQL server program %s missing (fix: %s): %v", filepath.Join(PostgresBinDir, prog), fixPostgres, err)
		}
	}
	sweep(t)
	dir, err := os.MkdirTemp("", dirPrefix+ownerTag(os.Getpid())+"-")
	if err != nil {
		t.Fatalf("lab: create PostgreSQL directory: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &Postgres{Dir: dir, DataDir: filepath.Join(dir, "data"), SockDir: dir,
		LogPath: filepath.Join(dir, "postgres.log"), User: "postgres"}
	if os.Geteuid() == 0 {
		p.cred, err = postgresCredential()
		if err != nil {
			t.Fatalf("lab: %v", err)
		}
		if err := os.Chown(dir, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			t.Fatalf("lab: give %s to the postgres user: %v", dir, err)
		}
	}
	t.Cleanup(func() { p.cleanup(t) })

	ctx, cancel := testContext(t, cmdTimeout)
	defer cancel()
	initdb := exec.CommandContext(ctx, filepath.Join(PostgresBinDir, "initdb"), "-D", p.DataDir, "-U", p.User,
		"--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred, Pdeathsig: syscall.SIGKILL}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("lab: initdb %s: %v\n%s", p.DataDir, err, out)
	}
	p.Start(t)
	t.Logf("lab: postgres pid %d on socket dir %s", p.cmd.Process.Pid, p.SockDir)
	return p
}

// postgresCredential returns the postgres system user's ids, to run the server as it.
func postgresCredential() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("postgres refuses to run as root and there is no postgres user to run it as (fix: %s): %w", fixPostgres, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("postgres user has ids %q/%q: want numbers", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// ConnString returns a libpq key/value connection string for database db over the socket.
func (p *Postgres) ConnString(db string) string {
	return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable", p.SockDir, postgresPort, p.User, db)
}

// Running reports whether the server process is running (between Start and Stop).
func (p *Postgres) Running() bool { return p.cmd != nil }

// PID returns the postmaster's process id, 0 while the server is stopped. Its children are
// the server's backends and helpers (for measuring the server's CPU time).
func (p *Postgres) PID() int {
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Start starts the server on the existing cluster and waits until it accepts queries. It fails
// the test if the server is already running or does not come up.
func (p *Postgres) Start(t testing.TB) {
	t.Helper()
	if p.cmd != nil {
		t.Fatalf("lab: postgres in %s is already running", p.Dir)
	}
	logf, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("lab: open postgres log: %v", err)
	}
	defer logf.Close()
	cmd := exec.Command(filepath.Join(PostgresBinDir, "postgres"), "-D", p.DataDir, "-k", p.SockDir,
		"-p", strconv.Itoa(postgresPort), "-c", "listen_addresses=", "-c", "fsync=off",
		"-c", "max_connections=100")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("lab: start postgres: %v", err)
	}
	p.cmd, p.done = cmd, make(chan error, 1)
	go func() { p.done <- cmd.Wait() }()
	WaitFor(t, postgresStartTimeout, "postgres to accept queries", func(ctx context.Context) error {
		select {
		case err := <-p.done:
			p.done <- err
			return fmt.Errorf("postgres exited: %v (log %s)", err, p.LogPath)
		default:
		}
		out, err := exec.CommandContext(ctx, filepath.Join(PostgresBinDir, "pg_isready"), "-q", "-h", p.SockDir,
			"-p", strconv.Itoa(postgresPort), "-U", p.User).CombinedOutput()
		if err != nil {
			return fmt.Errorf("pg_isready: %v %s", err, bytes.TrimSpace(out))
		}
		return nil
	})
}

// Stop shuts the server down (fast shutdown: clients are disconnected, the data is kept) and
// waits for it to exit. Stopping a stopped server does nothing.
func (p *Postgres) Stop(t testing.TB) {
	t.Helper()
	if err := p.stop(); err != nil {
		t.Fatalf("lab: %v", err)
	}
}

// stop is Stop without a test: SIGINT, then SIGKILL after postgresStartTimeout.
func (p *Postgres) stop() error {
	if p.cmd == nil {
		return nil
	}
	cmd := p.cmd
	p.cmd = nil
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		return fmt.Errorf("stop postgres pid %d: %w", cmd.Process.Pid, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(postgresStartTimeout):
		_ = cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("postgres pid %d ignored SIGINT for %s; killed it", cmd.Process.Pid, postgresStartTimeout)
	}
}

// cleanup stops the server and, when t failed, logs the tail of its log.
func (p *Postgres) cleanup(t testing.TB) {
	if err := p.stop(); err != nil {
		t.Errorf("lab: %v", err)
	}
	if t.Failed() {
		if b, err := os.ReadFile(p.LogPath); err == nil {
			t.Logf("lab: tail of %s:\n%s", p.LogPath, b[max(0, len(b)-4000):])
		}
	}
}
