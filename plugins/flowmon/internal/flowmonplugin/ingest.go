package flowmonplugin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/ovsplane/ovsplane/flowmon/collect"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// ingest is a collector job's data path: one collect.Collector per listen address (each with
// its SO_REUSEPORT sockets), all writing into the job's store and resolving names through one
// resolver.
type ingest struct {
	cols    []*collect.Collector
	res     *collect.OVSResolver
	engines []EngineConfig
	expAddr map[int]netip.Addr
	done    chan struct{}
	err     error // Run's errors, set before done is closed

	mu   sync.Mutex
	last collect.Snapshot // the snapshot the previous Health compared against
}

// startIngest opens the receivers (they receive from now on) and runs them until ctx ends.
func startIngest(ctx context.Context, j *collectorJob, bridges map[string]map[string]uint32) (*ingest, error) {
	in := &ingest{engines: j.set.cfg.Engines, expAddr: j.set.exporters, done: make(chan struct{})}
	res, err := collect.NewOVSResolver(in.facts(bridges))
	if err != nil {
		return nil, api.Errorf(api.FailedPrecondition, "job %s: config.engines: %v", j.jobName, err)
	}
	in.res = res
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, api.Errorf(api.Internal, "job %s: a random collector instance id: %v", j.jobName, err)
	}
	id := j.jobName
	if len(id) > 40 {
		id = id[:40]
	}
	id += "-" + hex.EncodeToString(rnd[:])
	for i, ap := range j.set.listen {
		cfg := collect.Config{
			Receiver: collect.ReceiverConfig{Addr: ap.String(), Sockets: j.set.cfg.Workers},
			Writer: collect.WriterConfig{Instance: fmt.Sprintf("%s-%d", id, i), BatchRecords: j.set.cfg.BatchRecords,
				BatchAge: j.set.flush, MaxBuffered: j.set.cfg.BufferRecords, Appenders: j.set.cfg.Appenders},
		}
		c, err := collect.New(ctx, cfg, j.st, res)
		if err != nil {
			in.closeAll()
			return nil, api.Errorf(api.FailedPrecondition, "job %s: config.listen[%d]: %v: pick a free address (another collector on %s?)", j.jobName, i, err, ap)
		}
		in.cols = append(in.cols, c)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(in.cols))
	for i, c := range in.cols {
		wg.Go(func() { errs[i] = c.Run(ctx) })
	}
	go func() {
		wg.Wait()
		in.err = errors.Join(errs...)
		close(in.done)
	}()
	return in, nil
}

// closeAll closes the receivers of a start that failed (their Run never started).
func (in *ingest) closeAll() {
	for _, c := range in.cols {
		c.Close()
	}
}

// wait waits until the receivers stopped and the writers drained (the job's context ended).
func (in *ingest) wait(ctx context.Context) error {
	select {
	case <-in.done:
		return in.err
	case <-ctx.Done():
		return fmt.Errorf("waiting for the collector to drain: %w", ctx.Err())
	}
}

// facts turns the engine mappings and the bridges' ports into the resolver's facts.
func (in *ingest) facts(bridges map[string]map[string]uint32) []collect.HostFacts {
	byExp := map[netip.Addr]*collect.HostFacts{}
	var order []netip.Addr
	for i, e := range in.engines {
		exp := in.expAddr[i]
		h := byExp[exp]
		if h == nil {
			h = &collect.HostFacts{Exporter: exp}
			byExp[exp] = h
			order = append(order, exp)
		}
		bf := collect.BridgeFacts{Name: e.Bridge, Ports: maps.Clone(bridges[e.Bridge]), IPFIX: e.IPFIXDomain}
		if e.NetFlow != nil {
			bf.NetFlow = &collect.NetFlowFacts{EngineType: e.NetFlow.EngineType, EngineID: e.NetFlow.EngineID, AddIDToInterface: e.NetFlow.AddIDToInterface}
		}
		h.Bridges = append(h.Bridges, bf)
	}
	out := make([]collect.HostFacts, 0, len(order))
	for _, a := range order {
		out = append(out, *byExp[a])
	}
	return out
}

// updateFacts gives the resolver new bridge ports.
func (in *ingest) updateFacts(bridges map[string]map[string]uint32) error {
	return in.res.Update(in.facts(bridges))
}

