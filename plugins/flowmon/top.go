package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ovsplane/ovsplane/flowmon/query"
)

// Bounds of top.
const (
	minTopInterval = 100 * time.Millisecond
	maxTopInterval = time.Hour
	maxTopWindow   = 24 * time.Hour
	maxTopRows     = 100
)

// clearScreen moves the cursor home and clears the terminal (ANSI).
const clearScreen = "\x1b[H\x1b[2J"

// topOptions configure the live view.
type topOptions struct {
	interval, window time.Duration
	rows             int
	by               query.Metric
	key              query.Key
	frames           int // 0: until ctx ends
	clear            bool
}

// topFrame is what one frame shows.
type topFrame struct {
	now         time.Time
	status      query.Status
	prev        *query.Status // the previous frame's status, for the rates; nil on the first
	window      time.Duration
	total       query.Group // the window's sums
	groups      []query.Group
	key         query.Key
	by          query.Metric
	statusError string
}

// rate is the per-second rate of counter name between prev and cur ("-" without prev).
func rate(prev *query.Status, cur query.Status, name string) string {
	if prev == nil {
		return "-"
	}
	dt := cur.Time.Sub(prev.Time).Seconds()
	if dt <= 0 || cur.Counters[name] < prev.Counters[name] {
		return "-"
	}
	return fmt.Sprintf("%.0f/s", float64(cur.Counters[name]-prev.Counters[name])/dt)
}

// si writes v with a k/M/G prefix.
func si(v float64, unit string) string {
	for _, p := range []struct {
		f float64
		s string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if v >= p.f {
			return fmt.Sprintf("%.2f %s%s", v/p.f, p.s, unit)
		}
	}
	return fmt.Sprintf("%.0f %s", v, unit)
}

// write draws one frame.
func (f topFrame) write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "flowmon top — %s — collector %s (%s store, up %s)\n", f.now.UTC().Format(time.RFC3339), f.status.Job, f.status.Store,
		f.now.Sub(f.status.Started).Round(time.Second))
	if f.statusError != "" {
		fmt.Fprintf(tw, "status: %s\n", f.statusError)
	} else {
		c := f.status.Counters
		fmt.Fprintf(tw, "ingest\tdatagrams %s\trecords %s\tstored %s\tbuffered %d\n", rate(f.prev, f.status, "datagrams"),
			rate(f.prev, f.status, "records"), rate(f.prev, f.status, "stored"), c["buffered"])
		fmt.Fprintf(tw, "loss\tdropped %d (%s)\tsocket drops %d (%s)\tdecode errors %d\tlost datagrams %d\n", c["dropped"], rate(f.prev, f.status, "dropped"),
			c["socket_drops"], rate(f.prev, f.status, "socket_drops"), c["decode_errors"], c["lost_datagrams"])
	}
	secs := f.window.Seconds()
	fmt.Fprintf(tw, "last %s\t%s\t%s\t%d flows\n", f.window, si(float64(f.total.Bytes)*8/secs, "bit/s"), si(float64(f.total.Packets)/secs, "pkt/s"), f.total.Flows)
	fmt.Fprintf(tw, "\ntop %s by %s\tbytes\tpackets\tflows\tshare\n", f.key, f.by)
	for _, g := range f.groups {
		share := "-"
		if f.total.Bytes > 0 {
			share = fmt.Sprintf("%.1f%%", 100*float64(g.Bytes)/float64(f.total.Bytes))
		}
		key := g.Key
		if key == "" {
			key = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", key, g.Bytes, g.Packets, g.Flows, share)
	}
	if len(f.groups) == 0 {
		fmt.Fprintln(tw, "(no flows in the window)")
	}
	return tw.Flush()
}

// runTop is `flowmon top`.
func runTop(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("flowmon top", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var t target
	t.bind(fs)
	o := topOptions{clear: true}
	fs.DurationVar(&o.interval, "interval", time.Second, "refresh interval")
	fs.DurationVar(&o.window, "window", 10*time.Second, "the throughput and top talkers cover this long back")
	fs.IntVar(&o.rows, "n", 10, "top talkers shown")
	by := fs.String("by", "bytes", "order the talkers by bytes, packets or flows")
	key := fs.String("key", "src", "group the talkers by src, dst, srcport, dstport, proto, bridge, inport, outport or exporter")
	once := fs.Bool("once", false, "draw one frame and exit")
	if err := fs.Parse(args); err != nil {
		return helpOrUsage(err)
	}
	var err error
	if o.by, err = query.ParseMetric(*by); err == nil {
		o.key, err = query.ParseKey(*key)
	}
	switch {
	case err != nil:
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.interval < minTopInterval || o.interval > maxTopInterval:
		err = fmt.Errorf("--interval %s: want %s to %s", o.interval, minTopInterval, maxTopInterval)
	case o.window < time.Second || o.window > maxTopWindow:
		err = fmt.Errorf("--window %s: want 1s to %s", o.window, maxTopWindow)
	case o.rows < 1 || o.rows > maxTopRows:
		err = fmt.Errorf("-n %d: want 1 to %d", o.rows, maxTopRows)
	}
	if err != nil {
		fmt.Fprintln(stderr, "flowmon top:", err)
		return 2
	}
	c, err := t.client()
	if err != nil {
		fmt.Fprintln(stderr, "flowmon top:", err)
		return 2
	}
	if *once {
		o.frames, o.clear = 1, false
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := top(ctx, c, stdout, o); err != nil {
		fmt.Fprintln(stderr, "flowmon top:", err)
		return 1
	}
	return 0
}

// top draws frames every interval until ctx ends or frames were drawn.
func top(ctx context.Context, c *query.Client, w io.Writer, o topOptions) error {
	var prev *query.Status
	tick := time.NewTicker(o.interval)
	defer tick.Stop()
	for n := 0; o.frames == 0 || n < o.frames; n++ {
		f, err := frameNow(ctx, c, o, prev)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if o.clear {
			fmt.Fprint(w, clearScreen)
		}
		if err := f.write(w); err != nil {
			return err
		}
		if f.statusError == "" {
			st := f.status
			prev = &st
		}
		if o.frames != 0 && n+1 >= o.frames {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
	return nil
}

// frameNow asks the collector for one frame's numbers.
func frameNow(ctx context.Context, c *query.Client, o topOptions, prev *query.Status) (topFrame, error) {
	now := time.Now()
	f := topFrame{now: now, window: o.window, key: o.key, by: o.by, prev: prev}
	st, err := c.Status(ctx)
	if err != nil {
		f.statusError = err.Error()
	} else {
		f.status = st
	}
	from := now.Add(-o.window)
	tq := query.Query{Kind: query.Top, From: from, To: now, Limit: o.rows, GroupBy: o.key, Metric: o.by}
	res, err := c.Query(ctx, tq)
	if err != nil {
		return f, err
	}
	f.groups = res.Groups
	// The window's totals: one series bucket as wide as the window (aligned buckets may split
	// it in two; they are summed).
	sq := query.Query{Kind: query.Series, From: from, To: now, Metric: query.Bytes, Interval: o.window.Truncate(time.Second)}
	sr, err := c.Query(ctx, sq)
	if err != nil {
		return f, err
	}
	for _, p := range sr.Points {
		f.total.Bytes += p.Bytes
		f.total.Packets += p.Packets
		f.total.Flows += p.Flows
	}
	return f, nil
}
