//go:build cgo

package duckstore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/flowmon/query"
	"github.com/ovsplane/ovsplane/flowmon/store"
	"github.com/ovsplane/ovsplane/flowmon/store/duckstore"
	"github.com/ovsplane/ovsplane/flowmon/store/storetest"
)

func TestSuite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := duckstore.Open(t.Context(), t.TempDir(), duckstore.Options{Threads: 2})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}

// TestReopen checks that a reopened store finds its day tables and batch IDs again: the data
// answers queries, a retried batch is still a no-op, and Retain drops the loaded days.
func TestReopen(t *testing.T) {
	dir := t.TempDir()
	recs := storetest.Records(21, 300, 3)
	s, err := duckstore.Open(t.Context(), dir, duckstore.Options{FileName: "f.duckdb"})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Append(t.Context(), store.Batch{ID: "one", Records: recs}); err != nil {
		t.Fatalf("Append: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Append(t.Context(), store.Batch{ID: "two", Records: recs}); err == nil {
		t.Error("Append after Close succeeded")
	}
	s, err = duckstore.Open(t.Context(), dir, duckstore.Options{FileName: "f.duckdb"})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	if days := s.Days(); len(days) != 3 || !days[0].Equal(storetest.Day0()) {
		t.Errorf("Days after reopen = %v; want 3 days from %s", days, storetest.Day0())
	}
	if err := s.Append(t.Context(), store.Batch{ID: "one", Records: recs}); err != nil {
		t.Fatalf("retry after reopen: %v", err)
	}
	q := query.Query{Kind: query.Flows, From: storetest.Day0(), To: storetest.Day0().Add(72 * time.Hour), Limit: query.MaxRows}
	res, err := s.Query(t.Context(), q)
	if err != nil || len(res.Records) != len(recs) {
		t.Fatalf("after reopen: %d records, %v; want %d", len(res.Records), err, len(recs))
	}
	n, err := s.Retain(t.Context(), storetest.Day0().Add(48*time.Hour))
	if err != nil || n != 2 {
		t.Errorf("Retain after reopen = %d, %v; want 2 days dropped", n, err)
	}
}

func TestOpenRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		dir  string
		opts duckstore.Options
		want string
	}{
		"path as file name": {dir, duckstore.Options{FileName: "../x.duckdb"}, "plain file name"},
		"missing dir":       {dir + "/none", duckstore.Options{}, "create it first"},
		"negative limit":    {dir, duckstore.Options{MaxBatchRecords: -1}, "negative"},
	} {
		if _, err := duckstore.Open(t.Context(), tc.dir, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Open = %v; want an error mentioning %q", name, err, tc.want)
		}
	}
	s, err := duckstore.Open(t.Context(), dir, duckstore.Options{MaxBatchRecords: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Append(t.Context(), store.Batch{ID: "big", Records: storetest.Records(1, 3, 1)}); err == nil || !strings.Contains(err.Error(), "at most 2") {
		t.Errorf("Append of 3 records with MaxBatchRecords 2 = %v", err)
	}
	if err := s.Append(t.Context(), store.Batch{ID: ""}); err == nil {
		t.Error("Append accepted an empty batch ID")
	}
}
