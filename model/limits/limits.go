package limits

// Bounds on what one object, one request and one batch may hold. Every door of ovsplane (the
// configuration file, the API, vsctl's requests to the daemon, plugin answers and the batcher)
// checks them with the functions of this package, so a request that passes one door passes
// them all. The values and their reasons are tabled in docs/security.md ("Limits").
const (
	// MaxKernelNameBytes bounds the name of a bridge and of an interface backed by a Linux
	// network device (types "", system, internal, tap): IFNAMSIZ-1, the longest name the kernel
	// gives a device. A bridge's local port is such a device whatever its datapath.
	MaxKernelNameBytes = 15

	// MaxNameBytes bounds every other port and interface name. OVS has no limit of its own, but
	// a dpdkvhostuser port's socket is named after its interface and a unix socket path holds
	// 107 bytes, and a name is a key that is logged, listed and matched everywhere.
	MaxNameBytes = 64

	// MaxInterfacesPerPort bounds the interfaces of one port (a bond's members). OVS accepts
	// any number, but every member costs ovs-vswitchd a netdev and the bond a rebalancing entry;
	// LACP and real bonds stop far below (Linux bonding and switches: 8 to 32 members).
	MaxInterfacesPerPort = 64

	// MaxMapEntries bounds the entries of one map column (external_ids, other_config, options)
	// of one object. OVS's own keys number a few dozen per column.
	MaxMapEntries = 256

	// MaxKeyBytes bounds a map key. OVS's keys are short identifiers ("dpdk-devargs").
	MaxKeyBytes = 256

	// MaxValueBytes bounds a map value given by a user or a plugin: ample for a dpdk-extra
	// command line, a path or a devargs string.
	MaxValueBytes = 4096

	// MaxMapBytes bounds the sum of the keys' and values' bytes of one map column of one
	// object, so that an object's maps cannot grow conf.db by megabytes (every change of a row
	// rewrites the row in OVSDB's log). A port and its interfaces together are bounded further
	// by MaxPortBytes.
	MaxMapBytes = 16 << 10

	// MaxPortBytes bounds the bytes of the names, keys and values of one port and all its
	// interfaces together. The daemon writes them twice (the rows and the port's spec tag) and
	// OVSDB's log rewrites a row at every change, so this bounds what one port costs conf.db
	// and ovs-vswitchd; 64 KiB is a hundred times a typical port (a vhost-user port with a
	// socket path and an iface-id: about 200 bytes).
	MaxPortBytes = 64 << 10

	// MaxObjectsPerRequest bounds the objects (bridges, ports, interfaces) of one request. An API
	// ApplyPort holds one port and at most MaxInterfacesPerPort interfaces; a configuration file
	// (or a reload, or `vsctl apply -f`) is one request whose bridges, ports and interfaces all
	// count. 65,536 is six times the 10,000-port configuration measured in docs/benchmarks.md.
	MaxObjectsPerRequest = 1 << 16

	// MaxRequestsPerBatch bounds the requests the daemon's batcher commits in one OVSDB
	// transaction (one ovs-vswitchd reconfiguration). It is the daemon's default batch size.
	MaxRequestsPerBatch = 512

	// MaxObjectsPerBatch bounds the objects (ports and interfaces) one batch writes: a batch is
	// closed early when the next request would take it past this bound, so 512 bonds of 64
	// members never go to ovs-vswitchd as one transaction. A lone request larger than this
	// still goes, alone (MaxInterfacesPerPort keeps it far below).
	MaxObjectsPerBatch = 4096

	// MaxLoggedObjects bounds the objects one log line names, and the per-object lines one
	// reconcile pass or status change logs: beyond it the daemon logs a summary (counts by
	// state, errors first), so 100,000 interfaces cost a few lines, not 200,000.
	MaxLoggedObjects = 20

	// MaxReportedProblems bounds the problems one error lists; the rest are counted ("and 99,990
	// more"), so that a request with 100,000 bad entries gets an answer, not a 10 MB error.
	MaxReportedProblems = 10
)
