package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/ovsplane/ovsplane/internal/ovsproc"
)

// DPDKMode says whether the sandbox runs the DPDK build of ovs-vswitchd.
type DPDKMode string

// The DPDK modes. The zero value is DPDKAuto.
const (
	// DPDKAuto runs DPDK when ovs-vswitchd-dpdk is installed, the caller is root and enough
	// hugepages are free; otherwise the userspace datapath without DPDK.
	DPDKAuto DPDKMode = "auto"
	// DPDKOn runs DPDK or fails Start, saying what is missing.
	DPDKOn DPDKMode = "on"
	// DPDKOff never runs DPDK.
	DPDKOff DPDKMode = "off"
)

// ParseDPDKMode parses "auto", "on" or "off" (the values of a --sandbox-dpdk flag); "" is
// auto.
func ParseDPDKMode(s string) (DPDKMode, error) {
	switch m := DPDKMode(s); m {
	case "":
		return DPDKAuto, nil
	case DPDKAuto, DPDKOn, DPDKOff:
		return m, nil
	}
	return "", fmt.Errorf("sandbox: DPDK mode %q: want auto, on or off", s)
}

// Defaults of Options and Paths.
const (
	// DefaultSocketMemMB is the dpdk-socket-mem, in MiB, written when the database has none.
	DefaultSocketMemMB = ovsproc.DefaultSocketMemMB
	// DefaultDPDKExtra is the dpdk-extra written when the database has none: no PCI scan, so
	// the sandbox never takes the host's NICs.
	DefaultDPDKExtra = ovsproc.DefaultDPDKExtra
	// DefaultPMDMaxSleepUS is the pmd-maxsleep (µs; OVS 3.1's name) written when the database
	// has none: idle PMD threads sleep instead of spinning.
	DefaultPMDMaxSleepUS = ovsproc.DefaultPMDMaxSleepUS
	// DefaultStartTimeout bounds Start.
	DefaultStartTimeout = 90 * time.Second

	// DefaultSchema is the Open_vSwitch schema Debian installs.
	DefaultSchema = ovsproc.DefaultSchema
	// DefaultVswitchd is Debian's ovs-vswitchd without DPDK (the one in $PATH is an
	// alternatives link that may point to either build).
	DefaultVswitchd = ovsproc.DefaultVswitchd
	// DefaultVswitchdDPDK is Debian's ovs-vswitchd built with DPDK (openvswitch-switch-dpdk).
	DefaultVswitchdDPDK = ovsproc.DefaultVswitchdDPDK
	// DefaultMeminfo is where free hugepages are read.
	DefaultMeminfo = ovsproc.DefaultMeminfo

	// MaxDirLen is the longest Options.Dir accepted: unix socket paths are limited to 107
	// bytes and Dir holds "<bridge>.snoop" sockets for bridge names of up to 15 characters.
	MaxDirLen = 84
)

// Options describes the sandbox to start. Only Dir is required; every other zero value means
// its default.
type Options struct {
	// Dir holds the database, sockets, pidfiles and logs (see the package documentation). It is
	// created (mode 0750) when missing and made absolute; at most MaxDirLen bytes.
	Dir string
	// DPDK chooses the vswitchd build (default DPDKAuto).
	DPDK DPDKMode
	// SocketMemMB is dpdk-socket-mem when the database has none (default DefaultSocketMemMB).
	SocketMemMB int
	// DPDKExtra is dpdk-extra when the database has none (default DefaultDPDKExtra).
	DPDKExtra string
	// DesiredOtherConfig is the Open_vSwitch other_config the caller will write itself once
	// connected (ovsplaned: its configuration's other_config). The sandbox never writes these
	// keys, removes its own earlier defaults for them (the caller's OVSDB layer refuses to take
	// over keys someone else set), and reads dpdk-init and dpdk-socket-mem from here first for
	// its DPDK decision.
	DesiredOtherConfig map[string]string
	// HostNetwork runs ovs-vswitchd in the caller's network namespace instead of a private one.
	HostNetwork bool
	// StartTimeout bounds Start (default DefaultStartTimeout); ctx may end it sooner.
	StartTimeout time.Duration
	// Logger receives what Start decided and did (nil: discarded).
	Logger *slog.Logger
	// Paths overrides the locations of the installed OVS files (zero: Debian's).
	Paths Paths

	// beforeRestart, when set (by this package's tests), is called before every restart
	// attempt of a daemon that exited, with the daemon's name; it may block until ctx ends.
	beforeRestart func(ctx context.Context, name string)
}

// Paths are the files the sandbox uses from the host. ovsdb-tool, ovsdb-server, ovs-vsctl and
// ovs-appctl are looked up in $PATH.
type Paths struct {
	// Schema is the Open_vSwitch schema (default DefaultSchema).
	Schema string
	// Vswitchd is the ovs-vswitchd without DPDK (default DefaultVswitchd, or ovs-vswitchd in
	// $PATH when that does not exist).
	Vswitchd string
	// VswitchdDPDK is the ovs-vswitchd built with DPDK (default DefaultVswitchdDPDK).
	VswitchdDPDK string
	// Meminfo is read for HugePages_Free and Hugepagesize (default DefaultMeminfo).
	Meminfo string
}

// withDefaults validates o and returns it with every default filled in.
func (o Options) withDefaults() (Options, error) {
	if o.Dir == "" {
		return o, errors.New("sandbox: Options.Dir is required")
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return o, fmt.Errorf("sandbox: directory %s: %w", o.Dir, err)
	}
	if len(dir) > MaxDirLen {
		return o, fmt.Errorf("sandbox: directory %s is %d bytes long, more than %d: unix socket paths in it would exceed 107 bytes",
			dir, len(dir), MaxDirLen)
	}
	o.Dir = dir
	if o.DPDK, err = ParseDPDKMode(string(o.DPDK)); err != nil {
		return o, err
	}
	if o.SocketMemMB < 0 {
		return o, fmt.Errorf("sandbox: SocketMemMB %d is negative", o.SocketMemMB)
	}
	if o.SocketMemMB == 0 {
		o.SocketMemMB = DefaultSocketMemMB
	}
	if o.DPDKExtra == "" {
		o.DPDKExtra = DefaultDPDKExtra
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	p := &o.Paths
	p.Schema = orDefault(p.Schema, DefaultSchema)
	p.VswitchdDPDK = orDefault(p.VswitchdDPDK, DefaultVswitchdDPDK)
	p.Meminfo = orDefault(p.Meminfo, DefaultMeminfo)
	if p.Vswitchd == "" {
		p.Vswitchd = DefaultVswitchd
		if _, err := os.Stat(p.Vswitchd); err != nil {
			if found, lerr := exec.LookPath("ovs-vswitchd"); lerr == nil {
				p.Vswitchd = found
			}
		}
	}
	return o, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
