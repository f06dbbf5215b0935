package batch

// SizeBucket is one cumulative bucket of the batch-size histogram: Count batches had at most
// LE requests (Prometheus "le" semantics).
type SizeBucket struct {
	LE    int
	Count uint64
}

// Stats is a snapshot of a Batcher's counters, ready to export as metrics. Counters only grow;
// Queued, InFlight and InFlightRequests are gauges.
type Stats struct {
	Queued           int    // requests waiting to be sent
	InFlight         int    // batches being committed
	InFlightRequests int    // requests in those batches
	Submitted        uint64 // requests accepted by Submit
	Succeeded        uint64 // requests completed without error
	Failed           uint64 // requests completed with an error (ErrClosed included)
	Canceled         uint64 // requests withdrawn by their caller before being sent
	CanceledSent     uint64 // callers that gave up after their request was sent
	Refused          uint64 // requests refused by Options.Check, never queued
	Batches          uint64 // batches taken from the queue
	Commits          uint64 // Committer.Commit calls, isolation retries included
	Retries          uint64 // Commit calls made to isolate a failing request
	// BatchSizes is the cumulative histogram of the sizes of batches taken from the queue, with
	// bounds 1, 2, 4, … up to MaxSize; BatchSizeSum is the sum of those sizes.
	BatchSizes   []SizeBucket
	BatchSizeSum uint64
}

type counters struct {
	queued                             int
	submitted, succeeded, failed       uint64
	canceled, canceledSent, refused    uint64
	batches, commits, retries, sizeSum uint64
	bounds                             []int
	buckets                            []uint64 // non-cumulative, per bound
}

func newCounters(maxSize int) counters {
	var bounds []int
	for b := 1; b < maxSize; b *= 2 {
		bounds = append(bounds, b)
	}
	bounds = append(bounds, maxSize)
	return counters{bounds: bounds, buckets: make([]uint64, len(bounds))}
}

func (c *counters) observeBatch(n int) {
	c.batches++
	c.sizeSum += uint64(n)
	for i, b := range c.bounds {
		if n <= b {
			c.buckets[i]++
			return
		}
	}
	c.buckets[len(c.buckets)-1]++
}

// Stats returns a consistent snapshot of the counters. It is cheap and safe to call at any time.
func (b *Batcher[Req, Res]) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := &b.st
	s := Stats{
		Queued: c.queued, InFlight: b.inflight, InFlightRequests: b.inflightReqs,
		Submitted: c.submitted, Succeeded: c.succeeded, Failed: c.failed,
		Canceled: c.canceled, CanceledSent: c.canceledSent, Refused: c.refused,
		Batches: c.batches, Commits: c.commits, Retries: c.retries,
		BatchSizes: make([]SizeBucket, len(c.bounds)), BatchSizeSum: c.sizeSum,
	}
	var cum uint64
	for i, le := range c.bounds {
		cum += c.buckets[i]
		s.BatchSizes[i] = SizeBucket{LE: le, Count: cum}
	}
	return s
}
