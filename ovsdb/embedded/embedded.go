// Package embedded serves the Open_vSwitch database from inside the
// process, persisted in a file in ovsdb-server's own standalone format so
// that a restart, or a crash at any moment, loses no acknowledged
// transaction, and so that a real ovsdb-server can later take the file over.
//
// # File format
//
// dir/conf.db is a sequence of records as ovsdb/log.c writes them: a header
// line "OVSDB JSON <length> <sha1-hex>" followed by length bytes: the JSON
// text and a newline (length and SHA-1 cover both). The first record is the
// schema; every following record is one transaction as ovsdb/file.c writes
// it: {"Table": {"row-uuid": row-or-null, ...}, "_date": ms-since-epoch,
// "_comment": "..."}. A null row is a deletion; an object is a new row (its
// non-default columns) or, for an existing row, the new full values of the
// columns that changed. This is the format without "_is_diff", which
// ovsdb-server 3.1 still reads (it writes "_is_diff": true records with
// column diffs itself; Open refuses such files with an error rather than
// misreading them). Compaction writes the schema and a single snapshot
// record of every row, as ovsdb-server's compaction does.
//
// # Protocol
//
// The JSON-RPC server is this package's own (server.go); only libovsdb's
// in-memory database and transaction engine are used. libovsdb's server
// cannot serve OVS's clients: it sends monitor updates as requests and
// blocks, inside the transaction lock, until the client replies, which
// ovs-vsctl and package dbcmd never do (the transaction that caused the
// update never gets its reply, nor does any later one); it refuses the
// array form of monitor requests; it never forgets a monitor; it knows no
// "comment", "abort" or "assert"; its "wait" compares sets in order, skips
// expected default values and sleeps while holding the lock. The server
// here does what ovsdb-server 3.1 does, tested side by side with it:
// monitor, monitor_cond and monitor_cond_since with notifications,
// monitor_cancel, waits with OVSDB value semantics and triggers (a wait with
// a timeout is retried after every commit until it holds or times out;
// "cancel" ends it), comments written to the file, locks, echo. Databases
// other than Open_vSwitch, _Server included, get ovsdb-server's "unknown
// database" error, which OVS's IDL and package dbcmd take for a standalone
// server. Not supported: monitor_cond_change, transaction history for
// monitor_cond_since (it always answers "not found" with the full
// contents, as ovsdb-server does for a standalone database), and "_version".
//
// # Crash safety
//
// A commit appends the record and fsyncs the file before it updates the
// in-memory data, queues the monitor updates and replies, so no client,
// transacting or monitoring, ever sees a change that is not on disk. On
// load, a torn or corrupt last record (a crash in the middle of an append)
// is cut off: the file is truncated to the last valid record.
package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	"github.com/ovn-kubernetes/libovsdb/database"
	"github.com/ovn-kubernetes/libovsdb/database/inmemory"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch/schema"
)

// Names of the files Open uses inside its directory.
const (
	// DBFile is the database file, in ovsdb-server's standalone format.
	DBFile = "conf.db"
	// SockFile is the unix socket the database is served on.
	SockFile = "db.sock"
)

// vswitchDB is the name of the served database.
const vswitchDB = "Open_vSwitch"

// DefaultCompactBytes is the file size past which the log is compacted when
// Options.CompactBytes is zero (ovsdb-server's own threshold is 10 MiB).
const DefaultCompactBytes = 10 << 20

// ErrClosed is returned by a transaction committed after Close or after a
// failure left the file and the in-memory data out of step.
var ErrClosed = errors.New("embedded: database closed or failed")

// Options configures Open. The zero value is usable.
type Options struct {
	// Logger receives the server's logs (slow clients, internal failures)
	// and compaction failures. Nil discards them.
	Logger *slog.Logger
	// CompactBytes is the file size past which the log is compacted, once it
	// has also grown to more than twice its size after the last compaction.
	// Zero means DefaultCompactBytes; negative disables compaction.
	CompactBytes int64
	// Comment is written as "_comment" in every transaction record whose
	// transaction has no "comment" operation of its own (those are written
	// instead, joined by newlines, as ovsdb-server does). Empty leaves it
	// out.
	Comment string
}

// DB is the Open_vSwitch database served on a unix socket and persisted in
// dir/conf.db. Its methods are safe for concurrent use.
type DB struct {
	dir, sock string
	srv       *server
	store     *store
	closeOnce sync.Once
	closeErr  error
}

