package batch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/vswitchd/batch"
)

// TestCheckRefusesBeforeQueueing: a request refused by Options.Check fails at once and never
// reaches a batch; the others are committed together, with no isolation retry.
func TestCheckRefusesBeforeQueueing(t *testing.T) {
	noLeak(t)
	clk := newFakeClock() // never advanced: with Linger the batch goes when full
	f := &fakeCommitter{}
	bad := errors.New("13 is refused")
	b := start(t, f, batch.Options[int]{MaxSize: 7, Linger: true, Clock: clk,
		Check: func(r int) error {
			if r == 13 {
				return bad
			}
			return nil
		}})
	res := collect(t, submitAll(context.Background(), b, 10, 11, 12, 13, 14, 15, 16, 17), 8)
	for r, x := range res {
		if (r == 13) != errors.Is(x.err, bad) || (r != 13 && x.err != nil) {
			t.Errorf("req %d: %v", r, x.err)
		}
	}
	calls := f.calls()
	if len(calls) != 1 || len(calls[0]) != 7 || b.Stats().Refused != 1 {
		t.Fatalf("commits %v, stats %+v; want one commit of the 7 good requests", calls, b.Stats())
	}
}

// TestWeightClosesBatches: a batch holds requests up to MaxWeight in total, in queue order; a
// request heavier than MaxWeight goes alone.
func TestWeightClosesBatches(t *testing.T) {
	noLeak(t)
	f := &fakeCommitter{gate: make(chan struct{})}
	b := start(t, f, batch.Options[int]{MaxSize: 100, MaxWeight: 10, Weight: func(r int) int { return r }})
	// The first request holds the slot while the others queue.
	first := submitAll(context.Background(), b, 1)
	eventually(t, "the first commit", func() bool { return len(f.calls()) == 1 })
	rest := make(chan result, 5)
	for i, r := range []int{4, 5, 2, 20, 3} {
		ch := submitAll(context.Background(), b, r)
		go func() { rest <- <-ch }()
		// one at a time, so the queue order is the order above
		eventually(t, fmt.Sprint("request ", r, " queued"), func() bool { return b.Stats().Queued == i+1 })
	}
	eventually(t, "five queued", func() bool { return b.Stats().Queued == 5 })
	close(f.gate)
	collect(t, first, 1)
	collect(t, rest, 5)
	got := f.calls()[1:]
	want := [][]int{{4, 5}, {2}, {20}, {3}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("batches %v, want %v (weights up to 10, in order)", got, want)
	}
}

// TestPortCommitterRefusesNUL (issue 12 item 3): a port with a NUL byte in external_ids, in one
// batch with valid neighbours, is refused alone — before anything is sent, naming the port and
// the key — and the neighbours are applied in one commit.
func TestPortCommitterRefusesNUL(t *testing.T) {
	ctx, c := ovsdbEnv(t)
	clk := newFakeClock()
	pc := &batch.PortCommitter{DB: c, Generation: 3}
	b, err := batch.Start[batch.PortRequest, batch.PortResult](ctx, pc,
		batch.Options[batch.PortRequest]{MaxSize: 7, Linger: true, Clock: clk, Key: batch.PortKey})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close(ctx) }()
	type res struct {
		name string
		r    batch.PortResult
		err  error
	}
	results := make(chan res, 9)
	for i := range 9 {
		go func() {
			spec := ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: fmt.Sprintf("n%d", i)}}
			switch i {
			case 4:
				spec.Port.ExternalIDs = map[string]string{"k": "a\x00b"}
			case 6:
				spec.Port.Interfaces = []model.Interface{{Name: "n6", Options: map[string]string{"x": "\xff"}}}
			}
			r, err := b.Submit(ctx, batch.PortRequest{Spec: spec})
			results <- res{spec.Port.Name, r, err}
		}()
	}
	for range 9 {
		x := <-results
		switch x.name {
		case "n4", "n6":
			if !errors.Is(x.err, ovsdb.ErrInvalid) || !errors.Is(x.err, limits.ErrBadText) || !strings.Contains(x.err.Error(), `"`+x.name+`"`) {
				t.Errorf("%s: %v, want ErrInvalid naming the port or interface", x.name, x.err)
			}
			if _, err := c.Interface(x.name); !errors.Is(err, ovsdb.ErrNotFound) {
				t.Errorf("%s was written: %v", x.name, err)
			}
		default:
			if x.err != nil || len(x.r.Interfaces) != 1 || x.r.Interfaces[0].Ofport <= 0 {
				t.Errorf("%s: %+v, %v; want an ofport", x.name, x.r, x.err)
			}
		}
	}
	if st := b.Stats(); st.Commits != 1 || st.Refused != 2 {
		t.Errorf("%d commits, %d refused; want the 7 good ports in 1 commit and 2 refused", st.Commits, st.Refused)
	}
}

// TestPortCommitterCheck: what PortCommitter.Check refuses, with the port named.
func TestPortCommitterCheck(t *testing.T) {
	pc := &batch.PortCommitter{}
	many := make([]model.Interface, 100000)
	for i := range many {
		many[i].Name = fmt.Sprint("m", i)
	}
	for _, tc := range []struct {
		name string
		req  batch.PortRequest
		want string
	}{
		{"ok", batch.PortRequest{Spec: ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p1"}}}, ""},
		{"delete with NUL", batch.PortRequest{Delete: true, Spec: ovsdb.PortOn{Port: model.Port{Name: "p\x001"}}}, "NUL byte"},
		{"dot", batch.PortRequest{Spec: ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "."}}}, `"." and ".."`},
		{"zero width", batch.PortRequest{Spec: ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "p1", Interfaces: []model.Interface{{Name: "p\u200b1"}}}}}, "U+200B"},
		{"100,000 interfaces", batch.PortRequest{Spec: ovsdb.PortOn{Bridge: "br0", Port: model.Port{Name: "b", Interfaces: many}}}, "100000 interfaces, more than 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := pc.Check(tc.req)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ovsdb.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	if w := pc.Weight(batch.PortRequest{Spec: ovsdb.PortOn{Port: model.Port{Interfaces: many[:64]}}}); w != 65 {
		t.Errorf("weight of a 64-member bond: %d, want 65", w)
	}
}

func TestMaxSizeBounded(t *testing.T) {
	_, err := batch.Start[int, int](context.Background(), &fakeCommitter{}, batch.Options[int]{MaxSize: limits.MaxRequestsPerBatch + 1})
	if err == nil || !strings.Contains(err.Error(), "limits.MaxRequestsPerBatch") {
		t.Fatalf("got %v", err)
	}
}
