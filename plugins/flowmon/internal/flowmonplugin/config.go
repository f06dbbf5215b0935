package flowmonplugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// Bounds and defaults of the jobs' configurations.
const (
	// MaxConfigBytes bounds a job's configuration, as the daemon does.
	MaxConfigBytes = limits.MaxJobConfigBytes
	// MaxListen bounds a collector's listen addresses.
	MaxListen = 16
	// MaxWorkers bounds the SO_REUSEPORT sockets (and decoding goroutines) per listen address.
	MaxWorkers = 64
	// DefaultWorkers is workers when 0.
	DefaultWorkers = 2
	// DefaultListen is the listen address when none is given (OVS's NetFlow target
	// 127.0.0.1:2055 on the same host).
	DefaultListen = "127.0.0.1:2055"
	// DefaultStorePath is the embedded store's file, relative to the plugin's data dir.
	DefaultStorePath = "flows.duckdb"
	// DefaultRetentionDays and MaxRetentionDays bound how long day partitions are kept.
	DefaultRetentionDays = 7
	MaxRetentionDays     = 3650
	// MaxDSNBytes bounds a PostgreSQL connection string.
	MaxDSNBytes = 1024
	// MaxEngines bounds the engine-to-bridge mappings.
	MaxEngines = 256
	// MaxBatchRecords bounds batch_records; DefaultBatchRecords is its default. DuckDB's cost
	// per stored row falls with the batch (bench/flowstore, 1 thread: 7.2 CPU-µs at 2k rows,
	// 4.2 at 10k, 3.3 at 50k); 32768 keeps most of that gain at ~5 MB per batch buffer, and is
	// what bench/flowingest measures.
	MaxBatchRecords     = 1 << 20
	DefaultBatchRecords = 32768
	// MinFlush, MaxFlush and DefaultFlush bound flush_ms, the longest a record waits to be stored.
	MinFlush     = 10 * time.Millisecond
	MaxFlush     = time.Minute
	DefaultFlush = time.Second
	// MaxBufferRecords bounds buffer_records, what the collector holds while the store is
	// slow or away; DefaultBufferRecords is its default.
	MaxBufferRecords     = 1 << 24
	DefaultBufferRecords = 1 << 20
	// MaxAppenders bounds appenders.
	MaxAppenders = 16
	// MaxSocketPath bounds a unix socket path (sun_path holds 108 bytes with its NUL).
	MaxSocketPath = 107
	// DefaultQueryTimeout bounds a query on the socket when query_timeout_ms is 0.
	DefaultQueryTimeout = 30 * time.Second
	// MaxQueryTimeout bounds query_timeout_ms.
	MaxQueryTimeout = 10 * time.Minute
)

// Store kinds.
const (
	StoreEmbedded = "embedded"
	StorePostgres = "postgres"
)

// StoreConfig selects and configures a collector's store.
type StoreConfig struct {
	// Kind is "embedded" (default: DuckDB in the plugin's data dir) or "postgres".
	Kind string `json:"kind,omitempty"`
	// Path (embedded) is the database file, relative to the plugin's data dir
	// (<data_dir>/plugin-data/flowmon) unless absolute; default flows.duckdb.
	Path string `json:"path,omitempty"`
	// DSN (postgres) is the connection string, e.g. "postgres://flowmon@db.example/flows";
	// put the password in ~/.pgpass or PGPASSWORD of the daemon, not here.
	DSN string `json:"dsn,omitempty"`
	// RetentionDays is how many days of partitions are kept (default 7, 1 to 3650).
	RetentionDays int `json:"retention_days,omitempty"`
}

// EngineConfig says how one bridge exports, so its records get the bridge's name and their
// interface numbers (OpenFlow ports) the port names. Set it as the bridge's NetFlow or IPFIX
// row says (docs/flowmon.md).
type EngineConfig struct {
	// Bridge is the exporting bridge.
	Bridge string `json:"bridge"`
	// Exporter optionally restricts the mapping to one exporter address (the datagrams'
	// source, one host); empty matches every exporter.
	Exporter string `json:"exporter,omitempty"`
	// NetFlow is set when the bridge exports NetFlow: its engine type and id (OVS's NetFlow
	// engine_type and engine_id; OVS defaults both to the datapath's index) and
	// add_id_to_interface.
	NetFlow *NetFlowEngine `json:"netflow,omitempty"`
	// IPFIXDomain is set when the bridge exports IPFIX: its observation domain id.
	IPFIXDomain *uint32 `json:"ipfix_domain,omitempty"`
}

