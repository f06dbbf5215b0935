package dsaplugin

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/dsa"
	"github.com/ovsplane/ovsplane/dsa/simidxd"
	"github.com/ovsplane/ovsplane/internal/sysfs"
)

// Machine is the kernel the plugin provisions: the dsa library's FS over a root directory or
// over a simulated idxd kernel.
type Machine struct {
	FS dsa.FS
	// Simulated is the simulated kernel's directory; "" for a real root.
	Simulated string
}

// OpenMachine opens the machine cfg names: with cfg.Simulate the simulated idxd kernel in that
// directory (dsa/simidxd.Open), logging loudly that no hardware is touched; otherwise sysfs
// below cfg.Root.
func OpenMachine(cfg Config, log *slog.Logger) (*Machine, error) {
	if cfg.Simulate == "" {
		return &Machine{FS: sysfs.New(cfg.Root)}, nil
	}
	sim, err := simidxd.Open(cfg.Simulate)
	if err != nil {
		return nil, fmt.Errorf("simulate: open the simulated idxd kernel in %s: %w", cfg.Simulate, err)
	}
	if log != nil {
		log.Warn("SIMULATION MODE: DSA devices are provisioned in a simulated idxd kernel; NO HARDWARE IS TOUCHED and no copy is offloaded",
			"tree", cfg.Simulate)
	}
	return &Machine{FS: sim, Simulated: cfg.Simulate}, nil
}

// PauseEnv is a testing hook, honoured only on a simulated machine (config simulate) and
// inert on a real one: "K:FILE" makes the plugin, after its K-th successful write to the
// simulated kernel, create FILE holding its process id and stop there (it waits until it is
// killed, at most PauseMax) — unless FILE exists already, so a restarted plugin runs through.
// The kill -9 test uses it to kill the plugin in the middle of an apply. The plugin's entry in
// the daemon's config must list it under env for the plugin to see it.
const PauseEnv = "OVSPLANE_DSA_TEST_PAUSE"

// PauseMax bounds the wait of the PauseEnv hook; the write then fails.
const PauseMax = 2 * time.Minute

// parsePause parses PauseEnv's value.
func parsePause(v string) (after int, file string, err error) {
	k, file, ok := strings.Cut(v, ":")
	n, nerr := strconv.Atoi(k)
	if !ok || nerr != nil || n < 1 || file == "" || !strings.HasPrefix(file, "/") {
		return 0, "", fmt.Errorf("%s=%q: want K:/absolute/marker-file with K >= 1", PauseEnv, v)
	}
	return n, file, nil
}

// pausingFS is a dsa.FS that stops after its K-th write (see PauseEnv).
type pausingFS struct {
	dsa.FS
	after int
	file  string
	log   *slog.Logger

	mu     sync.Mutex
	writes int
}

// withPause wraps m's FS with the PauseEnv hook spec when m is simulated; on a real machine it
// logs that the hook is ignored and returns m as it is.
func withPause(m *Machine, spec string, log *slog.Logger) (*Machine, error) {
	if spec == "" {
		return m, nil
	}
	if m.Simulated == "" {
		log.Warn("ignoring the testing hook: it only acts on a simulated machine", "env", PauseEnv)
		return m, nil
	}
	after, file, err := parsePause(spec)
	if err != nil {
		return nil, err
	}
	return &Machine{FS: &pausingFS{FS: m.FS, after: after, file: file, log: log}, Simulated: m.Simulated}, nil
}

func (p *pausingFS) WriteFile(path, value string) error {
	if err := p.FS.WriteFile(path, value); err != nil {
		return err
	}
	p.mu.Lock()
	p.writes++
	n := p.writes
	p.mu.Unlock()
	if n != p.after {
		return nil
	}
	f, err := os.OpenFile(p.file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil // paused before: run through
	}
	if err != nil {
		return fmt.Errorf("%s: %w", PauseEnv, err)
	}
	_, err = fmt.Fprintf(f, "%d\n", os.Getpid())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", PauseEnv, err)
	}
	p.log.Warn("testing hook: paused after a write to the simulated kernel, waiting to be killed", "env", PauseEnv, "writes", n, "last", path)
	time.Sleep(PauseMax)
	return fmt.Errorf("write %s: held %v by the %s testing hook", path, PauseMax, PauseEnv)
}
