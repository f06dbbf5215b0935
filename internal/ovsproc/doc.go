// Package ovsproc starts, watches and stops real Open vSwitch daemons (ovsdb-server and
// ovs-vswitchd) as children of the calling process. It is the one process manager of the
// project: vswitchd/sandbox (ovsplaned --sandbox) supervises its private Open vSwitch with it,
// and the test lab (test/lab) starts its daemons with it, so the tests run the code the product
// ships.
//
// What it owns:
//
//   - Processes: Start runs a Spec with a parent-death signal (SIGKILL), on a goroutine locked
//     to its OS thread (the kernel sends that signal when the forking thread exits), optionally
//     in its own process group and a new network namespace. Process.Stop escalates from a
//     graceful request (`ovs-appctl exit`) to SIGTERM and SIGKILL with bounded waits;
//     Process.Watch ends a start-up wait as soon as the daemon dies (cause ErrExited);
//     Process.Report quotes the tails of its output and log. Daemon remembers the latest
//     process of a Spec that is started again and again.
//   - Command lines: Layout names the files of an instance confined to a directory (conf.db,
//     db.sock, <daemon>.pid/.ctl/.log/.out) and builds the ovsdb-server and ovs-vswitchd Specs
//     with their flags; DummyArgs gives the dummy-datapath flags. The Default* constants are
//     Debian 12's paths and the other_config values a private instance needs.
//   - Waits and tools: Run runs an OVS tool and returns an error naming the command and quoting
//     its stderr; Tools runs ovs-vsctl and ovs-appctl against one instance; WaitSocket,
//     Tools.WaitApplied (next_cfg/cur_cfg) and Tools.WaitVswitchd are the start-up waits.
//   - Unixctl: Unixctl sends one command to a daemon's unixctl socket (what ovs-appctl talks
//     to) over JSON-RPC, arguments as JSON strings, the reply bounded (MaxUnixctlReply);
//     AppctlCommands and ParseCommandList give the `list-commands` set (bounded by
//     MaxAppctlCommands), VswitchdCtl finds ovs-vswitchd's socket in its run directory. The
//     daemon (ovsplaned) reads ovs-vswitchd's commands with it for the plugins' host facts;
//     Tools.Appctl runs the ovs-appctl program for the start-up waits and for tests.
//     PMDRxqShow and ParsePMDRxqShow read `dpif-netdev/pmd-rxq-show` (which PMD thread, on
//     which core and NUMA node, polls which port's queues; bounded by MaxPMDThreads and
//     MaxPMDRxqs), ErrNoDatapath when there is no userspace datapath. The test-support package
//     unixctltest is a fake ovs-vswitchd unixctl server speaking the same protocol.
//   - DPDK: ProbeDPDK and DPDKHost.Missing say whether this host can start the DPDK build (the
//     binary, root, free hugepages of the default size from /proc/meminfo); ParseMeminfo and
//     SocketMemMB parse what that depends on. Reserving hugepages is host policy and not done
//     here.
//   - Leftovers of a crashed run: KillStale kills a daemon still named by its pidfile (only when
//     its command line carries that very --pidfile= argument), WaitReleased waits until a dead
//     daemon's last threads have closed its files, RemoveStaleSockets removes the unix sockets
//     nobody listens on (vhost-user sockets left by a vswitchd killed with -9).
//
// Nothing here skips, fails or logs a test, picks a directory or restarts a daemon on its own:
// callers decide that. Every wait is bounded by a context or a documented timeout.
//
// Linux only: elsewhere Start returns an error.
package ovsproc
