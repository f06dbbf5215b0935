//go:build cgo

package duckstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/ovsplane/ovsplane/flowmon/query"
	"github.com/ovsplane/ovsplane/flowmon/store"
	"github.com/ovsplane/ovsplane/flowmon/store/internal/sqlflow"
)

// tablePrefix starts every day table's name (flows_YYYYMMDD).
const tablePrefix = "flows_"

// Store is the DuckDB flow store. It is safe for concurrent use: Appends and Retain are
// serialised on one writer connection, queries run in parallel on others.
type Store struct {
	connector *duckdb.Connector
	db        *sql.DB
	maxBatch  int

	// writeMu serialises Append, Retain and Close, and guards w and the reused buffers.
	writeMu sync.Mutex
	w       *sql.Conn
	row     []driver.Value
	arena   []byte
	byDay   map[sqlflow.Day][]int

	// mu guards days: read-locked for a query's whole run, write-locked to drop or add tables.
	mu     sync.RWMutex
	days   map[sqlflow.Day]bool
	closed bool
}

var _ store.Store = (*Store)(nil)

// Open opens (creating when missing) the store's database file in dir, which must exist.
func Open(ctx context.Context, dir string, opts Options) (*Store, error) {
	name := opts.FileName
	if name == "" {
		name = DefaultFileName
	}
	if strings.ContainsRune(name, os.PathSeparator) || name == "." || name == ".." {
		return nil, fmt.Errorf("duckstore: file name %q: give a plain file name, not a path", name)
	}
	if opts.MaxBatchRecords < 0 || opts.Threads < 0 {
		return nil, fmt.Errorf("duckstore: options %+v: limits must not be negative", opts)
	}
	maxBatch := opts.MaxBatchRecords
	if maxBatch == 0 {
		maxBatch = DefaultMaxBatchRecords
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("duckstore: data directory %q: create it first (stat: %v)", dir, err)
	}
	path := filepath.Join(dir, name)
	threads := opts.Threads
	connector, err := duckdb.NewConnector(path, func(execer driver.ExecerContext) error {
		if threads == 0 {
			return nil
		}
		_, err := execer.ExecContext(ctx, fmt.Sprintf("SET threads = %d", threads), nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("duckstore: open %s: %w", path, err)
	}
	s := &Store{connector: connector, db: sql.OpenDB(connector), maxBatch: maxBatch,
		days: map[sqlflow.Day]bool{}, byDay: map[sqlflow.Day][]int{}, row: make([]driver.Value, sqlflow.NumColumns)}
	if err := s.init(ctx); err != nil {
		s.db.Close()
		connector.Close()
		return nil, fmt.Errorf("duckstore: open %s: %w", path, err)
	}
	return s, nil
}

// init creates the batches table, loads the day tables and takes the writer connection.
func (s *Store) init(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS flow_batches (id VARCHAR PRIMARY KEY, last_day BIGINT NOT NULL)"); err != nil {
		return fmt.Errorf("create flow_batches: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' AND table_catalog = current_database()")
	if err != nil {
		return fmt.Errorf("list day tables: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return fmt.Errorf("list day tables: %w", err)
		}
		if d, ok := sqlflow.ParseTable(tablePrefix, name); ok {
			s.days[d] = true
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("list day tables: %w", err)
	}
	s.w, err = s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("writer connection: %w", err)
	}
	return nil
}

// Days returns the UTC days the store holds a partition for, oldest first.
func (s *Store) Days() []time.Time {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]time.Time, 0, len(s.days))
	for d := range s.days {
		out = append(out, d.Time())
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}

// Append stores b atomically and at most once (see store.Store).
func (s *Store) Append(ctx context.Context, b store.Batch) error {
	if b.ID == "" || len(b.ID) > MaxBatchIDLen {
		return fmt.Errorf("duckstore: batch ID %.40q: use 1 to %d bytes", b.ID, MaxBatchIDLen)
	}
	if len(b.Records) > s.maxBatch {
		return fmt.Errorf("duckstore: batch %s has %d records: at most %d (split it or raise MaxBatchRecords)", b.ID, len(b.Records), s.maxBatch)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.w == nil {
		return fmt.Errorf("duckstore: append batch %s: store is closed", b.ID)
	}
	if err := s.append(ctx, b); err != nil {
		return fmt.Errorf("duckstore: append batch %s: %w", b.ID, err)
	}
	return nil
}

// append runs Append's transaction; the caller holds writeMu.
func (s *Store) append(ctx context.Context, b store.Batch) (err error) {
	for d, idx := range s.byDay { // keep the index slices of the days still written to
		if len(idx) == 0 {
			delete(s.byDay, d)
		} else {
			s.byDay[d] = idx[:0]
		}
	}
	lastDay := sqlflow.DayOf(time.Now().UnixNano())
	for i := range b.Records {
		d := sqlflow.DayOf(b.Records[i].End)
		s.byDay[d] = append(s.byDay[d], i)
		if i == 0 || d > lastDay {
			lastDay = d
		}
	}
	if _, err := s.w.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			if _, rbErr := s.w.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); rbErr != nil {
				err = errors.Join(err, fmt.Errorf("rollback: %w", rbErr))
			}
		}
	}()
	var n int
	if err := s.w.QueryRowContext(ctx, "SELECT count(*) FROM flow_batches WHERE id = $1", b.ID).Scan(&n); err != nil {
		return fmt.Errorf("look up batch ID: %w", err)
	}
	if n > 0 {
		return nil // stored before: the deferred rollback ends the empty transaction
	}
	var created []sqlflow.Day
	for d, idx := range s.byDay {
		if len(idx) == 0 {
			continue
		}
		s.mu.RLock()
		have := s.days[d]
		s.mu.RUnlock()
		if !have {
			if _, err := s.w.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+d.Table(tablePrefix)+" ("+sqlflow.ColumnDefs("BLOB", "VARCHAR")+")"); err != nil {
				return fmt.Errorf("create day table %s: %w", d.Table(tablePrefix), err)
			}
			created = append(created, d)
		}
		if err := s.appendDay(ctx, d, b, idx); err != nil {
			return err
		}
	}
	if _, err := s.w.ExecContext(ctx, "INSERT INTO flow_batches (id, last_day) VALUES ($1, $2)", b.ID, int64(lastDay)); err != nil {
		return fmt.Errorf("record batch ID: %w", err)
	}
	if _, err := s.w.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	committed = true
	if len(created) > 0 {
		s.mu.Lock()
		for _, d := range created {
			s.days[d] = true
		}
		s.mu.Unlock()
	}
	return nil
}

