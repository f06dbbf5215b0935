package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"

	"github.com/ovsplane/ovsplane/api/client"
	ovsplanev1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
)

// Bounds of --top.
const (
	minTopInterval = 100 * time.Millisecond
	maxTopInterval = time.Hour
	// maxTopJobs bounds the jobs one frame shows.
	maxTopJobs = 64
)

// clearScreen moves the cursor home and clears the terminal (ANSI).
const clearScreen = "\x1b[H\x1b[2J"

// linkKey names one link of one peer of one job.
type linkKey struct{ job, peer, link string }

// linkRow is one link's numbers in a frame.
type linkRow struct {
	key                     linkKey
	usable, macs            float64
	txBytes, rxBytes        float64
	txLoad, rxLoad, balance float64
	drops, downs, choices   float64
	txRate, rxRate          float64 // Mbit/s since the previous sample; -1 when unknown
	sampled                 time.Time
}

// peerRow is one peer's numbers in a frame.
type peerRow struct {
	job, peer, state                          string
	known, sent, delivered, retransmits       float64
	adjusts, reorder, reorderMax, lost, drops float64
	resets, available, fairShare              float64
	links                                     []linkRow
	apps                                      []appRow
}

// appRow is one application's numbers in a frame (bytes per second for the rates).
type appRow struct {
	name                                   string
	share, sendRate, recvRate              float64
	sent, received, pacingDrops, recvDrops float64
}

// previous keeps the last frame's byte counters, for the rates.
type previous map[linkKey]linkRow

// frame turns the daemon's jobs of plugin stripe into rows, computing each link's rates from
// prev (and updating it).
func frame(jobs []*ovsplanev1.JobInfo, jobFilter string, prev previous) []peerRow {
	var rows []peerRow
	for i, j := range jobs {
		if i >= maxTopJobs {
			break
		}
		if jobFilter != "" && j.GetName() != jobFilter {
			continue
		}
		sampled, _ := time.Parse(time.RFC3339Nano, j.GetSampleTime())
		state := strings.ToLower(strings.TrimPrefix(j.GetState().String(), "JOB_STATE_"))
		peers := map[string]*peerRow{}
		links := map[linkKey]*linkRow{}
		var order []string
		peerOf := func(p string) *peerRow {
			if r, ok := peers[p]; ok {
				return r
			}
			r := &peerRow{job: j.GetName(), peer: p, state: state}
			peers[p] = r
			order = append(order, p)
			return r
		}
		for _, m := range j.GetMetrics() {
			p := m.GetLabels()["peer"]
			if p == "" {
				continue
			}
			pr := peerOf(p)
			if name := m.GetLabels()["app"]; name != "" {
				i := slices.IndexFunc(pr.apps, func(a appRow) bool { return a.name == name })
				if i < 0 {
					pr.apps = append(pr.apps, appRow{name: name})
					i = len(pr.apps) - 1
				}
				setApp(&pr.apps[i], m.GetName(), m.GetValue())
				continue
			}
			if l := m.GetLabels()["link"]; l != "" {
				k := linkKey{j.GetName(), p, l}
				lr, ok := links[k]
				if !ok {
					lr = &linkRow{key: k, sampled: sampled}
					links[k] = lr
				}
				setLink(lr, m.GetName(), m.GetValue())
				continue
			}
			setPeer(pr, m.GetName(), m.GetValue())
		}
		if len(order) == 0 {
			rows = append(rows, peerRow{job: j.GetName(), peer: "-", state: state})
			continue
		}
		for _, p := range order {
			pr := peers[p]
			for k, lr := range links {
				if k.peer != p {
					continue
				}
				lr.txRate, lr.rxRate = -1, -1
				if old, ok := prev[k]; ok && lr.sampled.After(old.sampled) {
					dt := lr.sampled.Sub(old.sampled).Seconds()
					if lr.txBytes >= old.txBytes {
						lr.txRate = (lr.txBytes - old.txBytes) * 8 / dt / 1e6
					}
					if lr.rxBytes >= old.rxBytes {
						lr.rxRate = (lr.rxBytes - old.rxBytes) * 8 / dt / 1e6
					}
				}
				if old, ok := prev[k]; !ok || lr.sampled.After(old.sampled) {
					prev[k] = *lr
				} else {
					lr.txRate, lr.rxRate = old.txRate, old.rxRate // the same sample again
				}
				pr.links = append(pr.links, *lr)
			}
			slices.SortFunc(pr.links, func(a, b linkRow) int { return cmp.Compare(a.key.link, b.key.link) })
			slices.SortFunc(pr.apps, func(a, b appRow) int { return cmp.Compare(a.name, b.name) })
			rows = append(rows, *pr)
		}
	}
	return rows
}

// setPeer sets one peer metric.
func setPeer(r *peerRow, name string, v float64) {
	switch name {
	case "stripe_peer_known":
		r.known = v
	case "stripe_sent_bytes":
		r.sent = v
	case "stripe_delivered_bytes":
		r.delivered = v
	case "stripe_retransmits":
		r.retransmits = v
	case "stripe_adjusts":
		r.adjusts = v
	case "stripe_reorder_depth":
		r.reorder = v
	case "stripe_reorder_depth_max":
		r.reorderMax = v
	case "stripe_lost":
		r.lost = v
	case "stripe_bad_frames":
		r.drops = v
	case "stripe_resets":
		r.resets = v
	case "stripe_available_bytes_per_second":
		r.available = v
	case "stripe_fair_share_bytes_per_second":
		r.fairShare = v
	}
}