// Open loads dir/conf.db (creating it, with only the schema record, when it
// does not exist; a torn last record is truncated away) and serves the
// database on dir/db.sock until Close. dir must exist and the socket path
// must fit the 107-byte limit of unix socket paths. ctx bounds the start-up
// only.
func Open(ctx context.Context, dir string, opts Options) (*DB, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("embedded: open %s: %w", dir, err)
	}
	sock := filepath.Join(dir, SockFile)
	if len(sock) > 107 {
		return nil, fmt.Errorf("embedded: socket path %q is longer than 107 bytes", sock)
	}
	slogger := opts.Logger
	if slogger == nil {
		slogger = slog.New(slog.DiscardHandler)
	}
	st, err := openStore(dir, opts, logr.FromSlogHandler(slogger.Handler()))
	if err != nil {
		return nil, err
	}
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		st.close()
		return nil, fmt.Errorf("embedded: remove stale socket: %w", err)
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "unix", sock)
	if err != nil {
		st.close()
		return nil, fmt.Errorf("embedded: listen on %s: %w", sock, err)
	}
	srv := newServer(st, slogger)
	srv.serve(ln)
	return &DB{dir: dir, sock: sock, srv: srv, store: st}, nil
}

// Endpoint returns the OVSDB connection string, "unix:" and the socket path.
func (d *DB) Endpoint() string { return "unix:" + d.sock }

// Path returns the path of the database file.
func (d *DB) Path() string { return filepath.Join(d.dir, DBFile) }

// Close stops serving and closes the database file. Every transaction that
// was acknowledged is in the file. Close is idempotent.
func (d *DB) Close() error {
	d.closeOnce.Do(func() {
		d.srv.close()
		d.closeErr = d.store.close()
	})
	return d.closeErr
}

// store is libovsdb's in-memory database whose Commit first makes the
// transaction durable in the file.
type store struct {
	database.Database
	model   model.DatabaseModel
	path    string
	opts    Options
	logger  logr.Logger
	schema  []byte
	mu      sync.Mutex
	f       *os.File // nil once closed or failed
	size    int64
	base    int64 // file size after the last load or compaction
	compact int64
}

