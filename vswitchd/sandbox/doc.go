// Package sandbox runs a private, real Open vSwitch for ovsplaned: one ovsdb-server and one
// ovs-vswitchd (the DPDK build when possible) confined to a directory of their own, as children
// of the daemon. It is what `ovsplaned --sandbox` (and `make run` as root) uses to give a
// newcomer a switch that really forwards packets without touching the host's Open vSwitch.
//
//	sb, err := sandbox.Start(ctx, sandbox.Options{Dir: "/tmp/ovsplane-run/sandbox"})
//	if err != nil { … }
//	defer sb.Close(context.WithoutCancel(ctx))
//	endpoints := []string{sb.Endpoint()} // unix:/tmp/ovsplane-run/sandbox/db.sock
//	log.Info("sandbox", "ovs", sb.Describe())
//
// # The directory
//
// Everything lives in Options.Dir: the database conf.db (created from the installed schema
// the first time, kept afterwards, so a restart finds the bridges and ports of the previous
// run; converted with `ovsdb-tool convert` when an OVS upgrade changed the schema), the
// client socket db.sock, and per daemon a pidfile, a unixctl socket, a log file and a file
// with its stdout/stderr. The processes run with OVS_RUNDIR, OVS_DBDIR, OVS_LOGDIR and
// OVS_SYSCONFDIR pointing at Dir, so nothing of the host's /var/run/openvswitch or /etc is
// read or written; bridges' OpenFlow sockets (<bridge>.mgmt) and vhost-user sockets land in
// Dir too. Unix socket paths are limited to 107 bytes, so Dir is limited to MaxDirLen bytes.
//
// # DPDK
//
// Options.DPDK is auto (the zero value), on or off. Auto runs ovs-vswitchd-dpdk when that
// build is installed (Debian's openvswitch-switch-dpdk), the caller is root and enough
// hugepages are free for dpdk-socket-mem (HugePages_Free × Hugepagesize in /proc/meminfo, the
// default page size only); otherwise the plain userspace datapath. On fails instead of falling
// back, saying what is missing. The sandbox never reserves hugepages itself: that is host policy
// (vm.nr_hugepages, or `make test`'s lab setup).
//
// Start fills in the other_config keys a sandbox needs — pmd-maxsleep (an idle PMD thread then
// sleeps instead of spinning a core at 100 %) and, with DPDK, dpdk-init=true, dpdk-socket-mem
// (Options.SocketMemMB) and dpdk-extra (Options.DPDKExtra, "--no-pci": a sandbox must not take
// the host's NICs) — but only where the database has no value and the caller's
// Options.DesiredOtherConfig does not name the key. ovsplaned's OVSDB layer refuses to take over
// keys someone else set, so the keys the sandbox writes are listed in the Open_vSwitch row's
// external_ids:sandbox-other-config, and a later Start removes those the desired state has
// come to name: the daemon then writes its own values, which ovs-vswitchd reads when DPDK
// initialises. The DPDK decision takes dpdk-init and dpdk-socket-mem from the desired state
// first, then from the database (dpdk-init=false means no DPDK). When dpdk-init=true is in the
// database as ovs-vswitchd starts, Start waits for dpdk_initialized=true; when it is left to
// the caller (first start with the daemon's configuration), DPDK initialises once the caller
// writes it, and Describe says so.
//
// # Network namespace
//
// ovs-vswitchd runs in a network namespace of its own (an anonymous one, created with
// CLONE_NEWNET for the process) unless Options.HostNetwork is set. The userspace datapath
// creates a tap device "ovs-netdev" and one per bridge and internal port; in the host's
// namespace these would clutter `ip link`, clash with a host Open vSwitch or another sandbox
// using the userspace datapath (a second "ovs-netdev" fails with "Device or resource busy"),
// and, since OVS makes them persistent, outlive a vswitchd killed with -9. An anonymous
// namespace lives exactly as long as the vswitchd: its devices vanish with it, and no name is
// left behind in /run/netns. Unix sockets (OVSDB, vhost-user, OpenFlow management) are files
// and work across namespaces, so the daemon, ovs-vsctl, ovs-ofctl and VMs are unaffected. To
// give the switch a host interface, move it in: `ip link set DEV netns <pid>`, with the pid
// Describe prints; to look inside: `nsenter -t <pid> -n ip link`. The namespace's loopback is
// left down. HostNetwork runs the vswitchd in the caller's namespace instead (its taps appear
// on the host; Close removes them with `exit --cleanup`). The private namespace needs root.
//
// # Lifetime, crashes and stale processes
//
// Both daemons are children of the calling process, in their own process group (a Ctrl-C in
// the terminal reaches the daemon, which stops them in order, not the daemons directly), with
// a parent-death signal (SIGKILL), so they die when ovsplaned is killed with -9. The kernel
// sends that signal when the thread that forked the child exits, not the process, so each
// child is started and waited for on a goroutine locked to its OS thread.
//
// Start takes an exclusive flock on Dir/sandbox.lock and holds it until Close; the kernel
// releases it when the process dies however it dies. A Start that finds it held for 2 s (a
// process forking meanwhile holds a copy of it until it execs) fails with ErrInUse (another
// ovsplaned runs this sandbox; nothing is touched). A Start that gets it
// knows that no live sandbox owns Dir, so ovsdb-server or ovs-vswitchd processes still named
// in Dir's pidfiles are leftovers of a crashed run (say, started by hand, or surviving a parent
// that could not deliver its death signal): Start kills them (SIGTERM, then SIGKILL) and logs
// it, rather than refusing, so that a supervisor's restart after a crash works without an
// operator. A process counts as the sandbox's only when its command line carries the very
// --pidfile= argument the sandbox passes, so a recycled pid of an unrelated program is never
// signalled. Start then waits (at most 10 s) until nobody holds the fcntl lock OVS keeps on each
// pidfile: a daemon killed with -9 looks dead as soon as its main thread is, while its other
// threads (DPDK's) may still hold its sockets and its database lock for a moment.
//
// Start is bounded by Options.StartTimeout and by ctx; it waits until ovsdb-server accepts
// connections, ovs-vswitchd has applied the database (it raises next_cfg and waits for cur_cfg
// to follow), DPDK reports dpdk_initialized=true and ovs-appctl answers. Any failure stops what
// was started, and its message quotes the tails of the failing daemon's log and output.
// Close stops ovs-vswitchd (`ovs-appctl exit --cleanup`) and then ovsdb-server (`ovs-appctl
// exit`), each escalating to SIGTERM and SIGKILL, and keeps the database file.
//
// # Supervision
//
// Between Start and Close (or the end of Start's ctx) the sandbox watches both daemons. One
// that exits on its own (a crash, kill -9, the OOM killer) is started again with the same
// command line, after 100 ms, doubling after each failed attempt up to 5 s, from 100 ms again
// once it had run for 30 s; every attempt is bounded by Options.StartTimeout and waits as Start
// does. The state is in conf.db, which ovsdb-server's append-only log keeps intact across a
// kill, so a restarted ovsdb-server serves the same bridges and ports; ovs-vswitchd, still
// running, reconnects to it by itself. A restarted ovs-vswitchd reads the database as a
// fresh start would: its ports get their ofports again (in a new network namespace: devices
// moved into the old one are gone with it). When both exit, ovsdb-server is restarted first.
// Meanwhile Status reports the daemon down with its pid, its exit and the last failed attempt
// (ovsplaned shows that as degraded health and as "ovs-vswitchd is not running" on its
// objects), and the restart is logged. The sandbox never gives up and never stops on its own;
// Done is closed by Close only.
//
// # Stale sockets
//
// Before any ovs-vswitchd starts (at Start and at each restart), unix socket files on which no
// process listens are removed from Dir and from other_config:vhost-sock-dir below it. A
// vswitchd killed with -9 — with ovsplaned, through the parent-death signal — leaves the
// sockets of its dpdkvhostuser ports behind, and DPDK refuses to bind over them ("Address
// already in use"): the port stays at ofport -1. Worse, DPDK closes the socket's file
// descriptor when the bind fails and keeps its number (the log shows the next socket opened
// under that number at once); closing it again when the port is torn down closes whatever
// now has that number, such as the vswitchd's own unixctl or OVSDB connection — the likely
// cause of the starts that failed with "Bad file descriptor" and ovs-appctl reading end of
// file.
// A socket counts as listened on when /proc/net/unix lists a listener on its path or a
// connect to it is not refused (a listener in another network namespace); the socket of a
// dpdkvhostuserclient port's VM side, which listens while ovs-vswitchd connects, therefore
// stays while the VM side runs. Regular files, directories, symbolic links and everything
// outside Dir are never removed.
//
// The process management — starting with the parent-death signal, the graceful, SIGTERM,
// SIGKILL stop, the start-up waits, the DPDK/hugepage probe and the removal of stale daemons
// and sockets — is internal/ovsproc, which the test lab (test/lab) uses too; this package adds
// the directory lock, the DPDK decision, the other_config hand-over and the supervision.
//
// Linux only; elsewhere Start returns an error.
package sandbox
