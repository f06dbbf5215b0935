package ovsproc

import "path/filepath"

// Where Debian 12 installs Open vSwitch 3.1 (openvswitch-switch and openvswitch-switch-dpdk).
// Debian installs both vswitchd builds outside $PATH (the ovs-vswitchd in $PATH is an
// alternatives link that may point to either); ovsdb-tool, ovsdb-server, ovs-vsctl and
// ovs-appctl are in $PATH.
const (
	// DefaultSchema is the Open_vSwitch schema.
	DefaultSchema = "/usr/share/openvswitch/vswitch.ovsschema"
	// DefaultVswitchd is ovs-vswitchd without DPDK.
	DefaultVswitchd = "/usr/lib/openvswitch-switch/ovs-vswitchd"
	// DefaultVswitchdDPDK is ovs-vswitchd built with DPDK.
	DefaultVswitchdDPDK = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk"
)

// Open_vSwitch other_config values a private instance writes when it needs them.
const (
	// DefaultSocketMemMB is dpdk-socket-mem, the hugepage memory in MiB DPDK preallocates.
	DefaultSocketMemMB = 512
	// DefaultDPDKExtra is dpdk-extra: no PCI scan, so the instance never takes the host's NICs.
	DefaultDPDKExtra = "--no-pci"
	// DefaultPMDMaxSleepUS is pmd-maxsleep (µs; OVS 3.1's name, later releases call it
	// pmd-sleep-max): an idle PMD thread sleeps instead of spinning a core at 100 %.
	DefaultPMDMaxSleepUS = 1000
)

// The daemons' names, as Spec.Name and as the base name of their files.
const (
	OVSDBServerName = "ovsdb-server"
	VswitchdName    = "ovs-vswitchd"
)

// Layout names the files of a private Open vSwitch confined to Dir: the database conf.db, the
// client socket db.sock and, per daemon, <name>.pid, <name>.ctl (unixctl), <name>.log and
// <name>.out (stdout and stderr). Unix socket paths are limited to 107 bytes, so Dir must be
// short.
type Layout struct {
	Dir string
}

// DBPath returns the database file, Dir/conf.db.
func (l Layout) DBPath() string { return filepath.Join(l.Dir, "conf.db") }

// Sock returns the socket ovsdb-server serves clients on, Dir/db.sock.
func (l Layout) Sock() string { return filepath.Join(l.Dir, "db.sock") }

// Endpoint returns the OVSDB endpoint of Sock, "unix:<Dir>/db.sock".
func (l Layout) Endpoint() string { return "unix:" + l.Sock() }

// Env returns OVS_RUNDIR, OVS_LOGDIR and OVS_DBDIR ("NAME=value") pointing at Dir: without
// them OVS daemons and tools use /var/run/openvswitch. Bridges' OpenFlow sockets
// (<bridge>.mgmt) and vhost-user sockets then land in Dir too.
func (l Layout) Env() []string {
	return []string{"OVS_RUNDIR=" + l.Dir, "OVS_LOGDIR=" + l.Dir, "OVS_DBDIR=" + l.Dir}
}

// daemon returns the Spec of daemon name with its files in Dir, without a command line.
func (l Layout) daemon(name string) Spec {
	base := filepath.Join(l.Dir, name)
	return Spec{Name: name, Env: l.Env(), Pidfile: base + ".pid", Ctl: base + ".ctl",
		Log: base + ".log", Out: base + ".out"}
}

// OVSDBServer returns the Spec of an ovsdb-server serving DBPath on Sock (and on the managers
// the database names), with its pidfile, unixctl socket and log file in Dir and only warnings
// on its console.
func (l Layout) OVSDBServer() Spec {
	s := l.daemon(OVSDBServerName)
	s.Argv = []string{"ovsdb-server", l.DBPath(),
		"--remote=punix:" + l.Sock(),
		"--remote=db:Open_vSwitch,Open_vSwitch,manager_options",
		"--pidfile=" + s.Pidfile, "--unixctl=" + s.Ctl, "--log-file=" + s.Log,
		"-vconsole:warn"}
	return s
}

// Vswitchd returns the Spec of the ovs-vswitchd at binary (DefaultVswitchd,
// DefaultVswitchdDPDK…) connecting to Endpoint, with its pidfile, unixctl socket and log file
// in Dir, only warnings on its console, and extra appended to the command line (DummyArgs…).
func (l Layout) Vswitchd(binary string, extra ...string) Spec {
	s := l.daemon(VswitchdName)
	s.Argv = append([]string{binary, l.Endpoint(),
		"--pidfile=" + s.Pidfile, "--unixctl=" + s.Ctl, "--log-file=" + s.Log,
		"-vconsole:warn"}, extra...)
	return s
}

// DummyArgs returns the ovs-vswitchd flags that turn every netdev into a dummy and keep the
// daemon off the host's devices and routes: any number of ports get an ofport, for
// control-plane work without devices.
func DummyArgs() []string {
	return []string{"--enable-dummy=override", "--disable-system", "--disable-system-route"}
}
