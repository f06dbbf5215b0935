package vdpa

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"path"
	"strconv"
	"strings"
	"time"
)

// Config is what a Host is built from. FS, VDPA and Devlink are required.
type Config struct {
	// FS is the machine's root filesystem (sysfs.New("/") on a host).
	FS FS
	// VDPA is the vdpa netlink family (nlkernel on a host).
	VDPA VDPANetlink
	// Devlink is devlink (nlkernel on a host).
	Devlink Devlink
	// PollInterval is how often waits re-check (default 50ms).
	PollInterval time.Duration
	// CharDevTimeout bounds the wait for /dev/vhost-vdpa-N (default 10s).
	CharDevTimeout time.Duration
	// AppearTimeout bounds waits for kernel objects that appear asynchronously after an action:
	// representors after switchdev, the mgmtdev after a VF binds (default 10s).
	AppearTimeout time.Duration
	// Logger receives one line per action taken (default: discard).
	Logger *slog.Logger
}

// Host discovers and changes one machine's vDPA state. It holds no cache: every call reads the
// live state. Methods are safe for concurrent use only as far as the kernel's own operations are;
// callers serialise provisioning per PF.
type Host struct {
	fs      FS
	vdpa    VDPANetlink
	devlink Devlink
	poll    time.Duration
	charTO  time.Duration
	appear  time.Duration
	log     *slog.Logger
}

// New returns a Host over the given kernel interfaces.
func New(c Config) *Host {
	h := &Host{fs: c.FS, vdpa: c.VDPA, devlink: c.Devlink, poll: c.PollInterval, charTO: c.CharDevTimeout,
		appear: c.AppearTimeout, log: c.Logger}
	if h.poll <= 0 {
		h.poll = 50 * time.Millisecond
	}
	if h.charTO <= 0 {
		h.charTO = 10 * time.Second
	}
	if h.appear <= 0 {
		h.appear = 10 * time.Second
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	return h
}

func (h *Host) readString(p string) string {
	s, err := h.fs.ReadFile(p)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(s)
}

func (h *Host) readInt(p string) (int, error) {
	s, err := h.fs.ReadFile(p)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(s))
}

func (h *Host) exists(p string) bool {
	_, err := h.fs.Stat(p)
	return err == nil
}

// linkBase returns the last element of a link's target ("" when p is not a link).
func (h *Host) linkBase(p string) string {
	t, err := h.fs.ReadLink(p)
	if err != nil {
		return ""
	}
	return path.Base(t)
}

func (h *Host) list(p string) []string {
	names, err := h.fs.ReadDir(p)
	if err != nil {
		return nil
	}
	return names
}

// isCharDev reports whether p exists and is a character device.
func (h *Host) isCharDev(p string) bool {
	fi, err := h.fs.Stat(p)
	return err == nil && fi.Mode()&fs.ModeCharDevice != 0
}

// waitFor polls cond until it holds, ctx ends or timeout passes; it reports whether cond held.
func (h *Host) waitFor(ctx context.Context, timeout time.Duration, cond func() bool) (bool, error) {
	if cond() {
		return true, nil
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(h.poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-deadline.C:
			return cond(), nil
		case <-tick.C:
			if cond() {
				return true, nil
			}
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func notExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
