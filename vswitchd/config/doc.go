// Package config loads and validates the configuration of ovsplaned: the settings it runs with
// (OVSDB endpoints, data dir, API listeners, logging, metrics, plugins) and the desired state it
// owns (global other_config, bridges, ports, interfaces).
//
// # Sources
//
// Load reads, lowest precedence first: built-in defaults, a YAML file, OVSPLANE_* environment
// variables, and command-line flags (RegisterFlags defines them). Environment and flags set the
// settings only; the desired state comes from the file alone. A settings key maps to a variable
// with dots as underscores, upper-cased (ovsdb.endpoints → OVSPLANE_OVSDB_ENDPOINTS, lists
// comma-separated) and to a flag with dots and underscores as dashes (--ovsdb-endpoints,
// --api-socket-mode). Viper merges the layers and fills the settings; the desired state is
// decoded from the file directly so that map keys keep their case and values their exact text
// (pmd-cpu-mask: 0x10 stays "0x10").
//
// Load returns a complete, validated Config or an error listing every problem (never a half
// filled Config), so a daemon reloading on SIGHUP keeps its running Config when the new one is
// bad. Unknown keys are errors, as are unknown OVSPLANE_ variables (OVSPLANE_CONFIG and
// OVSPLANE_PLUGIN_REATTACH excepted).
// YAML anchors and aliases work; merge keys (<<) do not.
// Durations (ovsdb.reconnect_wait, ovsdb.apply_timeout) are Go duration text with a unit ("5s",
// "1m30s", "250ms"), in the file, the environment and flags alike; a bare number is an error, as
// is a value out of the key's range. Both are read at start only: a reload does not change them
// (a restart does).
//
// # Defaults
//
//	data_dir          /var/lib/ovsplane
//	api.listen        [unix:<data_dir>/ovsplaned.sock]
//	api.socket_mode   "0660"
//	plugin_dir        <data_dir>/plugins
//	log.level         info   (debug, info, warn, error → slog levels)
//	log.format        text   (text, json → slog.TextHandler, slog.JSONHandler)
//	ovsdb.endpoints   none: the local /var/run/openvswitch/db.sock if present, else the embedded OVSDB
//	ovsdb.reconnect_wait  5s (vswitchd.DefaultReconnectWait; unset loads as 0, which the daemon reads as 5s)
//	ovsdb.apply_timeout   2m (ovsdb.DefaultApplyTimeout; unset loads as 0, which the daemon reads as 2m)
//	ovsdb.vswitchd_unixctl  none: ovs-vswitchd's unixctl socket is found in Open vSwitch's run directory
//	metrics.address   none: no /metrics
//	overlay.fabric_remotes  none: the API's /overlay/ view answers that no fabric is configured
//
// # File format
//
// Every key, with the values it accepts:
//
//	ovsdb:
//	  endpoints: [unix:/var/run/openvswitch/db.sock]  # unix:PATH, tcp:HOST:PORT, ssl:HOST:PORT
//	  tls:                        # all three required when an endpoint is ssl:
//	    private_key: /etc/ovsplane/key.pem
//	    certificate: /etc/ovsplane/cert.pem
//	    ca_cert: /etc/ovsplane/ca.pem
//	  reconnect_wait: 5s          # writes wait for a lost connection, then UNAVAILABLE; 0 < d ≤ 10m; needs a restart
//	  apply_timeout: 2m           # writes wait for ovs-vswitchd to apply them, then fail; 1s ≤ d ≤ 1h; needs a restart
//	data_dir: /var/lib/ovsplane   # absolute
//	api:
//	  listen: [unix:/var/lib/ovsplane/ovsplaned.sock, "tcp:0.0.0.0:9470"]
//	  socket_mode: "0660"         # octal, quoted
//	  socket_group: ovsplane      # name or gid
//	  tls:                        # all three required by a tcp: listener (mutual TLS)
//	    private_key: /etc/ovsplane/api-key.pem
//	    certificate: /etc/ovsplane/api-cert.pem
//	    ca_cert: /etc/ovsplane/clients-ca.pem   # signs the clients' certificates
//	  auth:                       # roles (see Auth); uid 0 and the daemon's uid are admins
//	    admins:                   # every call
//	      uids: [1000]
//	      gids: [27]              # primary or supplementary
//	      groups: [netadmin]
//	      subjects: ["ops-*"]     # TCP: certificate CN / DNS, URI, e-mail SAN patterns
//	    readers:                  # read calls; api.socket_group's members are readers
//	      subjects: ["spiffe://example.org/monitoring/*"]
//	log:
//	  level: info
//	  format: json
//	metrics:
//	  address: 127.0.0.1:9476
//	  pprof: false                # true: Go's profiles at /debug/pprof too
//	  pprof_any_address: false    # true: allow pprof on an address that is not loopback
//	plugin_dir: /usr/libexec/ovsplane/plugins
//	overlay:                      # read-only view of the overlay fabric (issue 17); needs a restart
//	  fabric_remotes: [tcp:10.0.0.1:6641, tcp:10.0.0.2:6641, tcp:10.0.0.3:6641]  # unix:PATH or tcp:HOST:PORT, at most 7
//
//	other_config:                 # Open_vSwitch.other_config keys the daemon owns
//	  dpdk-init: "true"           # true, false, try
//	  dpdk-socket-mem: "1024,1024"
//	  pmd-cpu-mask: "0x6"         # hexadecimal, as is dpdk-lcore-mask
//
//	bridges:
//	  - name: br-dpdk             # at most 15 characters, unique
//	    datapath_type: netdev     # "", system, netdev
//	    fail_mode: secure         # "", standalone, secure
//	    protocols: [OpenFlow13, OpenFlow15]
//	    controller: ["tcp:127.0.0.1:6653"] # tcp:/ssl:HOST[:PORT], unix:/punix:PATH, ptcp:/pssl:[PORT][:IP]
//	    other_config: {datapath-id: "0000000000000001"}
//	    external_ids: {owner: team-a}
//	    ports:                    # port names unique across all bridges
//	      - name: dpdk0
//	        interfaces:
//	          - name: dpdk0
//	            type: dpdk        # needs options.dpdk-devargs
//	            options: {dpdk-devargs: "0000:01:00.0", n_rxq: "2"}
//	            mtu_request: 9000 # 68..65535
//	            ofport_request: 1 # 1..65279
//	      - name: vhu0
//	        tag: 100              # access VLAN 0..4095
//	        interfaces:
//	          - name: vhu0
//	            type: dpdkvhostuserclient   # needs options.vhost-server-path
//	            options: {vhost-server-path: /var/run/vm0/vhu0.sock}
//	      - name: bond0           # two or more interfaces: a bond
//	        tag: 10               # the native VLAN of a native-* port
//	        trunks: [100, 200]
//	        vlan_mode: native-untagged      # "", access, trunk, native-tagged, native-untagged
//	        bond_mode: balance-tcp          # active-backup, balance-slb, balance-tcp
//	        lacp: active                    # "", active, passive, off
//	        other_config: {lacp-time: fast}
//	        interfaces:
//	          - {name: dpdk1, type: dpdk, options: {dpdk-devargs: "0000:02:00.0"}}
//	          - {name: dpdk2, type: dpdk, options: {dpdk-devargs: "0000:02:00.1"}}
//	      - name: vx0
//	        interfaces:
//	          - {name: vx0, type: vxlan, options: {remote_ip: 192.0.2.10, key: flow}}
//	      - name: patch-to-int
//	        interfaces:
//	          - {name: patch-to-int, type: patch, options: {peer: patch-to-dpdk}}
//	      - name: mgmt0
//	        interfaces:
//	          - {name: mgmt0, type: internal, external_ids: {role: mgmt}}
//
//	plugins:                      # the only binaries the daemon runs (from plugin_dir)
//	  - name: sample              # [a-z][a-z0-9-]*, at most 40, unique
//	    path: ovsplane-plugin-sample        # relative to plugin_dir, or absolute inside it
//	    sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  # required pin
//	    config:                   # free-form, handed to Configure as JSON (types kept)
//	      netns: blue
//	      mtu: 1500
//	      mask: "0x10"            # quote what must stay a string
//	    env: [HTTPS_PROXY]        # daemon variables passed on; only PATH is by default
//	    jobs:                     # data-path jobs the daemon runs in the plugin (at most 64)
//	      - name: collector       # unique per plugin: [A-Za-z0-9][A-Za-z0-9._-]*, at most 64
//	        type: flow-collector  # one of the plugin's job types
//	        config: {port: 2055}  # a JSON object (at most 16 KiB), typed like config
//
// Interface types: "" (= system), system, internal, dpdk, dpdkvhostuser, dpdkvhostuserclient,
// patch, vxlan, geneve, gre, tap. Names of system, internal and tap interfaces (and bridges)
// are kernel device names, so at most 15 characters. vxlan, geneve and gre need
// options.remote_ip; patch needs options.peer. A port lists at least one interface.
//
// A port's vlan_mode is Open vSwitch's Port.vlan_mode: unset, the port is an access port when it
// has a tag and a trunk port otherwise; a trunk port takes no tag and an access port no trunks
// (Open vSwitch would ignore them, so the check refuses them); native-tagged and
// native-untagged carry trunks plus tag as the native VLAN. lacp (active, passive, off; unset
// is off) negotiates a bond with the switch at the other end; Open vSwitch accepts it on a port
// with one interface too.
//
// bridges, ports, interfaces, protocols, controller, trunks, plugins, env and jobs are YAML lists: a
// mapping there is an error naming its key path (`bridges: {}` is not "no bridges"). Each
// controller target becomes a Controller row ovsplane owns on its bridge (at most 256 bytes, no
// white space or control characters, each target once; ssl: needs the switch's own SSL
// settings; ovs-vswitchd ignores unix: and punix: paths outside its run directory).
//
// A bridge's netflow, ipfix, sflow and collector_sets keys are its flow export, each a row
// ovsplane owns (docs/flow-export.md has the keys and their bounds). A bridge's mirrors, a
// port's qos (with queues) and bond settings, and an interface's ingress_policing_* keys are in
// docs/qos-mirrors.md.
//
// Plugins: the list is an allow-list; each binary must sit below plugin_dir, and its SHA-256
// must match the pin (the plugin host checks ownership, permissions and the pin before every
// start, and refuses symlinks). Like the desired state, the list comes from the file alone.
//
// # Using it
//
// The daemon calls Load at start and on reload, keeps the returned *Config, builds its logger
// with Config.Log.NewHandler, and compares Config.Desired() of the old and the new Config
// (DesiredState.Equal) to decide whether to reconcile.
//
// The types of the desired state and the plugin list (Bridge, Port, Interface, Plugin, TLS)
// are package model's; the desired-state keys are read and checked by the sub-package desired,
// which needs no viper, so clients (vsctl apply -f) check a file with the same rules without
// linking this loader.
package config