func openStore(dir string, opts Options, logger logr.Logger) (*store, error) {
	clientModel, err := vswitch.FullDatabaseModel()
	if err != nil {
		return nil, fmt.Errorf("embedded: vswitch model: %w", err)
	}
	sch := vswitch.Schema()
	dbModel, errs := model.NewDatabaseModel(sch, clientModel)
	if len(errs) > 0 {
		return nil, fmt.Errorf("embedded: database model: %w", errors.Join(errs...))
	}
	l := logger.WithName("inmemory")
	inner := inmemory.NewDatabase(map[string]model.ClientDBModel{vswitchDB: clientModel}, &l)
	if err := inner.CreateDatabase(vswitchDB, sch); err != nil {
		return nil, fmt.Errorf("embedded: create database: %w", err)
	}
	compactJSON, err := compactSchema(schema.JSON())
	if err != nil {
		return nil, err
	}
	s := &store{Database: inner, model: dbModel, path: filepath.Join(dir, DBFile), opts: opts, logger: logger, schema: compactJSON}
	s.compact = opts.CompactBytes
	if s.compact == 0 {
		s.compact = DefaultCompactBytes
	}
	if err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

func compactSchema(text []byte) ([]byte, error) {
	var v any
	if err := json.Unmarshal(text, &v); err != nil {
		return nil, fmt.Errorf("embedded: parse schema: %w", err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("embedded: encode schema: %w", err)
	}
	return out, nil
}

// load reads the file into the in-memory database, truncating a torn tail,
// and opens it for appending. A file without a valid schema record (absent,
// or torn while being created) is created afresh.
func (s *store) load() error {
	buf, err := os.ReadFile(s.path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("embedded: read %s: %w", s.path, err)
	}
	records, good := parseLog(buf)
	if len(records) == 0 {
		if err := s.rewrite(nil); err != nil {
			return err
		}
		return s.reopen()
	}
	var hdr struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(records[0], &hdr); err != nil || hdr.Name != vswitchDB {
		return fmt.Errorf("embedded: %s: first record is not the %s schema", s.path, vswitchDB)
	}
	rows, err := replay(records[1:])
	if err != nil {
		return fmt.Errorf("embedded: %s: %w", s.path, err)
	}
	if err := s.insertAll(rows); err != nil {
		return err
	}
	if good < len(buf) {
		if err := os.Truncate(s.path, int64(good)); err != nil {
			return fmt.Errorf("embedded: truncate torn tail of %s: %w", s.path, err)
		}
	}
	if err := s.reopen(); err != nil {
		return err
	}
	return nil
}

// tableRows is the content of the database by table, row UUID and column,
// as JSON values.
type tableRows map[string]map[string]map[string]json.RawMessage

// replay applies transaction records to an empty database.
func replay(records []json.RawMessage) (tableRows, error) {
	rows := tableRows{}
	for i, rec := range records {
		var txn map[string]json.RawMessage
		if err := json.Unmarshal(rec, &txn); err != nil {
			return nil, fmt.Errorf("record %d: %w", i+2, err)
		}
		if d, ok := txn["_is_diff"]; ok && string(d) == "true" {
			return nil, fmt.Errorf("record %d: column-diff records (\"_is_diff\", written by ovsdb-server) are not supported", i+2)
		}
		for table, raw := range txn {
			if strings.HasPrefix(table, "_") {
				continue
			}
			var changes map[string]json.RawMessage
			if err := json.Unmarshal(raw, &changes); err != nil {
				return nil, fmt.Errorf("record %d, table %s: %w", i+2, table, err)
			}
			if rows[table] == nil {
				rows[table] = map[string]map[string]json.RawMessage{}
			}
			for id, change := range changes {
				if string(change) == "null" {
					delete(rows[table], id)
					continue
				}
				var cols map[string]json.RawMessage
				if err := json.Unmarshal(change, &cols); err != nil {
					return nil, fmt.Errorf("record %d, table %s, row %s: %w", i+2, table, id, err)
				}
				row := rows[table][id]
				if row == nil {
					row = map[string]json.RawMessage{}
					rows[table][id] = row
				}
				for c, v := range cols {
					row[c] = v
				}
			}
		}
	}
	return rows, nil
}

// insertAll inserts rows into the in-memory database in one transaction,
// without logging it.
func (s *store) insertAll(rows tableRows) error {
	var ops []ovsdb.Operation
	for table, byID := range rows {
		for id, cols := range byID {
			text, err := json.Marshal(cols)
			if err != nil {
				return fmt.Errorf("embedded: %s row %s: %w", table, id, err)
			}
			var row ovsdb.Row
			if err := json.Unmarshal(text, &row); err != nil {
				return fmt.Errorf("embedded: %s row %s: %w", table, id, err)
			}
			ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationInsert, Table: table, UUID: id, Row: row})
		}
	}
	if len(ops) == 0 {
		return nil
	}
	results, update := s.Database.NewTransaction(vswitchDB).Transact(ops...)
	for _, r := range results {
		if r != nil && r.Error != "" {
			return fmt.Errorf("embedded: load %s: %s: %s", s.path, r.Error, r.Details)
		}
	}
	if err := s.Database.Commit(vswitchDB, uuid.New(), update); err != nil {
		return fmt.Errorf("embedded: load %s: %w", s.path, err)
	}
	return nil
}

// reopen opens the file for appending and records its size.
func (s *store) reopen() error {
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("embedded: open %s: %w", s.path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("embedded: stat %s: %w", s.path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("embedded: sync %s: %w", s.path, err)
	}
	s.f, s.size, s.base = f, fi.Size(), fi.Size()
	return nil
}

// rewrite atomically replaces the file with the schema record and, when
// snapshot is not nil, one record holding it: temporary file, fsync,
// rename, fsync of the directory.
func (s *store) rewrite(snapshot []byte) error {
	tmp := s.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return fmt.Errorf("embedded: create %s: %w", tmp, err)
	}
	data := encodeRecord(s.schema)
	if snapshot != nil {
		data = append(data, encodeRecord(snapshot)...)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, s.path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("embedded: write %s: %w", s.path, err)
	}
	return syncDir(filepath.Dir(s.path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("embedded: open directory %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("embedded: sync directory %s: %w", dir, err)
	}
	return nil
}

// commitTxn appends the transaction to the file, with its comments, and
// fsyncs it, then applies it in memory. If the append fails the transaction
// fails and nothing changes; if applying fails after the append, the store
// refuses every further transaction (ErrClosed), since file and memory
// disagree.
func (s *store) commitTxn(update database.Update, comments []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return ErrClosed
	}
	rec, err := s.record(update, comments)
	if err != nil {
		return err
	}
	if rec != nil {
		data := encodeRecord(rec)
		if _, err := s.f.Write(data); err != nil {
			s.fail()
			return fmt.Errorf("embedded: append to %s: %w", s.path, err)
		}
		if err := s.f.Sync(); err != nil {
			s.fail()
			return fmt.Errorf("embedded: sync %s: %w", s.path, err)
		}
		s.size += int64(len(data))
	}
	if err := s.Database.Commit(vswitchDB, uuid.New(), update); err != nil {
		s.fail()
		return fmt.Errorf("embedded: commit: %w", err)
	}
	if s.compact > 0 && s.size > s.compact && s.size > 2*s.base {
		if err := s.compactLocked(); err != nil {
			s.logger.Error(err, "compaction failed; continuing with the uncompacted log")
		}
	}
	return nil
}

// fail closes the file after an error that may have left a partial record;
// later commits get ErrClosed and the next Open truncates the torn tail.
func (s *store) fail() {
	if s.f != nil {
		_ = s.f.Close()
		s.f = nil
	}
}

func (s *store) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	if err != nil {
		return fmt.Errorf("embedded: close %s: %w", s.path, err)
	}
	return nil
}

