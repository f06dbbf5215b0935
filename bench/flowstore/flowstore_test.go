package flowstore

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"

	"github.com/ovsplane/ovsplane/flowmon/flow"
	"github.com/ovsplane/ovsplane/flowmon/query"
	"github.com/ovsplane/ovsplane/flowmon/store"
	"github.com/ovsplane/ovsplane/flowmon/store/duckstore"
	"github.com/ovsplane/ovsplane/flowmon/store/pgstore"
	"github.com/ovsplane/ovsplane/flowmon/store/storetest"
	"github.com/ovsplane/ovsplane/test/lab"
)

// batchSize is the records per Append, a collector's batch.
const batchSize = 10_000

// rows returns FLOWSTORE_ROWS, rounded up to whole batches (default 1,000,000).
func rows(b *testing.B) int {
	n := 1_000_000
	if v := os.Getenv("FLOWSTORE_ROWS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 || n > 1_000_000_000 {
			b.Fatalf("FLOWSTORE_ROWS=%q: want 1 to 1e9 rows", v)
		}
	}
	return (n + batchSize - 1) / batchSize * batchSize
}

// recordsFor returns one day's worth of generated records to append, batch by batch,
// shifted so that every batch has fresh End times.
func recordsFor(_ *testing.B) []flow.Record {
	return storetest.Records(1, batchSize, 1)
}

// topQuery is the measured top-N: the 10 sources with the most bytes over the whole day.
func topQuery() query.Query {
	return query.Query{Kind: query.Top, From: storetest.Day0(), To: storetest.Day0().Add(24 * time.Hour),
		Limit: 10, GroupBy: query.KeySrc, Metric: query.Bytes}
}

// appendRows appends n rows to s in batches and reports rows/s and CPU-µs per row (this
// process's, plus the server's when serverPID is not 0).
func appendRows(b *testing.B, s store.Store, n, serverPID int) {
	recs := recordsFor(b)
	m := startMeter(b, serverPID)
	for i := 0; i < n/batchSize; i++ {
		if err := s.Append(b.Context(), store.Batch{ID: "bench-" + strconv.Itoa(i), Records: recs}); err != nil {
			b.Fatalf("Append: %v", err)
		}
	}
	m.report(b, n)
}

// meter measures wall time and CPU time of this process and of a server's process tree.
type meter struct {
	serverPID       int
	start           time.Time
	self, serverCPU time.Duration
}

func startMeter(b *testing.B, serverPID int) meter {
	return meter{serverPID: serverPID, start: time.Now(), self: selfCPU(b), serverCPU: treeCPU(serverPID)}
}

// report reports rows/s, client CPU-µs/row and, for a server, server CPU-µs/row.
func (m meter) report(b *testing.B, n int) {
	b.ReportMetric(float64(n)/time.Since(m.start).Seconds(), "rows/s")
	b.ReportMetric(float64((selfCPU(b)-m.self).Microseconds())/float64(n), "client-cpu-µs/row")
	if m.serverPID != 0 {
		b.ReportMetric(float64((treeCPU(m.serverPID)-m.serverCPU).Microseconds())/float64(n), "server-cpu-µs/row")
	}
}

// selfCPU is this process's user+system CPU time so far (every thread, DuckDB's included).
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// treeCPU sums user+system CPU of pid and its live children (a postmaster and its backends),
// read from /proc; 0 for pid 0.
func treeCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	var ticks int64
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		stat, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the parenthesised command: state ppid … utime(14) stime(15).
		rest := stat[bytes.LastIndexByte(stat, ')')+2:]
		f := strings.Fields(string(rest))
		if len(f) < 13 {
			continue
		}
		if d.Name() != strconv.Itoa(pid) && f[1] != strconv.Itoa(pid) {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + s
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ is 100 on Linux
}

// seriesQuery is the measured time series: bytes per minute over the whole day.
func seriesQuery() query.Query {
	return query.Query{Kind: query.Series, From: storetest.Day0(), To: storetest.Day0().Add(24 * time.Hour),
		Metric: query.Bytes, Interval: time.Minute}
}