// NetFlowEngine is a bridge's NetFlow engine as OVS's NetFlow row sets it.
type NetFlowEngine struct {
	EngineType uint8 `json:"engine_type"`
	EngineID   uint8 `json:"engine_id"`
	// AddIDToInterface: OVS puts the low 7 bits of the engine id in the top bits of the 16-bit
	// interface numbers.
	AddIDToInterface bool `json:"add_id_to_interface,omitempty"`
}

// CollectorConfig is a "flowmon-collector" job's configuration (JSON).
type CollectorConfig struct {
	// Listen are the UDP addresses receiving NetFlow v5/v9 and IPFIX (IP:port with a literal
	// IP; default 127.0.0.1:2055).
	Listen []string `json:"listen,omitempty"`
	// Workers is the number of SO_REUSEPORT sockets per address, each with its decoder
	// (default 2, 1 to 64).
	Workers int `json:"workers,omitempty"`
	// Store is where records go.
	Store StoreConfig `json:"store"`
	// Engines map exporters' domains to bridges; without a mapping a record takes the bridge
	// when the daemon has exactly one, else none. Ports are resolved from the bridges'
	// interfaces (OpenFlow port number → name) the daemon hands the plugin.
	Engines []EngineConfig `json:"engines,omitempty"`
	// BatchRecords is the most records one store batch holds (default 32768).
	BatchRecords int `json:"batch_records,omitempty"`
	// FlushMillis is the longest a record waits before its batch is stored (default 1000).
	FlushMillis int `json:"flush_ms,omitempty"`
	// BufferRecords bounds the records held while the store is slow or away; beyond it
	// records are dropped and counted (default 1048576).
	BufferRecords int `json:"buffer_records,omitempty"`
	// Appenders is how many batches are appended to the store at once: 1 to 16, default 1
	// for embedded (DuckDB has one writer) and 2 for postgres.
	Appenders int `json:"appenders,omitempty"`
	// QuerySocket is the query socket's path; default <plugin data dir>/<job>.sock, where the
	// daemon's API finds it. Set it only when that path is longer than 107 bytes.
	QuerySocket string `json:"query_socket,omitempty"`
	// QueryTimeoutMillis bounds one query (default 30000, at most 600000).
	QueryTimeoutMillis int `json:"query_timeout_ms,omitempty"`
}

// collectorSettings is a checked CollectorConfig with its defaults applied.
type collectorSettings struct {
	cfg          CollectorConfig
	listen       []netip.AddrPort
	exporters    map[int]netip.Addr // engines' parsed exporter addresses, by index
	flush        time.Duration
	queryTimeout time.Duration
}

// engineKey is what must be unique among the engine mappings: an exporter (the zero Addr:
// any), a protocol (netflow or ipfix) and a domain.
type engineKey struct {
	exporter netip.Addr
	ipfix    bool
	domain   uint32
}

// nameRE is what a bridge name may be (as the daemon's model allows OVS names).
var nameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// problem is an InvalidArgument naming field.
func problem(field, format string, args ...any) error {
	return sdk.Invalid(api.Problem{Field: field, Message: fmt.Sprintf(format, args...)})
}

// clip shortens a value for an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// decodeStrict decodes one JSON object into dst, refusing unknown fields and trailing data.
func decodeStrict(data []byte, dst any, what string) error {
	if len(data) > MaxConfigBytes {
		return problem("config", "%d bytes, more than %d", len(data), MaxConfigBytes)
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || string(data) == "null" {
		data = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return problem("config."+typeErr.Field, "is %s: wrong type (see the %s job's schema in docs/flowmon.md)", typeErr.Value, what)
		}
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return problem("config", "unknown field %s (see the %s job's schema in docs/flowmon.md)", name, what)
		}
		return problem("config", "not a valid %s configuration: %v", what, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return problem("config", "trailing data after the JSON object: give one object")
	}
	return nil
}