// setApp sets one application metric.
func setApp(r *appRow, name string, v float64) {
	switch name {
	case "stripe_app_share_bytes_per_second":
		r.share = v
	case "stripe_app_send_bytes_per_second":
		r.sendRate = v
	case "stripe_app_receive_bytes_per_second":
		r.recvRate = v
	case "stripe_app_sent_bytes":
		r.sent = v
	case "stripe_app_received_bytes":
		r.received = v
	case "stripe_app_pacing_drops":
		r.pacingDrops = v
	case "stripe_app_receive_drops":
		r.recvDrops = v
	}
}

// setLink sets one link metric.
func setLink(r *linkRow, name string, v float64) {
	switch name {
	case "stripe_link_usable":
		r.usable = v
	case "stripe_link_peer_macs":
		r.macs = v
	case "stripe_link_tx_bytes":
		r.txBytes = v
	case "stripe_link_rx_bytes":
		r.rxBytes = v
	case "stripe_link_tx_load":
		r.txLoad = v
	case "stripe_link_rx_load":
		r.rxLoad = v
	case "stripe_link_balance_degree":
		r.balance = v
	case "stripe_link_drops":
		r.drops = v
	case "stripe_link_downs":
		r.downs = v
	case "stripe_link_choices":
		r.choices = v
	}
}

// yesNo prints a 0/1 gauge.
func yesNo(v float64) string {
	if v != 0 {
		return "yes"
	}
	return "no"
}

// rate prints a rate in Mbit/s, "-" when unknown.
func rate(v float64) string {
	if v < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", v)
}

// bytesText prints a byte count with a binary unit.
func bytesText(v float64) string {
	const unit = 1024
	if v < unit {
		return fmt.Sprintf("%.0f B", v)
	}
	exp, div := 0, float64(unit)
	for n := v / unit; n >= unit && exp < 4; n /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", v/div, "KMGTP"[exp])
}

// render writes one frame: per job and peer its counters, then one line per link.
func render(w io.Writer, now time.Time, rows []peerRow) error {
	fmt.Fprintf(w, "stripe top  %s\n\n", now.UTC().Format(time.RFC3339))
	if len(rows) == 0 {
		fmt.Fprintln(w, "no stripe jobs (configure jobs of type stripe in the plugin's entry of ovsplaned's configuration)")
		return nil
	}
	for _, r := range rows {
		fmt.Fprintf(w, "JOB %s  PEER %s  %s  known %s  sent %s  delivered %s  retransmits %.0f  adjusts %.0f  reorder %.0f (max %.0f)  lost %.0f  bad %.0f  resets %.0f\n",
			r.job, r.peer, r.state, yesNo(r.known), bytesText(r.sent), bytesText(r.delivered), r.retransmits, r.adjusts, r.reorder, r.reorderMax, r.lost, r.drops, r.resets)
		if len(r.links) > 0 {
			tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "  LINK\tUSABLE\tMACS\tTX Mbit/s\tRX Mbit/s\tTX LOAD\tRX LOAD\tBALANCE\tCHOICES\tDROPS\tDOWNS")
			for _, l := range r.links {
				fmt.Fprintf(tw, "  %s\t%s\t%.0f\t%s\t%s\t%.3f\t%.3f\t%+.3f\t%.0f\t%.0f\t%.0f\n", l.key.link, yesNo(l.usable), l.macs,
					rate(l.txRate), rate(l.rxRate), l.txLoad, l.rxLoad, l.balance, l.choices, l.drops, l.downs)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		if len(r.apps) > 0 {
			fmt.Fprintf(w, "  applications: available %s Mbit/s, fair share %s Mbit/s\n", rate(r.available*8/1e6), rate(r.fairShare*8/1e6))
			tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "  APP\tSHARE Mbit/s\tTX Mbit/s\tRX Mbit/s\tSENT\tRECEIVED\tPACING DROPS\tRX DROPS")
			for _, a := range r.apps {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%.0f\t%.0f\n", a.name, rate(a.share*8/1e6), rate(a.sendRate*8/1e6),
					rate(a.recvRate*8/1e6), bytesText(a.sent), bytesText(a.received), a.pacingDrops, a.recvDrops)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		if _, err := fmt.Fprintln(w); err != nil {
			return err
		}
	}
	return nil
}

// topOptions are --top's settings.
type topOptions struct {
	addr     string
	job      string
	interval time.Duration
	frames   int // 0: until ctx ends
	clear    bool
}

// top polls the daemon's stats of plugin stripe every interval and renders a frame each time,
// until ctx ends or frames were drawn.
func top(ctx context.Context, w io.Writer, o topOptions) error {
	if o.interval < minTopInterval || o.interval > maxTopInterval {
		return fmt.Errorf("--interval %v: want %v to %v", o.interval, minTopInterval, maxTopInterval)
	}
	c, err := client.Dial(o.addr)
	if err != nil {
		return fmt.Errorf("--daemon %s: %w", o.addr, err)
	}
	defer c.Close()
	prev := previous{}
	t := time.NewTicker(o.interval)
	defer t.Stop()
	for n := 1; ; n++ {
		resp, err := c.PluginStats(ctx, connect.NewRequest(&ovsplanev1.PluginStatsRequest{Plugin: "stripe"}))
		if err != nil {
			return fmt.Errorf("the daemon at %s: plugin stats stripe: %w", o.addr, err)
		}
		if o.clear {
			fmt.Fprint(w, clearScreen)
		}
		if err := render(w, time.Now(), frame(resp.Msg.GetJobs(), o.job, prev)); err != nil {
			return err
		}
		if o.frames > 0 && n >= o.frames {
			return nil
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil
		}
	}
}
