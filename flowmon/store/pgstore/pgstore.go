// Package pgstore is flowmon's shared flow store on PostgreSQL (15 or later), for sites where
// several collectors write to one server. It implements store.Store.
//
// # Partitions
//
// Records live in flows, a table partitioned by range of end_ns (Unix nanoseconds), with one
// partition per UTC day, flows_YYYYMMDD. Queries name flows and PostgreSQL prunes the
// partitions outside [From, To); within a partition a BRIN index on end_ns skips the blocks
// outside the range. An Append creates the partitions it needs first, each in a
// short transaction of its own under a transaction-level advisory lock, so collectors racing
// to create the same day serialise instead of failing on the catalog's unique indexes. Retain
// drops whole partitions under the same lock.
//
// # Writes
//
// Append is one transaction: it inserts the batch ID into flow_batches (ON CONFLICT DO NOTHING
// — a batch stored before, by this or another collector, makes the Append a no-op), then
// streams the records with COPY … FROM STDIN in PostgreSQL's binary format, encoded here into a
// bounded, reused buffer (no per-value boxing, unlike pgx's CopyFromSource), and commits. A
// failure anywhere rolls back records and ID together, so the batch may be retried.
//
// Column encoding is flowmon/store/internal/sqlflow's, shared with duckstore.
package pgstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ovsplane/ovsplane/flowmon/flow"
	"github.com/ovsplane/ovsplane/flowmon/query"
	"github.com/ovsplane/ovsplane/flowmon/store"
	"github.com/ovsplane/ovsplane/flowmon/store/internal/sqlflow"
)

// Limits and defaults.
const (
	// DefaultMaxBatchRecords is Options.MaxBatchRecords when zero.
	DefaultMaxBatchRecords = 1 << 20
	// MaxBatchIDLen is the longest Batch.ID accepted.
	MaxBatchIDLen = 256
	// DefaultCopyBuffer is Options.CopyBuffer when zero: the bytes of encoded rows one COPY
	// message carries.
	DefaultCopyBuffer = 256 << 10
	// MinCopyBuffer and MaxCopyBuffer bound Options.CopyBuffer; the minimum holds any one row.
	MinCopyBuffer = 4 << 10
	MaxCopyBuffer = 16 << 20
)

const (
	tablePrefix = "flows_"
	// lockKey is the advisory lock (pg_advisory_xact_lock) every collector takes to create or
	// drop partitions: "flowmon" in ASCII.
	lockKey = 0x666c6f776d6f6e
)

// Options tune Open. The zero value is the default.
type Options struct {
	// MaxBatchRecords bounds one Append's records; DefaultMaxBatchRecords when 0.
	MaxBatchRecords int
	// CopyBuffer is the size of the buffer Append encodes rows into (MinCopyBuffer to
	// MaxCopyBuffer); DefaultCopyBuffer when 0. One buffer per concurrent Append.
	CopyBuffer int
	// MaxConns caps the connection pool; pgxpool's default (at least 4) when 0.
	MaxConns int32
}

// Store is the PostgreSQL flow store, safe for concurrent use by many goroutines and by many
// Stores on one database.
type Store struct {
	pool     *pgxpool.Pool
	maxBatch int
	encoders sync.Pool // *encoder

	mu    sync.Mutex
	known map[sqlflow.Day]bool // partitions this Store created or saw
}

var _ store.Store = (*Store)(nil)

// Open connects to the database connString names (a libpq key/value string or a URL),
// creates the flows and flow_batches tables when missing, and returns the store.
func Open(ctx context.Context, connString string, opts Options) (*Store, error) {
	if opts.MaxBatchRecords < 0 || opts.MaxConns < 0 {
		return nil, fmt.Errorf("pgstore: options %+v: limits must not be negative", opts)
	}
	copyBuf := opts.CopyBuffer
	if copyBuf == 0 {
		copyBuf = DefaultCopyBuffer
	}
	if copyBuf < MinCopyBuffer || copyBuf > MaxCopyBuffer {
		return nil, fmt.Errorf("pgstore: copy buffer %d bytes: use %d to %d", copyBuf, MinCopyBuffer, MaxCopyBuffer)
	}
	maxBatch := opts.MaxBatchRecords
	if maxBatch == 0 {
		maxBatch = DefaultMaxBatchRecords
	}
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("pgstore: connection string: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: connect: %w", err)
	}
	s := &Store{pool: pool, maxBatch: maxBatch, known: map[sqlflow.Day]bool{}}
	s.encoders.New = func() any { return &encoder{buf: make([]byte, 0, copyBuf)} }
	if err := s.locked(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "CREATE TABLE IF NOT EXISTS flows ("+sqlflow.ColumnDefs("bytea", "text")+") PARTITION BY RANGE (end_ns)")
		if err == nil {
			// A BRIN index on end_ns: tiny and nearly free to maintain on rows arriving in
			// time order, it lets a query of part of a day skip the rest of the partition.
			_, err = tx.Exec(ctx, "CREATE INDEX IF NOT EXISTS flows_end_ns ON flows USING brin (end_ns)")
		}
		if err == nil {
			_, err = tx.Exec(ctx, "CREATE TABLE IF NOT EXISTS flow_batches (id text PRIMARY KEY, last_day bigint NOT NULL)")
		}
		return err
	}); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: create tables: %w", err)
	}
	return s, nil
}