// Compact rewrites the file as the schema and one snapshot record.
func (d *DB) Compact(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("embedded: compact: %w", err)
	}
	d.store.mu.Lock()
	defer d.store.mu.Unlock()
	if d.store.f == nil {
		return ErrClosed
	}
	return d.store.compactLocked()
}

func (s *store) compactLocked() error {
	snap := map[string]any{"_date": time.Now().UnixMilli(), "_comment": "compacting database online"}
	for table := range s.model.Schema.Tables {
		rows, err := s.Database.List(vswitchDB, table)
		if err != nil {
			return fmt.Errorf("embedded: compact: list %s: %w", table, err)
		}
		out := map[string]map[string]any{}
		for id, m := range rows {
			row, err := s.columns(m)
			if err != nil {
				return err
			}
			cols := map[string]any{}
			for c, v := range row {
				if !v.isDefault {
					cols[c] = v.value
				}
			}
			out[id] = cols
		}
		if len(out) > 0 {
			snap[table] = out
		}
	}
	text, err := json.Marshal(snap)
	if err != nil {
		return fmt.Errorf("embedded: compact: encode: %w", err)
	}
	if err := s.rewrite(text); err != nil {
		return err
	}
	old := s.f
	if err := s.reopen(); err != nil {
		_ = old.Close()
		s.f = nil
		return err
	}
	_ = old.Close()
	return nil
}

// column is one column value in OVSDB notation.
type column struct {
	value     any
	isDefault bool
}

// columns converts a model to its columns (except _uuid and _version).
func (s *store) columns(m model.Model) (map[string]column, error) {
	info, err := s.model.NewModelInfo(m)
	if err != nil {
		return nil, fmt.Errorf("embedded: model info: %w", err)
	}
	out := map[string]column{}
	for name, col := range info.Metadata.TableSchema.Columns {
		native, err := info.FieldByColumn(name)
		if err != nil {
			continue
		}
		v, err := ovsdb.NativeToOvs(col, native)
		if err != nil {
			return nil, fmt.Errorf("embedded: %s column %s: %w", info.Metadata.TableName, name, err)
		}
		out[name] = column{value: v, isDefault: ovsdb.IsDefaultValue(col, native)}
	}
	return out, nil
}

// record encodes update as a transaction record, or returns nil when it
// changes nothing. comments, if any, are its "_comment"; else
// Options.Comment.
func (s *store) record(update database.Update, comments []string) ([]byte, error) {
	txn := map[string]any{}
	tables := update.GetUpdatedTables()
	sort.Strings(tables)
	for _, table := range tables {
		changes := map[string]any{}
		err := update.ForEachModelUpdate(table, func(id string, old, cur model.Model) error {
			if cur == nil {
				if old != nil {
					changes[id] = nil
				}
				return nil
			}
			curCols, err := s.columns(cur)
			if err != nil {
				return err
			}
			cols := map[string]any{}
			if old == nil {
				for c, v := range curCols {
					if !v.isDefault {
						cols[c] = v.value
					}
				}
				changes[id] = cols
				return nil
			}
			oldCols, err := s.columns(old)
			if err != nil {
				return err
			}
			for c, v := range curCols {
				if !reflect.DeepEqual(v.value, oldCols[c].value) {
					cols[c] = v.value
				}
			}
			if len(cols) > 0 {
				changes[id] = cols
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("embedded: encode %s changes: %w", table, err)
		}
		if len(changes) > 0 {
			txn[table] = changes
		}
	}
	if len(txn) == 0 {
		return nil, nil
	}
	txn["_date"] = time.Now().UnixMilli()
	if len(comments) > 0 {
		txn["_comment"] = strings.Join(comments, "\n")
	} else if s.opts.Comment != "" {
		txn["_comment"] = s.opts.Comment
	}
	text, err := json.Marshal(txn)
	if err != nil {
		return nil, fmt.Errorf("embedded: encode transaction: %w", err)
	}
	return text, nil
}
