package daemoncmd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
)

// The overlay view's answers (vswitchd/overlayapi, GET /overlay/v1/...), as vsctl reads and
// prints them; the daemon's JSON names.

type wireOverlayNode struct {
	Name           string   `json:"name"`
	Kind           string   `json:"kind"`
	Carriers       []string `json:"carriers"`
	Underlay       []string `json:"underlay"`
	AppliedVersion int64    `json:"applied_version"`
	Behind         int64    `json:"behind"`
	Health         string   `json:"health"`
	LastSeen       string   `json:"last_seen"`
}

type wireOverlayNodes struct {
	RouteVersion int64             `json:"route_version"`
	Nodes        []wireOverlayNode `json:"nodes"`
}

type wireOverlayLink struct {
	A             string `json:"a"`
	B             string `json:"b"`
	BandwidthKbps int64  `json:"bandwidth_kbps"`
	LatencyUs     int64  `json:"latency_us"`
	LossPPM       int64  `json:"loss_ppm"`
	MeasuredAt    string `json:"measured_at"`
	Cost          int64  `json:"cost"`
	Used          bool   `json:"used"`
	Unused        string `json:"unused,omitempty"`
}

type wireOverlayLinks struct {
	Links []wireOverlayLink `json:"links"`
}

type wireOverlayRoutes struct {
	Node         string `json:"node"`
	Version      int64  `json:"version"`
	RouteVersion int64  `json:"route_version"`
	Routes       []struct {
		Kind    string `json:"kind"`
		Dest    string `json:"dest"`
		NextHop string `json:"next_hop"`
		Cost    int64  `json:"cost"`
	} `json:"routes"`
}

type wireOverlayVersions struct {
	RouteVersion     int64 `json:"route_version"`
	MinApplied       int64 `json:"min_applied"`
	StoredMinApplied int64 `json:"stored_min_applied"`
	Lease            struct {
		Holder  string `json:"holder"`
		Expires string `json:"expires"`
		Epoch   int64  `json:"epoch"`
		Held    bool   `json:"held"`
	} `json:"lease"`
	Nodes []struct {
		Name           string `json:"name"`
		AppliedVersion int64  `json:"applied_version"`
		Health         string `json:"health"`
		Current        bool   `json:"current"`
	} `json:"nodes"`
}

type wireOverlayLookup struct {
	Src  string   `json:"src"`
	Dst  string   `json:"dst"`
	Path []string `json:"path"`
	Hops []struct {
		From string `json:"from"`
		To   string `json:"to"`
		Cost int64  `json:"cost"`
	} `json:"hops"`
	Cost     int64  `json:"cost"`
	Version  int64  `json:"version"`
	InEffect bool   `json:"in_effect"`
	Note     string `json:"note,omitempty"`
}

// maxOverlayName bounds a node name on the command line (overlay/fabric's MaxNameLen).
const maxOverlayName = 64

// checkOverlayName refuses what no fabric node can be named, before anything is sent.
func checkOverlayName(what, s string) error {
	if s == "" || len(s) > maxOverlayName {
		return &usageError{fmt.Sprintf("%s %.80q: give a node name of 1 to %d bytes", what, s, maxOverlayName)}
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return &usageError{fmt.Sprintf("%s %.80q: node names use letters, digits, '.', '_' and '-' only", what, s)}
		}
	}
	return nil
}

// overlayGet reads one overlay endpoint (GET /overlay/v1/ENDPOINT?QUERY) into resp.
func (c *apiClient) overlayGet(ctx context.Context, endpoint string, q url.Values, resp any) error {
	u := c.base + "/overlay/v1/" + endpoint
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	hr.Header.Set("Accept", "application/json")
	return c.do(ctx, "overlay "+endpoint, hr, resp)
}

const overlayUsage = "overlay nodes | links | routes NODE [VERSION] | versions | lookup SRC DST"

// overlay runs `overlay SUBCOMMAND ...`.
func (r *runner) overlay(ctx context.Context) error {
	if len(r.o.args) == 0 {
		return &usageError{"expected " + overlayUsage}
	}
	sub, args := r.o.args[0], r.o.args[1:]
	want := map[string][2]int{"nodes": {0, 0}, "links": {0, 0}, "routes": {1, 2}, "versions": {0, 0}, "lookup": {2, 2}}
	n, ok := want[sub]
	if !ok {
		return &usageError{fmt.Sprintf("overlay %.40q: unknown subcommand (%s)", sub, overlayUsage)}
	}
	if len(args) < n[0] || len(args) > n[1] {
		return &usageError{fmt.Sprintf("overlay %s: %d arguments: expected %s", sub, len(args), overlayUsage)}
	}
	switch sub {
	case "nodes":
		return r.overlayNodes(ctx)
	case "links":
		return r.overlayLinks(ctx)
	case "routes":
		return r.overlayRoutes(ctx, args)
	case "versions":
		return r.overlayVersions(ctx)
	}
	return r.overlayLookup(ctx, args[0], args[1])
}

// printJSON writes v indented.
func (r *runner) printJSON(v any) error {
	enc := json.NewEncoder(r.env.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (r *runner) overlayNodes(ctx context.Context) error {
	var a wireOverlayNodes
	if err := r.c.overlayGet(ctx, "nodes", nil, &a); err != nil {
		return err
	}
	if r.o.format == "json" {
		return r.printJSON(a)
	}
	tw := tabwriter.NewWriter(r.env.Stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "route version %d\n", a.RouteVersion)
	fmt.Fprintln(tw, "NODE\tKIND\tHEALTH\tAPPLIED\tBEHIND\tCARRIERS\tUNDERLAY\tLAST SEEN")
	for _, n := range a.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", n.Name, n.Kind, n.Health, n.AppliedVersion, n.Behind,
			dash(strings.Join(n.Carriers, ",")), dash(strings.Join(n.Underlay, ",")), dash(n.LastSeen))
	}
	return tw.Flush()
}