// locked runs f in a transaction holding the partition lock.
func (s *Store) locked(ctx context.Context, f func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(lockKey)); err != nil {
			return fmt.Errorf("take the partition lock: %w", err)
		}
		return f(tx)
	})
}

// ensureDay creates day d's partition unless this Store knows it exists.
func (s *Store) ensureDay(ctx context.Context, d sqlflow.Day) error {
	s.mu.Lock()
	have := s.known[d]
	s.mu.Unlock()
	if have {
		return nil
	}
	// The bounds and the name come from d, an integer: nothing untrusted is spliced.
	sql := "CREATE TABLE IF NOT EXISTS " + d.Table(tablePrefix) + " PARTITION OF flows FOR VALUES FROM (" +
		strconv.FormatInt(d.Start(), 10) + ") TO (" + strconv.FormatInt(d.Start()+sqlflow.DayNanos, 10) + ")"
	if err := s.locked(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, sql)
		return err
	}); err != nil {
		return fmt.Errorf("create partition %s: %w", d.Table(tablePrefix), err)
	}
	s.mu.Lock()
	s.known[d] = true
	s.mu.Unlock()
	return nil
}

// forget drops the cache of known partitions (another collector's Retain may have dropped one).
func (s *Store) forget() {
	s.mu.Lock()
	clear(s.known)
	s.mu.Unlock()
}

// Append stores b atomically and at most once (see store.Store).
func (s *Store) Append(ctx context.Context, b store.Batch) error {
	if b.ID == "" || len(b.ID) > MaxBatchIDLen {
		return fmt.Errorf("pgstore: batch ID %.40q: use 1 to %d bytes", b.ID, MaxBatchIDLen)
	}
	if len(b.Records) > s.maxBatch {
		return fmt.Errorf("pgstore: batch %s has %d records: at most %d (split it or raise MaxBatchRecords)", b.ID, len(b.Records), s.maxBatch)
	}
	err := s.append(ctx, b)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23514" { // no partition for a row: dropped meanwhile
		s.forget()
		err = s.append(ctx, b)
	}
	if err != nil {
		return fmt.Errorf("pgstore: append batch %s: %w", b.ID, err)
	}
	return nil
}

// append is one try of Append.
func (s *Store) append(ctx context.Context, b store.Batch) error {
	lastDay := sqlflow.DayOf(time.Now().UnixNano())
	var days []sqlflow.Day
	for i := range b.Records {
		d := sqlflow.DayOf(b.Records[i].End)
		if i == 0 || d > lastDay {
			lastDay = d
		}
		if !slices.Contains(days, d) {
			days = append(days, d)
		}
	}
	for _, d := range days {
		if err := s.ensureDay(ctx, d); err != nil {
			return err
		}
	}
	enc := s.encoders.Get().(*encoder)
	defer s.encoders.Put(enc)
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "INSERT INTO flow_batches (id, last_day) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING", b.ID, int64(lastDay))
		if err != nil {
			return fmt.Errorf("record batch ID: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return nil // stored before; committing the empty transaction changes nothing
		}
		if len(b.Records) == 0 {
			return nil
		}
		enc.reset(b.Records)
		if _, err := tx.Conn().PgConn().CopyFrom(ctx, enc, "COPY flows ("+sqlflow.ColumnList+") FROM STDIN WITH (FORMAT binary)"); err != nil {
			return fmt.Errorf("copy %d records: %w", len(b.Records), err)
		}
		return nil
	})
}

// encoder is an io.Reader of a batch in PostgreSQL's binary COPY format, encoding rows into a
// fixed-capacity buffer as the reader drains it.
type encoder struct {
	recs   []flow.Record
	next   int  // next record to encode
	header bool // the file header is written
	done   bool // the trailer is written
	buf    []byte
	off    int // buf[off:] is not yet read
}

// reset starts encoding recs.
func (e *encoder) reset(recs []flow.Record) {
	e.recs, e.next, e.header, e.done, e.buf, e.off = recs, 0, false, false, e.buf[:0], 0
}

// Read fills p with encoded rows; it fails on a record sqlflow.CheckRecord rejects, which
// aborts the COPY.
func (e *encoder) Read(p []byte) (int, error) {
	if e.off == len(e.buf) {
		if err := e.fill(); err != nil {
			return 0, err
		}
		if len(e.buf) == 0 {
			e.recs = nil
			return 0, io.EOF
		}
	}
	n := copy(p, e.buf[e.off:])
	e.off += n
	return n, nil
}

// maxRowBytes bounds one encoded row: 21 fields' lengths, 3 addresses, 3 names, the rest 8 bytes.
const maxRowBytes = 2 + sqlflow.NumColumns*4 + 3*16 + 3*255 + 15*8

