package overlayplugin

// agentSchema is the JSON schema of AgentConfig (the overlay-agent job type's options).
const agentSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "overlay-agent job",
  "type": "object",
  "additionalProperties": false,
  "required": ["node", "fabric_remotes", "bridge", "tunnel_port"],
  "properties": {
    "node": {"type": "object", "additionalProperties": false, "required": ["name", "kind", "underlay"],
      "properties": {
        "name": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"},
        "kind": {"enum": ["super", "ordinary"]},
        "carriers": {"type": "array", "maxItems": 16, "items": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"}},
        "underlay": {"type": "array", "minItems": 1, "maxItems": 16, "items": {"type": "string", "description": "IP or IP:probe-port"}}
      }},
    "fabric_remotes": {"type": "array", "minItems": 1, "maxItems": 7, "items": {"type": "string", "pattern": "^(unix|tcp|ssl):.+$"}},
    "bridge": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"},
    "tunnel_port": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"},
    "vni": {"type": "integer", "minimum": 0, "maximum": 16777215},
    "prefixes": {"type": "object", "additionalProperties": {"type": "array", "maxItems": 16, "items": {"type": "string"}}},
    "prefixes_file": {"type": "string"},
    "underlay_via": {"type": "object", "additionalProperties": {"type": "string"}},
    "period_ms": {"type": "integer", "minimum": 10, "maximum": 600000},
    "flow_refresh_ms": {"type": "integer", "minimum": 100, "maximum": 60000},
    "probe": {"type": "object", "additionalProperties": false, "properties": {
      "disabled": {"type": "boolean"},
      "port": {"type": "integer", "minimum": 1, "maximum": 65535},
      "interval_ms": {"type": "integer", "minimum": 10, "maximum": 60000},
      "window": {"type": "integer", "minimum": 2, "maximum": 1000},
      "max_bandwidth_mbit": {"type": "integer", "minimum": 1, "maximum": 1000000}
    }}
  }
}`

// agentDoc documents the overlay-agent job type.
const agentDoc = `The overlay node agent of one site: registers node (name, kind super|ordinary, carriers,
underlay addresses) in the fabric database (fabric_remotes, the cluster's members), installs
each route version as OpenFlow next-hop forwarding on bridge through tunnel_port (a flow-based
tunnel, port type overlay-tunnel), acknowledges it, keeps its last table while the fabric is
unreachable, and probes its links (UDP port probe.port, default 7471). prefixes maps every
node to its overlay prefixes. Stats: installed/applied version, routes, refusals, flows, per
link latency, loss and bandwidth.`

// controllerSchema is the JSON schema of ControllerConfig.
const controllerSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "overlay-controller job",
  "type": "object",
  "additionalProperties": false,
  "required": ["holder", "fabric_remotes"],
  "properties": {
    "holder": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"},
    "fabric_remotes": {"type": "array", "minItems": 1, "maxItems": 7, "items": {"type": "string", "pattern": "^(unix|tcp|ssl):.+$"}},
    "lease_ttl_ms": {"type": "integer"},
    "period_ms": {"type": "integer", "minimum": 10},
    "cost_hysteresis_pct": {"type": "number", "minimum": 0, "maximum": 100}
  }
}`

// controllerDoc documents the overlay-controller job type.
const controllerDoc = `The overlay controller role: takes the fabric's lease as holder (at most one controller is
active), computes every node's routes from the registered nodes and measured links, and
publishes a new route version only when they change. Run one per site that may control; the
others stand by. Stats: holding, epoch, version, published, skipped, fenced.`
