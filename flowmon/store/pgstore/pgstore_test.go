package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ovsplane/ovsplane/flowmon/query"
	"github.com/ovsplane/ovsplane/flowmon/store"
	"github.com/ovsplane/ovsplane/flowmon/store/pgstore"
	"github.com/ovsplane/ovsplane/flowmon/store/storetest"
	"github.com/ovsplane/ovsplane/test/lab"
)

// newDB creates a fresh database on p and returns its connection string.
func newDB(t *testing.T, p *lab.Postgres, seq *atomic.Int64) string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), p.ConnString("postgres"))
	if err != nil {
		t.Fatalf("connect to postgres: %v", err)
	}
	defer conn.Close(context.WithoutCancel(t.Context()))
	name := fmt.Sprintf("flows%d", seq.Add(1)) // our own counter: safe to splice
	if _, err := conn.Exec(t.Context(), "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	return p.ConnString(name)
}

func open(t *testing.T, conn string, opts pgstore.Options) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(t.Context(), conn, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestSuite(t *testing.T) {
	p := lab.StartPostgres(t)
	var seq atomic.Int64
	storetest.Run(t, func(t *testing.T) store.Store {
		// The smallest copy buffer makes every batch span several COPY messages.
		return open(t, newDB(t, p, &seq), pgstore.Options{CopyBuffer: pgstore.MinCopyBuffer})
	})
}

// TestCollectorsShareServer runs several Stores (as several collectors would) on one
// database, all appending into the same new days at once and retrying each other's batches:
// partition creation must not race, and no record may be stored twice.
func TestCollectorsShareServer(t *testing.T) {
	p := lab.StartPostgres(t)
	var seq atomic.Int64
	conn := newDB(t, p, &seq)
	const collectors, batches, per = 4, 6, 50
	recs := storetest.Records(11, collectors*batches*per, 3)
	stores := make([]*pgstore.Store, collectors)
	for i := range stores {
		stores[i] = open(t, conn, pgstore.Options{})
		defer stores[i].Close()
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*collectors*batches)
	for c := range collectors {
		wg.Go(func() {
			for i := range batches {
				for _, owner := range []int{c, (c + 1) % collectors} {
					lo := (owner*batches + i) * per
					errs <- stores[c].Append(context.WithoutCancel(t.Context()),
						store.Batch{ID: fmt.Sprintf("c%d-%d", owner, i), Records: recs[lo : lo+per]})
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Append: %v", err)
		}
	}
	q := query.Query{Kind: query.Flows, From: storetest.Day0(), To: storetest.Day0().Add(72 * time.Hour), Limit: query.MaxRows}
	res, err := stores[0].Query(t.Context(), q)
	if err != nil {
		t.Fatalf("Query: %v", err)
	}
	if want := storetest.Reference(recs, q).Records; len(res.Records) != len(want) {
		t.Errorf("%d records stored; want %d", len(res.Records), len(want))
	}
}

// TestOutage stops the server under a Store: Appends fail with an error (nothing is silently
// lost) and succeed once it is back, without duplicating a batch that was stored before.
func TestOutage(t *testing.T) {
	p := lab.StartPostgres(t)
	var seq atomic.Int64
	s := open(t, newDB(t, p, &seq), pgstore.Options{})
	defer s.Close()
	recs := storetest.Records(12, 100, 1)
	first := store.Batch{ID: "b1", Records: recs[:50]}
	if err := s.Append(t.Context(), first); err != nil {
		t.Fatalf("Append before the outage: %v", err)
	}
	p.Stop(t)
	second := store.Batch{ID: "b2", Records: recs[50:]}
	if err := s.Append(t.Context(), second); err == nil {
		t.Fatal("Append succeeded while the server was stopped")
	}
	p.Start(t)
	for _, b := range []store.Batch{first, second, second} {
		if err := s.Append(t.Context(), b); err != nil {
			t.Fatalf("Append %s after the outage: %v", b.ID, err)
		}
	}
	q := query.Query{Kind: query.Flows, From: storetest.Day0(), To: storetest.Day0().Add(24 * time.Hour), Limit: query.MaxRows}
	res, err := s.Query(t.Context(), q)
	if err != nil {
		t.Fatalf("Query: %v", err)
	}
	if len(res.Records) != len(recs) {
		t.Errorf("%d records after the outage; want %d", len(res.Records), len(recs))
	}
}

func TestOpenRejectsBadOptions(t *testing.T) {
	for _, opts := range []pgstore.Options{{CopyBuffer: 100}, {CopyBuffer: pgstore.MaxCopyBuffer + 1}, {MaxBatchRecords: -1}, {MaxConns: -2}} {
		if _, err := pgstore.Open(t.Context(), "host=/nonexistent dbname=x", opts); err == nil {
			t.Errorf("Open accepted options %+v", opts)
		}
	}
	if _, err := pgstore.Open(t.Context(), "not a = valid 'string", pgstore.Options{}); err == nil {
		t.Error("Open accepted a malformed connection string")
	}
}