// timeQuery runs a query 3 times and reports its mean latency as unit.
func timeQuery(b *testing.B, unit string, ask func(ctx context.Context) (int, error)) {
	start := time.Now()
	const runs = 3
	for range runs {
		n, err := ask(b.Context())
		if err != nil || n == 0 {
			b.Fatalf("%s: %d rows, %v", unit, n, err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/runs, unit)
}

// queries times the top-N and the series on s.
func queries(b *testing.B, s store.Store) {
	timeQuery(b, "ms/top-N", func(ctx context.Context) (int, error) {
		r, err := s.Query(ctx, topQuery())
		return len(r.Groups), err
	})
	timeQuery(b, "ms/series", func(ctx context.Context) (int, error) {
		r, err := s.Query(ctx, seriesQuery())
		return len(r.Points), err
	})
}

func BenchmarkStores(b *testing.B) {
	n := rows(b)
	b.Run("duckdb", func(b *testing.B) {
		for b.Loop() {
			s, err := duckstore.Open(b.Context(), b.TempDir(), duckstore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			appendRows(b, s, n, 0)
			queries(b, s)
			s.Close()
		}
	})
	b.Run("postgres", func(b *testing.B) {
		p := lab.StartPostgres(b)
		for i := 0; b.Loop(); i++ {
			s := openPG(b, p, fmt.Sprintf("bench%d", i))
			appendRows(b, s, n, p.PID())
			queries(b, s)
			s.Close()
		}
	})
	b.Run("postgres-pgx-copyfromsource", func(b *testing.B) {
		p := lab.StartPostgres(b)
		for i := 0; b.Loop(); i++ {
			name := fmt.Sprintf("benchpgx%d", i)
			s := openPG(b, p, name)
			// pgstore creates the day's partition; the rows then go through pgx's CopyFrom.
			if err := s.Append(b.Context(), store.Batch{ID: "first", Records: recordsFor(b)[:1]}); err != nil {
				b.Fatal(err)
			}
			s.Close()
			appendPGX(b, p.ConnString(name), n, p.PID())
		}
	})
	b.Run("sqlite", func(b *testing.B) {
		for b.Loop() {
			db := openSQLite(b)
			appendSQLite(b, db, n)
			timeQuery(b, "ms/top-N", func(ctx context.Context) (int, error) { return topSQLite(ctx, db) })
			timeQuery(b, "ms/series", func(ctx context.Context) (int, error) { return seriesSQLite(ctx, db) })
			db.Close()
		}
	})
}

func openPG(b *testing.B, p *lab.Postgres, name string) *pgstore.Store {
	conn, err := pgx.Connect(b.Context(), p.ConnString("postgres"))
	if err != nil {
		b.Fatal(err)
	}
	_, err = conn.Exec(b.Context(), "CREATE DATABASE "+name) // name: our own counter
	conn.Close(context.WithoutCancel(b.Context()))
	if err != nil {
		b.Fatal(err)
	}
	s, err := pgstore.Open(b.Context(), p.ConnString(name), pgstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// appendPGX is pgstore's write (one transaction per batch) with pgx's CopyFromSource, which
// boxes every value as an any.
func appendPGX(b *testing.B, connString string, n, serverPID int) {
	conn, err := pgx.Connect(b.Context(), connString)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(b.Context()))
	recs := recordsFor(b)
	cols := []string{"received_ns", "start_ns", "end_ns", "exporter", "protocol", "obs_domain", "sampling",
		"src", "dst", "proto", "src_port", "dst_port", "tcp_flags", "tos", "bytes", "packets", "in_if", "out_if",
		"bridge", "in_port", "out_port"}
	m := startMeter(b, serverPID)
	for range n / batchSize {
		i := 0
		src := pgx.CopyFromFunc(func() ([]any, error) {
			if i == len(recs) {
				return nil, nil
			}
			r := &recs[i]
			i++
			return []any{r.Received, r.Start, r.End, addr(r.Exporter), int16(r.Protocol), int64(r.Domain),
				int64(r.SamplingRate), addr(r.Src), addr(r.Dst), int16(r.Proto), int32(r.SrcPort), int32(r.DstPort),
				int16(r.TCPFlags), int16(r.ToS), int64(r.Bytes), int64(r.Packets), int64(r.InIf), int64(r.OutIf),
				r.Bridge, r.InPort, r.OutPort}, nil
		})
		err := pgx.BeginFunc(b.Context(), conn, func(tx pgx.Tx) error {
			_, err := tx.CopyFrom(b.Context(), pgx.Identifier{"flows"}, cols, src)
			return err
		})
		if err != nil {
			b.Fatalf("CopyFrom: %v", err)
		}
	}
	m.report(b, n)
}

func openSQLite(b *testing.B) *sql.DB {
	db, err := sql.Open("sqlite", filepath.Join(b.TempDir(), "flows.sqlite")+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	_, err = db.ExecContext(b.Context(), `CREATE TABLE flows (received_ns INTEGER, start_ns INTEGER, end_ns INTEGER,
		exporter BLOB, protocol INTEGER, obs_domain INTEGER, sampling INTEGER, src BLOB, dst BLOB, proto INTEGER,
		src_port INTEGER, dst_port INTEGER, tcp_flags INTEGER, tos INTEGER, bytes INTEGER, packets INTEGER,
		in_if INTEGER, out_if INTEGER, bridge TEXT, in_port TEXT, out_port TEXT);
		CREATE INDEX flows_end ON flows (end_ns)`)
	if err != nil {
		b.Fatal(err)
	}
	return db
}

// appendSQLite appends with a prepared INSERT per row, one transaction per batch: SQLite's
// fastest plain path.
func appendSQLite(b *testing.B, db *sql.DB, n int) {
	recs := recordsFor(b)
	m := startMeter(b, 0)
	for range n / batchSize {
		tx, err := db.BeginTx(b.Context(), nil)
		if err != nil {
			b.Fatal(err)
		}
		st, err := tx.PrepareContext(b.Context(), "INSERT INTO flows VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
		if err != nil {
			b.Fatal(err)
		}
		for i := range recs {
			r := &recs[i]
			if _, err := st.ExecContext(b.Context(), r.Received, r.Start, r.End, addr(r.Exporter), int64(r.Protocol),
				int64(r.Domain), int64(r.SamplingRate), addr(r.Src), addr(r.Dst), int64(r.Proto), int64(r.SrcPort),
				int64(r.DstPort), int64(r.TCPFlags), int64(r.ToS), int64(r.Bytes), int64(r.Packets), int64(r.InIf),
				int64(r.OutIf), r.Bridge, r.InPort, r.OutPort); err != nil {
				b.Fatal(err)
			}
		}
		st.Close()
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	m.report(b, n)
}

func topSQLite(ctx context.Context, db *sql.DB) (int, error) {
	q := topQuery()
	return countRows(db.QueryContext(ctx, `SELECT src, SUM(bytes), SUM(packets), COUNT(*) AS s FROM flows
		WHERE end_ns >= ? AND end_ns < ? GROUP BY src ORDER BY 2 DESC, length(src), src LIMIT ?`,
		q.From.UnixNano(), q.To.UnixNano(), q.Limit))
}

func seriesSQLite(ctx context.Context, db *sql.DB) (int, error) {
	q := seriesQuery()
	iv := int64(q.Interval)
	return countRows(db.QueryContext(ctx, `SELECT end_ns - end_ns % ? AS bucket, SUM(bytes), SUM(packets), COUNT(*)
		FROM flows WHERE end_ns >= ? AND end_ns < ? GROUP BY bucket ORDER BY bucket`, iv, q.From.UnixNano(), q.To.UnixNano()))
}

// countRows drains rows and counts them.
func countRows(rows *sql.Rows, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	return n, rows.Err()
}

// addr is an address in the stores' encoding: 4 or 16 bytes.
func addr(a interface{ AsSlice() []byte }) []byte { return a.AsSlice() }