// checkSocketPath checks an explicit unix socket path.
func checkSocketPath(field, p string) error {
	switch {
	case len(p) > MaxSocketPath:
		return problem(field, "%d bytes: a unix socket path is at most %d bytes; pick a shorter one", len(p), MaxSocketPath)
	case !filepath.IsAbs(p) || strings.ContainsRune(p, 0) || filepath.Clean(p) != p:
		return problem(field, "%q: want a clean absolute path", clip(p))
	}
	return nil
}

// ParseCollectorConfig decodes a flowmon-collector job's configuration strictly and checks it;
// errors are InvalidArgument naming the field ("config.store.retention_days") and the fix.
func ParseCollectorConfig(data []byte) (CollectorConfig, error) {
	s, err := parseCollector(data)
	return s.cfg, err
}

func parseCollector(data []byte) (collectorSettings, error) {
	var s collectorSettings
	c := &s.cfg
	if err := decodeStrict(data, c, JobCollector); err != nil {
		return s, err
	}
	if len(c.Listen) == 0 {
		c.Listen = []string{DefaultListen}
	}
	if len(c.Listen) > MaxListen {
		return s, problem("config.listen", "%d addresses: at most %d", len(c.Listen), MaxListen)
	}
	seen := map[netip.AddrPort]bool{}
	for i, l := range c.Listen {
		ap, err := netip.ParseAddrPort(l)
		if err != nil || ap.Port() == 0 || ap.Addr().Zone() != "" {
			return s, problem(fmt.Sprintf("config.listen[%d]", i), "%q: want IP:port with a literal IP and a port of 1 to 65535, e.g. 0.0.0.0:2055 or [::]:4739", clip(l))
		}
		if seen[ap] {
			return s, problem(fmt.Sprintf("config.listen[%d]", i), "%s is listed twice: list each address once", ap)
		}
		seen[ap] = true
		s.listen = append(s.listen, ap)
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.Workers < 1 || c.Workers > MaxWorkers {
		return s, problem("config.workers", "%d: want 1 to %d sockets per address (or leave it out for %d)", c.Workers, MaxWorkers, DefaultWorkers)
	}
	if err := c.Store.check(); err != nil {
		return s, err
	}
	if len(c.Engines) > MaxEngines {
		return s, problem("config.engines", "%d mappings: at most %d", len(c.Engines), MaxEngines)
	}
	seenEngine := map[engineKey]int{}
	s.exporters = map[int]netip.Addr{}
	for i, e := range c.Engines {
		f := fmt.Sprintf("config.engines[%d]", i)
		var exp netip.Addr
		if e.Exporter != "" {
			a, err := netip.ParseAddr(e.Exporter)
			if err != nil || a.Zone() != "" {
				return s, problem(f+".exporter", "%q: want an IP address (or leave it out for every exporter)", clip(e.Exporter))
			}
			exp = a.Unmap()
		}
		s.exporters[i] = exp
		if !nameRE.MatchString(e.Bridge) {
			return s, problem(f+".bridge", "%q: want a bridge name of 1 to 64 letters, digits, '.', '_' or '-'", clip(e.Bridge))
		}
		if e.NetFlow == nil && e.IPFIXDomain == nil {
			return s, problem(f, "bridge %s: set netflow (engine_type, engine_id) or ipfix_domain, as the bridge exports", e.Bridge)
		}
		var keys []engineKey
		if e.NetFlow != nil {
			keys = append(keys, engineKey{exp, false, uint32(e.NetFlow.EngineType)<<8 | uint32(e.NetFlow.EngineID)})
		}
		if e.IPFIXDomain != nil {
			keys = append(keys, engineKey{exp, true, *e.IPFIXDomain})
		}
		for _, k := range keys {
			if j, dup := seenEngine[k]; dup {
				return s, problem(f, "bridge %s exports with the same exporter and engine (or domain) as engines[%d] (%s): give each bridge distinct engine ids",
					e.Bridge, j, c.Engines[j].Bridge)
			}
			seenEngine[k] = i
		}
	}
	if c.BatchRecords == 0 {
		c.BatchRecords = DefaultBatchRecords
	}
	if c.BatchRecords < 1 || c.BatchRecords > MaxBatchRecords {
		return s, problem("config.batch_records", "%d: want 1 to %d (or leave it out for %d)", c.BatchRecords, MaxBatchRecords, DefaultBatchRecords)
	}
	s.flush = DefaultFlush
	if c.FlushMillis != 0 {
		s.flush = time.Duration(c.FlushMillis) * time.Millisecond
		if s.flush < MinFlush || s.flush > MaxFlush || c.FlushMillis < 0 {
			return s, problem("config.flush_ms", "%d: want %d to %d milliseconds (or leave it out for %d)", c.FlushMillis, MinFlush.Milliseconds(), MaxFlush.Milliseconds(), DefaultFlush.Milliseconds())
		}
	}
	if c.BufferRecords == 0 {
		c.BufferRecords = DefaultBufferRecords
	}
	if c.BufferRecords < c.BatchRecords || c.BufferRecords > MaxBufferRecords {
		return s, problem("config.buffer_records", "%d: want batch_records (%d) to %d (or leave it out for %d)", c.BufferRecords, c.BatchRecords, MaxBufferRecords, DefaultBufferRecords)
	}
	if c.Appenders == 0 {
		c.Appenders = 1
		if c.Store.Kind == StorePostgres {
			c.Appenders = 2
		}
	}
	if c.Appenders < 1 || c.Appenders > MaxAppenders {
		return s, problem("config.appenders", "%d: want 1 to %d concurrent store appends (or leave it out)", c.Appenders, MaxAppenders)
	}
	if c.QuerySocket != "" {
		if err := checkSocketPath("config.query_socket", c.QuerySocket); err != nil {
			return s, err
		}
	}
	s.queryTimeout = DefaultQueryTimeout
	if c.QueryTimeoutMillis != 0 {
		s.queryTimeout = time.Duration(c.QueryTimeoutMillis) * time.Millisecond
		if c.QueryTimeoutMillis < 100 || s.queryTimeout > MaxQueryTimeout {
			return s, problem("config.query_timeout_ms", "%d: want 100 to %d milliseconds (or leave it out for %d)", c.QueryTimeoutMillis, MaxQueryTimeout.Milliseconds(), DefaultQueryTimeout.Milliseconds())
		}
	}
	return s, nil
}

// check validates the store settings and applies their defaults.
func (sc *StoreConfig) check() error {
	if sc.Kind == "" {
		sc.Kind = StoreEmbedded
	}
	if sc.RetentionDays == 0 {
		sc.RetentionDays = DefaultRetentionDays
	}
	if sc.RetentionDays < 1 || sc.RetentionDays > MaxRetentionDays {
		return problem("config.store.retention_days", "%d: want 1 to %d days (or leave it out for %d)", sc.RetentionDays, MaxRetentionDays, DefaultRetentionDays)
	}
	switch sc.Kind {
	case StoreEmbedded:
		if sc.DSN != "" {
			return problem("config.store.dsn", "set with kind embedded: a dsn is for kind postgres; remove it or set kind postgres")
		}
		if sc.Path == "" {
			sc.Path = DefaultStorePath
		}
		if len(sc.Path) > 4096 || strings.ContainsRune(sc.Path, 0) || filepath.Clean(sc.Path) != sc.Path ||
			(!filepath.IsAbs(sc.Path) && (sc.Path == ".." || strings.HasPrefix(sc.Path, "../"))) {
			return problem("config.store.path", "%q: want a clean file name inside the plugin's data dir (e.g. flows.duckdb) or a clean absolute path", clip(sc.Path))
		}
	case StorePostgres:
		if sc.Path != "" {
			return problem("config.store.path", "set with kind postgres: a path is for kind embedded; remove it or set kind embedded")
		}
		if sc.DSN == "" || len(sc.DSN) > MaxDSNBytes {
			return problem("config.store.dsn", "%d bytes: kind postgres needs a connection string of 1 to %d bytes, e.g. postgres://flowmon@db.example:5432/flows", len(sc.DSN), MaxDSNBytes)
		}
	default:
		return problem("config.store.kind", "%q: want embedded (DuckDB in the plugin's data dir) or postgres", clip(sc.Kind))
	}
	return nil
}

// path is the embedded store's file: Path, under dir unless absolute.
func (sc *StoreConfig) path(dir string) string {
	if filepath.IsAbs(sc.Path) {
		return sc.Path
	}
	return filepath.Join(dir, sc.Path)
}
