package collect

import (
	"context"
	"errors"
	"net"
	"net/netip"

	"github.com/ovsplane/ovsplane/flowmon/flow"
	"github.com/ovsplane/ovsplane/flowmon/store"
)

// Config configures a Collector.
type Config struct {
	// Receiver is where and how to listen.
	Receiver ReceiverConfig
	// Limits bound the decoder's template and sequence state.
	Limits Limits
	// Writer is how records are batched into the store.
	Writer WriterConfig
}

// Collector is the whole data path: Receiver → Decoder → Resolver → Writer → store.Store.
type Collector struct {
	c     *Counters
	state *State
	recv  *Receiver
	w     *Writer
	res   Resolver
}

// New opens the collector's sockets (they receive from now on) and prepares its writer to st.
// res may be nil (no enrichment).
func New(ctx context.Context, cfg Config, st store.Store, res Resolver) (*Collector, error) {
	c := &Counters{}
	w, err := NewWriter(st, cfg.Writer, c)
	if err != nil {
		return nil, err
	}
	recv, err := Listen(ctx, cfg.Receiver, c)
	if err != nil {
		return nil, err
	}
	return &Collector{c: c, state: NewState(cfg.Limits, c), recv: recv, w: w, res: res}, nil
}

// Addr is the address the collector listens on.
func (col *Collector) Addr() *net.UDPAddr { return col.recv.Addr() }

// RcvBuf is the socket receive buffer the kernel granted.
func (col *Collector) RcvBuf() int { return col.recv.RcvBuf() }

// Counters are the collector's counters (Snapshot them, or export them with
// NewPrometheusCollector).
func (col *Collector) Counters() *Counters { return col.c }

// Close closes the sockets: a Run in progress stops receiving, drains and returns; without a
// Run, Close releases what New opened. Safe to call more than once.
func (col *Collector) Close() { col.recv.Close() }

// Flush waits until every record handed to the writer so far is stored or dropped (see
// Writer.Flush); Run must be running.
func (col *Collector) Flush(ctx context.Context) error { return col.w.Flush(ctx) }

// Run receives, decodes and stores until ctx ends; then it closes the sockets, lets the writer
// drain what it buffered (WriterConfig.DrainTimeout) and returns. The error reports a read
// failure or records the drain could not store (they are counted as dropped).
func (col *Collector) Run(ctx context.Context) error {
	wctx, stopWriter := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWriter()
	werr := make(chan error, 1)
	go func() { werr <- col.w.Run(wctx) }()
	rerr := col.recv.Run(ctx, func(int) Sink {
		return &worker{d: col.state.NewDecoder(), res: col.res, w: col.w}
	})
	stopWriter()
	return errors.Join(rerr, <-werr)
}

// maxPending is how many records a worker collects before handing them to the writer
// mid-batch.
const maxPending = 4096

// worker is one socket goroutine's Sink: it decodes into a reused slice and hands each read
// batch's records to the resolver and the writer.
type worker struct {
	d    *Decoder
	recs []flow.Record
	res  Resolver
	w    *Writer
}

// Datagram decodes one datagram into the worker's records (errors are counted by Decode).
func (k *worker) Datagram(exporter netip.AddrPort, received int64, b []byte) {
	k.recs, _ = k.d.Decode(exporter, received, b, k.recs)
	if len(k.recs) >= maxPending {
		k.EndBatch()
	}
}

// EndBatch names the records and hands them to the writer.
func (k *worker) EndBatch() {
	if len(k.recs) == 0 {
		return
	}
	if k.res != nil {
		k.res.Resolve(k.recs)
	}
	k.w.Write(k.recs)
	k.recs = k.recs[:0]
}