// fill encodes rows into the emptied buffer until it would overflow or the batch ends, adding
// the header before the first row and the trailer after the last.
func (e *encoder) fill() error {
	b := e.buf[:0]
	e.off = 0
	if e.done {
		e.buf = b
		return nil
	}
	if !e.header {
		b = append(b, "PGCOPY\n\xff\r\n\x00"...)
		b = binary.BigEndian.AppendUint32(b, 0) // flags
		b = binary.BigEndian.AppendUint32(b, 0) // header extension length
		e.header = true
	}
	for e.next < len(e.recs) && len(b)+maxRowBytes <= cap(b) {
		r := &e.recs[e.next]
		if err := sqlflow.CheckRecord(r); err != nil {
			e.buf = b[:0]
			return err
		}
		b = binary.BigEndian.AppendUint16(b, sqlflow.NumColumns)
		b = int8f(b, r.Received)
		b = int8f(b, r.Start)
		b = int8f(b, r.End)
		b = addrf(b, r.Exporter)
		b = int2f(b, int16(r.Protocol))
		b = int8f(b, int64(r.Domain))
		b = int8f(b, int64(r.SamplingRate))
		b = addrf(b, r.Src)
		b = addrf(b, r.Dst)
		b = int2f(b, int16(r.Proto))
		b = int4f(b, int32(r.SrcPort))
		b = int4f(b, int32(r.DstPort))
		b = int2f(b, int16(r.TCPFlags))
		b = int2f(b, int16(r.ToS))
		b = int8f(b, sqlflow.Clamp(r.Bytes))
		b = int8f(b, sqlflow.Clamp(r.Packets))
		b = int8f(b, int64(r.InIf))
		b = int8f(b, int64(r.OutIf))
		b = textf(b, r.Bridge)
		b = textf(b, r.InPort)
		b = textf(b, r.OutPort)
		e.next++
	}
	if e.next == len(e.recs) && len(b)+2 <= cap(b) {
		b = binary.BigEndian.AppendUint16(b, 0xffff) // trailer: -1
		e.done = true
	}
	e.buf = b
	return nil
}

func int8f(b []byte, v int64) []byte {
	b = binary.BigEndian.AppendUint32(b, 8)
	return binary.BigEndian.AppendUint64(b, uint64(v))
}

func int4f(b []byte, v int32) []byte {
	b = binary.BigEndian.AppendUint32(b, 4)
	return binary.BigEndian.AppendUint32(b, uint32(v))
}

func int2f(b []byte, v int16) []byte {
	b = binary.BigEndian.AppendUint32(b, 2)
	return binary.BigEndian.AppendUint16(b, uint16(v))
}

func addrf(b []byte, a netip.Addr) []byte {
	at := len(b)
	b = binary.BigEndian.AppendUint32(b, 0)
	b = sqlflow.AddrBytes(b, a)
	binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	return b
}

func textf(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// Query answers q (validated by the caller).
func (s *Store) Query(ctx context.Context, q query.Query) (query.Result, error) {
	st, err := sqlflow.Build(sqlflow.Dialect{TextOrder: func(col string) string { return col + ` COLLATE "C"` }}, "flows", q)
	if err != nil {
		return query.Result{}, fmt.Errorf("pgstore: %w", err)
	}
	rows, err := s.pool.Query(ctx, st.SQL, st.Args...)
	if err != nil {
		return query.Result{}, fmt.Errorf("pgstore: query: %w", err)
	}
	defer rows.Close()
	res, err := sqlflow.Collect(q, rows)
	if err == nil {
		err = rows.Err()
	}
	if err != nil {
		return query.Result{}, fmt.Errorf("pgstore: query: %w", err)
	}
	return res, nil
}

// Retain drops every day partition whose day ends at or before cutoff, and the batch IDs of
// those days, and returns how many partitions it dropped.
func (s *Store) Retain(ctx context.Context, cutoff time.Time) (int, error) {
	lastDropped := sqlflow.DayOf(cutoff.UnixNano()) - 1
	n := 0
	err := s.locked(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'flows'::regclass")
		if err != nil {
			return fmt.Errorf("list partitions: %w", err)
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("list partitions: %w", err)
		}
		var drop []sqlflow.Day
		for _, name := range names {
			if d, ok := sqlflow.ParseTable(tablePrefix, name); ok && d <= lastDropped {
				drop = append(drop, d)
			}
		}
		slices.Sort(drop)
		for _, d := range drop {
			// The name is rebuilt from d, never taken from the catalog's text.
			if _, err := tx.Exec(ctx, "DROP TABLE IF EXISTS "+d.Table(tablePrefix)); err != nil {
				return fmt.Errorf("drop %s: %w", d.Table(tablePrefix), err)
			}
		}
		if _, err := tx.Exec(ctx, "DELETE FROM flow_batches WHERE last_day <= $1", int64(lastDropped)); err != nil {
			return fmt.Errorf("forget batch IDs: %w", err)
		}
		n = len(drop)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("pgstore: retain: %w", err)
	}
	if n > 0 {
		s.forget()
	}
	return n, nil
}

// Close closes the connection pool, waiting for connections in use to be released.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}
