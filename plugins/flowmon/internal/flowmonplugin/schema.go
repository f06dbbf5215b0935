package flowmonplugin

// collectorSchema is the JSON schema of CollectorConfig (the flowmon-collector job's options).
const collectorSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "flowmon-collector job",
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "listen": {"type": "array", "minItems": 1, "maxItems": 16, "items": {"type": "string", "description": "IP:port, e.g. 0.0.0.0:2055"}},
    "workers": {"type": "integer", "minimum": 1, "maximum": 64},
    "store": {"type": "object", "additionalProperties": false, "properties": {
      "kind": {"enum": ["embedded", "postgres"]},
      "path": {"type": "string", "maxLength": 4096},
      "dsn": {"type": "string", "maxLength": 1024},
      "retention_days": {"type": "integer", "minimum": 1, "maximum": 3650}
    }},
    "engines": {"type": "array", "maxItems": 256, "items": {"type": "object", "additionalProperties": false, "required": ["bridge"],
      "properties": {
        "bridge": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"},
        "exporter": {"type": "string"},
        "netflow": {"type": "object", "additionalProperties": false, "properties": {
          "engine_type": {"type": "integer", "minimum": 0, "maximum": 255},
          "engine_id": {"type": "integer", "minimum": 0, "maximum": 255},
          "add_id_to_interface": {"type": "boolean"}
        }},
        "ipfix_domain": {"type": "integer", "minimum": 0, "maximum": 4294967295}
      }}},
    "batch_records": {"type": "integer", "minimum": 1, "maximum": 1048576},
    "flush_ms": {"type": "integer", "minimum": 10, "maximum": 60000},
    "buffer_records": {"type": "integer", "minimum": 1, "maximum": 16777216},
    "appenders": {"type": "integer", "minimum": 1, "maximum": 16},
    "query_socket": {"type": "string", "maxLength": 107},
    "query_timeout_ms": {"type": "integer", "minimum": 100, "maximum": 600000}
  }
}`

// collectorDoc documents the flowmon-collector job type.
const collectorDoc = `Collects the flows OVS exports (NetFlow v5/v9, IPFIX) on the UDP listen addresses (default
127.0.0.1:2055) with workers SO_REUSEPORT sockets each, names bridges and ports (engines map
each bridge's NetFlow engine or IPFIX domain; ports come from the daemon's bridge facts),
stores them in store (embedded DuckDB in the plugin's data dir by default, or postgres with a
dsn) with day partitions kept retention_days, and answers queries on the unix socket
<data_dir>/plugin-data/flowmon/<job>.sock (flowmon query, the API's /flowmon/v1/query, the
page at /flowmon/). Stats: datagrams, records, stored, dropped by reason, decode errors,
socket drops, buffered, store failing. See docs/flowmon.md.`

// genSchema is the JSON schema of GenConfig (the flowmon-gen job's options).
const genSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "flowmon-gen job",
  "type": "object",
  "additionalProperties": false,
  "required": ["interface"],
  "properties": {
    "interface": {"type": "string", "pattern": "^[A-Za-z0-9._@-]{1,15}$"},
    "receive_interface": {"type": "string", "pattern": "^[A-Za-z0-9._@-]{1,15}$"},
    "frame_size": {"type": "integer", "minimum": 64, "maximum": 1448},
    "flows": {"type": "integer", "minimum": 1, "maximum": 65536},
    "rate_pps": {"type": "integer", "minimum": 0, "maximum": 100000000},
    "duration_ms": {"type": "integer", "minimum": 1, "maximum": 86400000},
    "src": {"type": "string"},
    "dst": {"type": "string"},
    "src_port": {"type": "integer", "minimum": 1, "maximum": 65535},
    "dst_port": {"type": "integer", "minimum": 1, "maximum": 65535},
    "src_mac": {"type": "string"},
    "dst_mac": {"type": "string"}
  }
}`

// genDoc documents the flowmon-gen job type.
const genDoc = `Generates UDP/IPv4 test traffic with an AF_PACKET TX ring on interface (a veth peered with an
OVS port, or an OVS port's netdev): flows distinct flows (source ports src_port..), frames of
frame_size bytes (64 to 1448), at rate_pps (0: as fast as possible) for duration_ms, and
counts what arrives per flow on receive_interface. One run per start. Stats: running; sent,
received and lost packets in total and per flow (the first 64 flows), rates. See
docs/flowmon.md.`