// snapshot sums the collectors' counters.
func (in *ingest) snapshot() collect.Snapshot {
	var s collect.Snapshot
	s.DecodeErrors, s.Dropped = map[string]uint64{}, map[string]uint64{}
	for _, c := range in.cols {
		o := c.Counters().Snapshot()
		s.Datagrams += o.Datagrams
		s.Bytes += o.Bytes
		s.Decoded += o.Decoded
		s.Records += o.Records
		s.Stored += o.Stored
		s.Batches += o.Batches
		s.AppendErrors += o.AppendErrors
		s.LostDatagrams += o.LostDatagrams
		s.SequenceResets += o.SequenceResets
		s.SocketDrops += o.SocketDrops
		s.Buffered += o.Buffered
		s.StoreFailing = s.StoreFailing || o.StoreFailing
		for k, v := range o.DecodeErrors {
			s.DecodeErrors[k] += v
		}
		for k, v := range o.Dropped {
			s.Dropped[k] += v
		}
	}
	return s
}

// counters are the query socket's status counters (names as the metrics', without prefix).
func (in *ingest) counters() map[string]uint64 {
	s := in.snapshot()
	m := map[string]uint64{"datagrams": s.Datagrams, "bytes": s.Bytes, "decoded": s.Decoded, "records": s.Records,
		"stored": s.Stored, "batches": s.Batches, "append_errors": s.AppendErrors, "lost_datagrams": s.LostDatagrams,
		"socket_drops": s.SocketDrops, "buffered": uint64(max(s.Buffered, 0)), "decode_errors": s.DecodeErrorTotal()}
	var dropped uint64
	for k, v := range s.Dropped {
		m["dropped_"+k] = v
		dropped += v
	}
	m["dropped"] = dropped
	return m
}

// problems says, for Health, whether the store fails now and whether records or datagrams
// were lost since the previous call.
func (in *ingest) problems(job string) []string {
	s := in.snapshot()
	in.mu.Lock()
	last := in.last
	in.last = s
	in.mu.Unlock()
	var out []string
	if s.StoreFailing {
		out = append(out, fmt.Sprintf("job %s: the store fails (%d append errors); %d records buffered, dropped beyond buffer_records", job, s.AppendErrors, s.Buffered))
	}
	var lost []string
	for _, k := range slices.Sorted(maps.Keys(s.Dropped)) {
		if d := s.Dropped[k] - last.Dropped[k]; d > 0 {
			lost = append(lost, fmt.Sprintf("%d records (%s)", d, k))
		}
	}
	if d := s.SocketDrops - last.SocketDrops; d > 0 && s.SocketDrops >= last.SocketDrops {
		lost = append(lost, fmt.Sprintf("%d datagrams dropped by the kernel (raise workers or the socket buffer)", d))
	}
	if d := s.DecodeErrorTotal() - last.DecodeErrorTotal(); d > 0 {
		lost = append(lost, fmt.Sprintf("%d datagrams not decoded", d))
	}
	if len(lost) > 0 {
		out = append(out, fmt.Sprintf("job %s: lost since the last check: %s", job, strings.Join(lost, ", ")))
	}
	select {
	case <-in.done:
		out = append(out, fmt.Sprintf("job %s: the receivers stopped: %v", job, in.err))
	default:
	}
	return out
}

// metrics is the ingest's part of the stats sample.
func (in *ingest) metrics() []api.Metric {
	s := in.snapshot()
	m := []api.Metric{
		counter("flowmon_datagrams", float64(s.Datagrams), nil), counter("flowmon_datagram_bytes", float64(s.Bytes), nil),
		counter("flowmon_records", float64(s.Records), nil), counter("flowmon_stored", float64(s.Stored), nil),
		counter("flowmon_store_append_errors", float64(s.AppendErrors), nil), counter("flowmon_socket_drops", float64(s.SocketDrops), nil),
		counter("flowmon_lost_datagrams", float64(s.LostDatagrams), nil), gauge("flowmon_buffered", float64(s.Buffered), nil),
	}
	failing := 0.0
	if s.StoreFailing {
		failing = 1
	}
	m = append(m, gauge("flowmon_store_failing", failing, nil))
	for _, k := range slices.Sorted(maps.Keys(s.Dropped)) {
		m = append(m, counter("flowmon_dropped", float64(s.Dropped[k]), map[string]string{"reason": k}))
	}
	for _, k := range slices.Sorted(maps.Keys(s.DecodeErrors)) {
		m = append(m, counter("flowmon_decode_errors", float64(s.DecodeErrors[k]), map[string]string{"reason": k}))
	}
	return m
}