// appendDay appends the records idx of b to day d's table through one Appender.
func (s *Store) appendDay(ctx context.Context, d sqlflow.Day, b store.Batch, idx []int) error {
	table := d.Table(tablePrefix)
	return s.w.Raw(func(dc any) error {
		conn, ok := dc.(driver.Conn)
		if !ok {
			return fmt.Errorf("appender on %s: driver connection is %T", table, dc)
		}
		app, err := duckdb.NewAppender(conn, "", "", table)
		if err != nil {
			return fmt.Errorf("appender on %s: %w", table, err)
		}
		// The arena holds the addresses of this day's rows; DuckDB copies each row's values into
		// its chunk on AppendRow, so the arena is reused at the next day.
		need := len(idx) * 3 * 16
		if cap(s.arena) < need {
			s.arena = make([]byte, 0, need)
		}
		arena := s.arena[:0]
		row := s.row
		var appendErr error
		for _, i := range idx {
			r := &b.Records[i]
			if appendErr = sqlflow.CheckRecord(r); appendErr != nil {
				break
			}
			mark := len(arena)
			arena = sqlflow.AddrBytes(arena, r.Exporter)
			e := len(arena)
			arena = sqlflow.AddrBytes(arena, r.Src)
			sEnd := len(arena)
			arena = sqlflow.AddrBytes(arena, r.Dst)
			row[0], row[1], row[2] = r.Received, r.Start, r.End
			row[3], row[4], row[5], row[6] = arena[mark:e:e], uint8(r.Protocol), r.Domain, r.SamplingRate
			row[7], row[8], row[9] = arena[e:sEnd:sEnd], arena[sEnd:len(arena):len(arena)], r.Proto
			row[10], row[11], row[12], row[13] = r.SrcPort, r.DstPort, r.TCPFlags, r.ToS
			row[14], row[15] = sqlflow.Clamp(r.Bytes), sqlflow.Clamp(r.Packets)
			row[16], row[17], row[18], row[19], row[20] = r.InIf, r.OutIf, r.Bridge, r.InPort, r.OutPort
			if appendErr = app.AppendRow(row...); appendErr != nil {
				appendErr = fmt.Errorf("append row to %s: %w", table, appendErr)
				break
			}
		}
		clear(row)
		if appendErr != nil {
			return errors.Join(appendErr, app.Clear(), app.CloseWithCancel(ctx))
		}
		if err := app.CloseWithCancel(ctx); err != nil {
			return fmt.Errorf("flush rows to %s: %w", table, err)
		}
		return nil
	})
}