func (r *runner) overlayLinks(ctx context.Context) error {
	var a wireOverlayLinks
	if err := r.c.overlayGet(ctx, "links", nil, &a); err != nil {
		return err
	}
	if r.o.format == "json" {
		return r.printJSON(a)
	}
	tw := tabwriter.NewWriter(r.env.Stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "A\tB\tBANDWIDTH\tLATENCY\tLOSS\tCOST\tMEASURED")
	for _, l := range a.Links {
		cost := strconv.FormatInt(l.Cost, 10)
		if !l.Used {
			cost = "unused: " + oneLine(l.Unused)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.A, l.B, kbpsText(l.BandwidthKbps), usText(l.LatencyUs),
			strconv.FormatInt(l.LossPPM, 10)+"ppm", cost, dash(l.MeasuredAt))
	}
	return tw.Flush()
}

// kbpsText is a bandwidth for people: 1.5Gbit/s, 200Mbit/s, 64kbit/s.
func kbpsText(kbps int64) string {
	switch {
	case kbps >= 1_000_000:
		return strconv.FormatFloat(float64(kbps)/1e6, 'f', -1, 64) + "Gbit/s"
	case kbps >= 1_000:
		return strconv.FormatFloat(float64(kbps)/1e3, 'f', -1, 64) + "Mbit/s"
	}
	return strconv.FormatInt(kbps, 10) + "kbit/s"
}

// usText is a latency for people: 130ms, 250us.
func usText(us int64) string {
	if us >= 1000 {
		return strconv.FormatFloat(float64(us)/1e3, 'f', -1, 64) + "ms"
	}
	return strconv.FormatInt(us, 10) + "us"
}

func (r *runner) overlayRoutes(ctx context.Context, args []string) error {
	if err := checkOverlayName("routes: node", args[0]); err != nil {
		return err
	}
	q := url.Values{"node": {args[0]}}
	if len(args) == 2 {
		v, err := strconv.ParseInt(args[1], 10, 64)
		if err != nil || v < 1 || v > 1<<53 {
			return &usageError{fmt.Sprintf("routes: version %.40q: give a route version from 1 to %d", args[1], int64(1<<53))}
		}
		q.Set("version", args[1])
	}
	var a wireOverlayRoutes
	if err := r.c.overlayGet(ctx, "routes", q, &a); err != nil {
		return err
	}
	if r.o.format == "json" {
		return r.printJSON(a)
	}
	tw := tabwriter.NewWriter(r.env.Stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "node %s, route version %d (newest %d)\n", a.Node, a.Version, a.RouteVersion)
	fmt.Fprintln(tw, "KIND\tDEST\tNEXT HOP\tCOST")
	for _, rt := range a.Routes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", rt.Kind, rt.Dest, rt.NextHop, rt.Cost)
	}
	return tw.Flush()
}

// overlayVersions runs `overlay versions`: exit 0 when every node not marked down runs the
// newest route version.
func (r *runner) overlayVersions(ctx context.Context) error {
	var a wireOverlayVersions
	if err := r.c.overlayGet(ctx, "versions", nil, &a); err != nil {
		return err
	}
	if r.o.format == "json" {
		if err := r.printJSON(a); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(r.env.Stdout, 0, 8, 2, ' ', 0)
		held := "expired"
		if a.Lease.Held {
			held = "held"
		}
		fmt.Fprintf(tw, "route version %d, slowest node %d (stored %d)\n", a.RouteVersion, a.MinApplied, a.StoredMinApplied)
		if a.Lease.Holder == "" {
			fmt.Fprintln(tw, "controller lease: none taken yet")
		} else {
			fmt.Fprintf(tw, "controller lease: %s, epoch %d, %s (expiry %s)\n", a.Lease.Holder, a.Lease.Epoch, held, dash(a.Lease.Expires))
		}
		fmt.Fprintln(tw, "NODE\tAPPLIED\tHEALTH\tCURRENT")
		for _, n := range a.Nodes {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", n.Name, n.AppliedVersion, n.Health, yesNo(n.Current))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if a.MinApplied < a.RouteVersion {
		return errNotReady
	}
	return nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func (r *runner) overlayLookup(ctx context.Context, src, dst string) error {
	if err := checkOverlayName("lookup: source", src); err != nil {
		return err
	}
	if err := checkOverlayName("lookup: destination", dst); err != nil {
		return err
	}
	var a wireOverlayLookup
	if err := r.c.overlayGet(ctx, "lookup", url.Values{"src": {src}, "dst": {dst}}, &a); err != nil {
		return err
	}
	if r.o.format == "json" {
		return r.printJSON(a)
	}
	state := "in effect"
	if !a.InEffect {
		state = "not yet published"
	}
	fmt.Fprintf(r.env.Stdout, "path:    %s\ncost:    %d\nversion: %d (%s)\n", strings.Join(a.Path, " -> "), a.Cost, a.Version, state)
	tw := tabwriter.NewWriter(r.env.Stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "FROM\tTO\tCOST")
	for _, h := range a.Hops {
		fmt.Fprintf(tw, "%s\t%s\t%d\n", h.From, h.To, h.Cost)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if a.Note != "" {
		fmt.Fprintf(r.env.Stdout, "note: %s\n", oneLine(a.Note))
	}
	return nil
}
