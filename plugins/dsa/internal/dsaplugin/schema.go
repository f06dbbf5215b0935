package dsaplugin

// configSchema is the JSON schema of Config.
const configSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "dsa plugin configuration",
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "devices": {"type": "array", "maxItems": 32,
      "description": "the DSA devices to provision, each named once",
      "items": {"type": "object", "additionalProperties": false, "required": ["dsa"],
        "properties": {
          "dsa": {"type": "string", "pattern": "^(dsa[0-9]{1,4}|[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-7])$",
            "description": "the device: its idxd name (dsa0) or PCI address (0000:6a:01.0)"},
          "driver": {"enum": ["idxd", "vfio-pci"], "default": "idxd",
            "description": "idxd: user work queues under /dev/dsa for DPDK's idxd bus; vfio-pci: the whole device to DPDK (dpdk-extra -a BDF,max_queues=N)"},
          "engines": {"type": "integer", "minimum": 0, "description": "engines in the work queues' group (0: the library's default)"},
          "numa": {"type": "integer", "minimum": 0, "maximum": 1023, "description": "the NUMA node the device is expected on (DSA_NUMA warning otherwise)"},
          "wqs": {"type": "object", "additionalProperties": false,
            "properties": {
              "count": {"type": "integer", "minimum": 0, "description": "work queues to configure (at least the PMD threads of the device's NUMA node)"},
              "mode": {"enum": ["dedicated"], "default": "dedicated"},
              "size": {"type": "integer", "minimum": 0, "description": "descriptors per queue; their sum at most the device's max_work_queues_size"},
              "priority": {"type": "integer", "minimum": 0, "maximum": 15},
              "maxBatchSize": {"type": "integer", "minimum": 0},
              "atsDisable": {"type": "boolean", "default": false},
              "namePrefix": {"type": "string", "default": "dpdk", "maxLength": 64,
                "description": "queues are named <prefix>_wqD.Q; DPDK only takes dpdk_ or <file-prefix>_"}
            }}
        }}},
    "ovs": {"type": "object", "additionalProperties": false,
      "properties": {
        "asyncMode": {"enum": ["off", "auto", "require"], "default": "auto",
          "description": "auto: use DSA when this ovs-vswitchd has vhost async, else keep the devices prepared and say so; require: refuse without it (OVS_NO_VHOST_ASYNC); off: never ask OVS"},
        "threshold": {"type": "integer", "minimum": 0, "maximum": 65536,
          "description": "bytes from which copies go to DSA (netdev-dpdk/set-vhost-async-thresh); 0 keeps OVS's default (128)"},
        "user": {"type": "string", "description": "the user ovs-vswitchd runs as (name or uid:gid), given /dev/dsa/wq*; default: the owner of its pidfile"},
        "unixctl": {"type": "string", "pattern": "^/", "maxLength": 107,
          "description": "absolute path of ovs-vswitchd's unixctl socket when it was started with --unixctl=PATH (ZStack: /var/run/openvswitch/ovs-vswitchd.zs.ctl); default: ovs-vswitchd.<pid>.ctl or ovs-vswitchd.ctl in the OVS run directory"}
      }},
    "allowReconfigure": {"type": "boolean", "default": false,
      "description": "reconfigure an enabled device whose configuration differs (default: refuse, so accel-config setups are adopted, not overwritten); a device with clients is never touched"},
    "root": {"type": "string", "default": "/", "description": "root directory holding sys/ and dev/"},
    "simulate": {"type": "string",
      "description": "SIMULATION, for tests: absolute path of a simulated idxd kernel's directory (dsa/simidxd); no hardware is touched"}
  }
}`

// configDoc documents Config for humans.
const configDoc = `devices: the DSA devices to provision, each {dsa: "dsa0" or "0000:6a:01.0", driver: idxd
(default) or vfio-pci, wqs: {count, mode: dedicated, size, priority, maxBatchSize, atsDisable,
namePrefix (default "dpdk"; DPDK ignores queues not named dpdk_ or <file-prefix>_)}, engines, numa (the node the device is expected on: a DSA_NUMA warning otherwise)}.
ovs.asyncMode: auto (default) uses DSA when the running ovs-vswitchd has vhost async and otherwise
keeps the devices prepared, saying so in its health and in every vhost-user port's status; require
refuses the configuration on an ovs-vswitchd without it (OVS_NO_VHOST_ASYNC); off never asks OVS.
ovs.threshold: the copy size in bytes from which a capable ovs-vswitchd uses DSA (set through its
unixctl socket and read back). ovs.user: the user ovs-vswitchd runs as (default: its pidfile's
owner). ovs.unixctl: the absolute path of ovs-vswitchd's unixctl socket when it was started with
--unixctl=PATH (ZStack: /var/run/openvswitch/ovs-vswitchd.zs.ctl); default: found in the OVS run
directory. allowReconfigure: reconfigure enabled devices whose configuration differs (default false:
refused). A device the plugin configured and the configuration no longer lists is reset. root
(default "/"): the directory holding sys/ and dev/. simulate: SIMULATION MODE, for tests: a
simulated idxd kernel's directory (dsa/simidxd); no hardware is touched.`