// Query answers q (validated by the caller).
func (s *Store) Query(ctx context.Context, q query.Query) (query.Result, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return query.Result{}, errors.New("duckstore: query: store is closed")
	}
	var tables []string
	for d := sqlflow.DayOf(q.From.UnixNano()); d <= sqlflow.DayOf(q.To.UnixNano()-1); d++ {
		if s.days[d] {
			tables = append(tables, "SELECT "+sqlflow.ColumnList+" FROM "+d.Table(tablePrefix))
		}
	}
	if len(tables) == 0 {
		return sqlflow.Empty(q), nil
	}
	source := "(" + strings.Join(tables, " UNION ALL ") + ")"
	st, err := sqlflow.Build(sqlflow.Dialect{TextOrder: func(col string) string { return col }}, source, q)
	if err != nil {
		return query.Result{}, fmt.Errorf("duckstore: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, st.SQL, st.Args...)
	if err != nil {
		return query.Result{}, fmt.Errorf("duckstore: query: %w", err)
	}
	defer rows.Close()
	res, err := sqlflow.Collect(q, rows)
	if err == nil {
		err = rows.Err()
	}
	if err != nil {
		return query.Result{}, fmt.Errorf("duckstore: query: %w", err)
	}
	return res, nil
}

// Retain drops every day table whose day ends at or before cutoff, and the batch IDs of those
// days, and returns how many tables it dropped.
func (s *Store) Retain(ctx context.Context, cutoff time.Time) (int, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.w == nil {
		return 0, errors.New("duckstore: retain: store is closed")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var drop []sqlflow.Day
	for d := range s.days {
		if d.Start()+sqlflow.DayNanos <= cutoff.UnixNano() {
			drop = append(drop, d)
		}
	}
	slices.Sort(drop)
	n := 0
	for _, d := range drop {
		if _, err := s.w.ExecContext(ctx, "DROP TABLE IF EXISTS "+d.Table(tablePrefix)); err != nil {
			return n, fmt.Errorf("duckstore: retain: drop %s: %w", d.Table(tablePrefix), err)
		}
		delete(s.days, d)
		n++
	}
	// A day ends at or before cutoff when it is before cutoff's own day.
	lastDropped := sqlflow.DayOf(cutoff.UnixNano()) - 1
	if _, err := s.w.ExecContext(ctx, "DELETE FROM flow_batches WHERE last_day <= $1", int64(lastDropped)); err != nil {
		return n, fmt.Errorf("duckstore: retain: forget batch IDs: %w", err)
	}
	if n > 0 {
		if _, err := s.w.ExecContext(ctx, "CHECKPOINT"); err != nil {
			return n, fmt.Errorf("duckstore: retain: checkpoint: %w", err)
		}
	}
	return n, nil
}

// Close waits for a running Append or Retain, checkpoints and closes the database.
func (s *Store) Close() error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		return nil
	}
	s.closed = true
	err := s.w.Close()
	s.w = nil
	return errors.Join(err, s.db.Close(), s.connector.Close())
}
