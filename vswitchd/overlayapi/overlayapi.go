package overlayapi

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/overlay/controller"
	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/overlay/route"
)

// Prefix is the path the API server mounts the Handler on.
const Prefix = "/overlay/"

// Bounds of a request.
const (
	// MaxQueryBytes bounds a request's raw query string.
	MaxQueryBytes = 512
	// MaxInFlight bounds the overlay requests served at once; more get unavailable.
	MaxInFlight = 4
	// DefaultRequestTimeout bounds one request's fabric reads unless Options say otherwise.
	DefaultRequestTimeout = 10 * time.Second
)

// Fabric is what the view reads from the fabric database; *fabric.Client has these methods.
type Fabric interface {
	// Status reads the newest route version, the stored slowest version and the lease.
	Status(ctx context.Context) (fabric.Global, error)
	// Nodes returns every registered node, sorted by name.
	Nodes(ctx context.Context) ([]fabric.NodeState, error)
	// Links returns every stored link measurement.
	Links(ctx context.Context) ([]fabric.LinkReport, error)
	// Routes returns the route tables of a version (empty when 0 or dropped).
	Routes(ctx context.Context, version int64) (fabric.Tables, error)
}

// Options configure a Handler.
type Options struct {
	// Open connects to the fabric; nil means no fabric is configured (every data endpoint
	// then answers failed_precondition naming overlay.fabric_remotes). It is called on the
	// first request that needs the fabric, and again after a failure; the Fabric it returns
	// is kept until Close.
	Open func(ctx context.Context) (Fabric, error)
	// Close, when not nil, is called by Handler.Close with the Fabric Open returned.
	Close func(Fabric)
	// RequestTimeout bounds one request's fabric reads (and an Open); 0 means
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// Logger receives a debug line per failed request; nil discards.
	Logger *slog.Logger
}

// Handler serves the overlay view (see the package doc). Create it with New; it is safe for
// concurrent use.
type Handler struct {
	opts     Options
	static   http.Handler
	inFlight chan struct{}

	mu     sync.Mutex
	fab    Fabric
	closed bool
}

//go:embed web
var webFiles embed.FS

// New returns a Handler with opts.
func New(opts Options) *Handler {
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	sub, err := fs.Sub(webFiles, "web")
	if err != nil { // the embedded tree always has web/: this is a build mistake
		sub = webFiles
	}
	return &Handler{opts: opts, static: http.StripPrefix(strings.TrimSuffix(Prefix, "/"), http.FileServerFS(sub)),
		inFlight: make(chan struct{}, MaxInFlight)}
}

// Close closes the fabric client, if one was opened; later requests answer unavailable.
func (h *Handler) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fab != nil && h.opts.Close != nil {
		h.opts.Close(h.fab)
	}
	h.fab, h.closed = nil, true
}

// apiError is an answer's error: a Connect code, its HTTP status and the message.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.code + ": " + e.msg }

func errInvalid(format string, args ...any) error {
	return &apiError{http.StatusBadRequest, "invalid_argument", fmt.Sprintf(format, args...)}
}

func errNotFound(format string, args ...any) error {
	return &apiError{http.StatusNotFound, "not_found", fmt.Sprintf(format, args...)}
}

func errUnavailable(format string, args ...any) error {
	return &apiError{http.StatusServiceUnavailable, "unavailable", fmt.Sprintf(format, args...)}
}

// ServeHTTP serves the page and the JSON endpoints under Prefix.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		h.fail(w, r, &apiError{http.StatusMethodNotAllowed, "invalid_argument",
			fmt.Sprintf("%s %s: the overlay view is read-only: use GET", r.Method, r.URL.Path)})
		return
	}
	if len(r.URL.RawQuery) > MaxQueryBytes {
		h.fail(w, r, errInvalid("query of %d bytes: at most %d", len(r.URL.RawQuery), MaxQueryBytes))
		return
	}
	endpoint, ok := strings.CutPrefix(r.URL.Path, Prefix+"v1/")
	if !ok {
		// The page: no inline script, nothing from elsewhere.
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		h.static.ServeHTTP(w, r)
		return
	}
	select {
	case h.inFlight <- struct{}{}:
		defer func() { <-h.inFlight }()
	default:
		h.fail(w, r, errUnavailable("%d overlay requests are in flight already: retry shortly", MaxInFlight))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.opts.RequestTimeout)
	defer cancel()
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		h.fail(w, r, errInvalid("query %.80q: %v", r.URL.RawQuery, err))
		return
	}
	var out any
	switch endpoint {
	case "nodes":
		out, err = h.nodes(ctx, q)
	case "links":
		out, err = h.links(ctx, q)
	case "routes":
		out, err = h.routes(ctx, q)
	case "versions":
		out, err = h.versions(ctx, q)
	case "lookup":
		out, err = h.lookup(ctx, q)
	default:
		err = errNotFound("no overlay endpoint %.80q: use nodes, links, routes, versions or lookup", endpoint)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	body, err := json.Marshal(out)
	if err != nil {
		h.fail(w, r, fmt.Errorf("overlay %s: encode the answer: %w", endpoint, err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(append(body, '\n'))
}

// fail writes err as a Connect-style error answer.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = &apiError{http.StatusInternalServerError, "internal", err.Error()}
		if errors.Is(err, context.DeadlineExceeded) {
			ae = &apiError{http.StatusGatewayTimeout, "deadline_exceeded", err.Error()}
		}
	}
	h.opts.Logger.Debug("overlay view: request failed", "path", r.URL.Path, "code", ae.code, "error", ae.msg)
	body, _ := json.Marshal(struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}{ae.code, ae.msg})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(ae.status)
	_, _ = w.Write(append(body, '\n'))
}

// fabric returns the fabric client, opening it when needed.
func (h *Handler) fabric(ctx context.Context) (Fabric, error) {
	if h.opts.Open == nil {
		return nil, &apiError{http.StatusBadRequest, "failed_precondition",
			"this daemon has no overlay fabric configured: set overlay.fabric_remotes to the fabric database's cluster members and restart ovsplaned"}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errUnavailable("the daemon is shutting down")
	}
	if h.fab != nil {
		return h.fab, nil
	}
	f, err := h.opts.Open(ctx)
	if err != nil {
		return nil, errUnavailable("connect to the overlay fabric: %v (check overlay.fabric_remotes and that the fabric database runs)", err)
	}
	h.fab = f
	return f, nil
}

// read wraps a fabric read error as unavailable, naming what was read.
func read(what string, err error) error {
	if errors.Is(err, fabric.ErrInvalid) {
		return errInvalid("%v", err)
	}
	return errUnavailable("read %s from the overlay fabric: %v", what, err)
}

// allowOnly refuses query parameters other than names, and repeated ones.
func allowOnly(q url.Values, names ...string) error {
	for k, v := range q {
		if !slices.Contains(names, k) {
			if len(names) == 0 {
				return errInvalid("unknown query parameter %.40q: this endpoint takes none", k)
			}
			return errInvalid("unknown query parameter %.40q: use %s", k, strings.Join(names, ", "))
		}
		if len(v) > 1 {
			return errInvalid("query parameter %s given %d times: give it once", k, len(v))
		}
	}
	return nil
}

// nodeParam reads a required node-name parameter, checked like fabric node names.
func nodeParam(q url.Values, name string) (string, error) {
	v := q.Get(name)
	if v == "" {
		return "", errInvalid("query parameter %s is required: give a node name (vsctl overlay nodes lists them)", name)
	}
	if err := CheckNodeName(v); err != nil {
		return "", errInvalid("%s: %v", name, err)
	}
	return v, nil
}

// CheckNodeName reports why s is not a valid node name (1 to 64 bytes of letters, digits,
// '.', '_' and '-', as overlay/fabric and overlay/route accept), or nil.
func CheckNodeName(s string) error {
	if s == "" || len(s) > fabric.MaxNameLen {
		return fmt.Errorf("node name %.80q: give 1 to %d bytes", s, fabric.MaxNameLen)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("node name %.80q: use letters, digits, '.', '_' and '-' only", s)
		}
	}
	return nil
}

// Node is one registered node as /v1/nodes answers it.
type Node struct {
	Name     string   `json:"name"`
	Kind     string   `json:"kind"`
	Carriers []string `json:"carriers"`
	Underlay []string `json:"underlay"`
	// AppliedVersion is the route version the node acknowledged last.
	AppliedVersion int64 `json:"applied_version"`
	// Behind is RouteVersion − AppliedVersion (0: the node runs the newest version).
	Behind int64  `json:"behind"`
	Health string `json:"health"`
	// LastSeen is the node's last registration or ack (its clock), RFC 3339 with ms.
	LastSeen string `json:"last_seen"`
}

// NodesAnswer is /v1/nodes' answer.
type NodesAnswer struct {
	RouteVersion int64  `json:"route_version"`
	Nodes        []Node `json:"nodes"`
}

func (h *Handler) nodes(ctx context.Context, q url.Values) (*NodesAnswer, error) {
	if err := allowOnly(q); err != nil {
		return nil, err
	}
	f, err := h.fabric(ctx)
	if err != nil {
		return nil, err
	}
	g, err := f.Status(ctx)
	if err != nil {
		return nil, read("the route version", err)
	}
	ns, err := f.Nodes(ctx)
	if err != nil {
		return nil, read("the nodes", err)
	}
	out := &NodesAnswer{RouteVersion: g.RouteVersion, Nodes: make([]Node, 0, len(ns))}
	for _, n := range ns {
		out.Nodes = append(out.Nodes, Node{Name: n.Name, Kind: string(n.Kind), Carriers: nonNil(n.Carriers),
			Underlay: nonNil(n.Underlay), AppliedVersion: n.AppliedVersion, Behind: max(g.RouteVersion-n.AppliedVersion, 0),
			Health: n.Health, LastSeen: stamp(n.LastSeen)})
	}
	return out, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func stamp(t time.Time) string {
	if t.UnixMilli() <= 0 {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// Link is one measured link as /v1/links answers it.
type Link struct {
	A             string `json:"a"`
	B             string `json:"b"`
	BandwidthKbps int64  `json:"bandwidth_kbps"`
	LatencyUs     int64  `json:"latency_us"`
	LossPPM       int64  `json:"loss_ppm"`
	MeasuredAt    string `json:"measured_at"`
	// Cost is the link's overlay/route cost (µs to deliver a 1 Mbit burst); 0 when unused.
	Cost int64 `json:"cost"`
	// Used says the link enters the route graph; Unused says why not when it does not.
	Used   bool   `json:"used"`
	Unused string `json:"unused,omitempty"`
}

// LinksAnswer is /v1/links' answer, links sorted by their ends.
type LinksAnswer struct {
	Links []Link `json:"links"`
}

func (h *Handler) links(ctx context.Context, q url.Values) (*LinksAnswer, error) {
	if err := allowOnly(q); err != nil {
		return nil, err
	}
	f, err := h.fabric(ctx)
	if err != nil {
		return nil, err
	}
	ns, err := f.Nodes(ctx)
	if err != nil {
		return nil, read("the nodes", err)
	}
	ls, err := f.Links(ctx)
	if err != nil {
		return nil, read("the links", err)
	}
	g := graphOf(ns, ls)
	out := &LinksAnswer{Links: g.view}
	return out, nil
}

// graph is the fabric state converted for overlay/route, as the controller converts it.
type graph struct {
	nodes []route.Node
	links []route.Link
	view  []Link // every stored link, sorted, with its cost or why it is left out
}

// graphOf converts nodes and links as overlay/controller.Tables does.
func graphOf(ns []fabric.NodeState, ls []fabric.LinkReport) graph {
	var g graph
	kind := make(map[string]route.Kind, len(ns))
	for _, n := range ns {
		k := route.Ordinary
		if n.Kind == fabric.KindSuper {
			k = route.Super
		}
		kind[n.Name] = k
		g.nodes = append(g.nodes, route.Node{ID: n.Name, Kind: k})
	}
	for _, l := range ls {
		v := Link{A: l.A, B: l.B, BandwidthKbps: l.BandwidthKbps, LatencyUs: l.LatencyUs, LossPPM: l.LossPPM,
			MeasuredAt: stamp(l.MeasuredAt)}
		ka, okA := kind[l.A]
		kb, okB := kind[l.B]
		m := route.Metrics{Bandwidth: uint64(max(l.BandwidthKbps, 0)) * 1000, Latency: time.Duration(l.LatencyUs) * time.Microsecond}
		cost, err := m.Cost()
		switch {
		case !okA || !okB:
			v.Unused = "an end is not a registered node"
		case ka == route.Ordinary && kb == route.Ordinary:
			v.Unused = "both ends are ordinary nodes, which never talk directly"
		case err != nil:
			v.Unused = err.Error()
		default:
			v.Used, v.Cost = true, int64(cost)
			g.links = append(g.links, route.Link{A: l.A, B: l.B, Metrics: m})
		}
		g.view = append(g.view, v)
	}
	slices.SortFunc(g.view, func(x, y Link) int {
		if c := strings.Compare(x.A, y.A); c != 0 {
			return c
		}
		return strings.Compare(x.B, y.B)
	})
	if g.view == nil {
		g.view = []Link{}
	}
	return g
}

// Route is one entry of a node's route table.
type Route struct {
	// Kind is "super" (a route towards super node Dest through NextHop), "attached" (a
	// super's direct delivery to ordinary node Dest) or "attachment" (an ordinary node's link
	// to its super Dest).
	Kind    string `json:"kind"`
	Dest    string `json:"dest"`
	NextHop string `json:"next_hop"`
	// Cost is the path cost to Dest (overlay/route units); -1 when the stored value does not
	// parse.
	Cost int64 `json:"cost"`
}

// RoutesAnswer is /v1/routes' answer.
type RoutesAnswer struct {
	Node string `json:"node"`
	// Version is the route version shown; RouteVersion the newest published.
	Version      int64   `json:"version"`
	RouteVersion int64   `json:"route_version"`
	Routes       []Route `json:"routes"`
}

func (h *Handler) routes(ctx context.Context, q url.Values) (*RoutesAnswer, error) {
	if err := allowOnly(q, "node", "version"); err != nil {
		return nil, err
	}
	node, err := nodeParam(q, "node")
	if err != nil {
		return nil, err
	}
	version := int64(-1)
	if v := q.Get("version"); v != "" {
		if version, err = strconv.ParseInt(v, 10, 64); err != nil || version < 1 || version > fabric.MaxVersion {
			return nil, errInvalid("version %.40q: give a route version from 1 to %d (vsctl overlay versions shows the newest)", v, int64(fabric.MaxVersion))
		}
	}
	f, err := h.fabric(ctx)
	if err != nil {
		return nil, err
	}
	g, err := f.Status(ctx)
	if err != nil {
		return nil, read("the route version", err)
	}
	if version < 0 {
		version = g.RouteVersion
	}
	if version > g.RouteVersion {
		return nil, errNotFound("route version %d is not published: the newest is %d", version, g.RouteVersion)
	}
	tables, err := f.Routes(ctx, version)
	if err != nil {
		return nil, read(fmt.Sprintf("route version %d", version), err)
	}
	ns, err := f.Nodes(ctx)
	if err != nil {
		return nil, read("the nodes", err)
	}
	ordinary := make(map[string]bool, len(ns))
	for _, n := range ns {
		ordinary[n.Name] = n.Kind != fabric.KindSuper
	}
	if _, ok := ordinary[node]; !ok {
		return nil, errNotFound("node %s is not in the overlay fabric (vsctl overlay nodes lists them)", node)
	}
	if version > 0 && len(tables) == 0 {
		return nil, errNotFound("route version %d has been dropped: every node runs a newer one (the newest is %d)", version, g.RouteVersion)
	}
	return &RoutesAnswer{Node: node, Version: version, RouteVersion: g.RouteVersion, Routes: parseTable(tables[node], ordinary)}, nil
}

// parseTable turns a stored table (the controller's format: D → "NEXTHOP COST", "att.S" →
// "S COST") into routes sorted by kind then destination; ordinary tells ordinary nodes (a
// super's direct delivery) from super nodes.
func parseTable(t map[string]string, ordinary map[string]bool) []Route {
	out := make([]Route, 0, len(t))
	for _, dst := range slices.Sorted(maps.Keys(t)) {
		hop, costText, _ := strings.Cut(t[dst], " ")
		cost, err := strconv.ParseInt(costText, 10, 64)
		if err != nil {
			cost = -1
		}
		r := Route{Kind: "super", Dest: dst, NextHop: hop, Cost: cost}
		switch {
		case strings.HasPrefix(dst, "att."):
			r.Kind, r.Dest = "attachment", strings.TrimPrefix(dst, "att.")
		case ordinary[dst]:
			r.Kind = "attached"
		}
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(x, y Route) int { return strings.Compare(x.Kind, y.Kind) })
	return out
}

// Lease is the controller lease as /v1/versions answers it.
type Lease struct {
	Holder  string `json:"holder"`
	Expires string `json:"expires"`
	Epoch   int64  `json:"epoch"`
	// Held says the holder's expiry is in the future by the daemon's clock.
	Held bool `json:"held"`
}

// NodeVersion is one node's applied version.
type NodeVersion struct {
	Name           string `json:"name"`
	AppliedVersion int64  `json:"applied_version"`
	Health         string `json:"health"`
	// Current says the node runs RouteVersion.
	Current bool `json:"current"`
}

// VersionsAnswer is /v1/versions' answer.
type VersionsAnswer struct {
	// RouteVersion is the newest published route version (0: none yet).
	RouteVersion int64 `json:"route_version"`
	// MinApplied is the slowest applied version among nodes not marked down, read now
	// (RouteVersion with no such node); StoredMinApplied is the value stored at the last
	// publish.
	MinApplied       int64         `json:"min_applied"`
	StoredMinApplied int64         `json:"stored_min_applied"`
	Lease            Lease         `json:"lease"`
	Nodes            []NodeVersion `json:"nodes"`
}

func (h *Handler) versions(ctx context.Context, q url.Values) (*VersionsAnswer, error) {
	if err := allowOnly(q); err != nil {
		return nil, err
	}
	f, err := h.fabric(ctx)
	if err != nil {
		return nil, err
	}
	g, err := f.Status(ctx)
	if err != nil {
		return nil, read("the route version", err)
	}
	ns, err := f.Nodes(ctx)
	if err != nil {
		return nil, read("the nodes", err)
	}
	out := &VersionsAnswer{RouteVersion: g.RouteVersion, MinApplied: g.RouteVersion, StoredMinApplied: g.MinApplied,
		Lease: Lease{Holder: g.Lease.Holder, Expires: stamp(g.Lease.Expires), Epoch: g.Lease.Epoch,
			Held: g.Lease.Holder != "" && g.Lease.Expires.After(time.Now())},
		Nodes: make([]NodeVersion, 0, len(ns))}
	for _, n := range ns {
		if n.Health != fabric.HealthDown {
			out.MinApplied = min(out.MinApplied, n.AppliedVersion)
		}
		out.Nodes = append(out.Nodes, NodeVersion{Name: n.Name, AppliedVersion: n.AppliedVersion, Health: n.Health,
			Current: n.AppliedVersion == g.RouteVersion})
	}
	return out, nil
}

// Hop is one link of a looked-up path.
type Hop struct {
	From string `json:"from"`
	To   string `json:"to"`
	Cost int64  `json:"cost"`
}

// LookupAnswer is /v1/lookup's answer.
type LookupAnswer struct {
	Src string `json:"src"`
	Dst string `json:"dst"`
	// Path lists the nodes from Src to Dst; every node between them is a super node.
	Path []string `json:"path"`
	Hops []Hop    `json:"hops"`
	// Cost is the path's cost (sum of the hops').
	Cost int64 `json:"cost"`
	// Version is the newest published route version, which the path is compared with.
	Version int64 `json:"version"`
	// InEffect says the fabric's current nodes and links yield exactly version Version's
	// tables: nodes running Version forward on this path. When false the fabric changed
	// since Version was published (Note says how) and the path is the next version's.
	InEffect bool   `json:"in_effect"`
	Note     string `json:"note,omitempty"`
}

func (h *Handler) lookup(ctx context.Context, q url.Values) (*LookupAnswer, error) {
	if err := allowOnly(q, "src", "dst"); err != nil {
		return nil, err
	}
	src, err := nodeParam(q, "src")
	if err != nil {
		return nil, err
	}
	dst, err := nodeParam(q, "dst")
	if err != nil {
		return nil, err
	}
	f, err := h.fabric(ctx)
	if err != nil {
		return nil, err
	}
	g, err := f.Status(ctx)
	if err != nil {
		return nil, read("the route version", err)
	}
	ns, err := f.Nodes(ctx)
	if err != nil {
		return nil, read("the nodes", err)
	}
	ls, err := f.Links(ctx)
	if err != nil {
		return nil, read("the links", err)
	}
	gr := graphOf(ns, ls)
	r, err := route.New(gr.nodes, gr.links)
	if err != nil {
		return nil, errUnavailable("the fabric's graph (%d nodes, %d links) does not route: %v", len(gr.nodes), len(gr.links), err)
	}
	p, err := r.Lookup(src, dst)
	switch {
	case errors.Is(err, route.ErrUnknownNode):
		return nil, errNotFound("%v (vsctl overlay nodes lists the nodes)", err)
	case errors.Is(err, route.ErrNoRoute):
		return nil, errNotFound("no route from %s to %s: %v", src, dst, err)
	case err != nil:
		return nil, errUnavailable("lookup %s → %s: %v", src, dst, err)
	}
	out := &LookupAnswer{Src: src, Dst: dst, Path: p.Nodes, Hops: make([]Hop, 0, len(p.Nodes)), Cost: int64(p.Cost), Version: g.RouteVersion}
	cost := make(map[[2]string]int64, len(gr.view))
	for _, l := range gr.view {
		cost[[2]string{l.A, l.B}], cost[[2]string{l.B, l.A}] = l.Cost, l.Cost
	}
	for i := 1; i < len(p.Nodes); i++ {
		out.Hops = append(out.Hops, Hop{From: p.Nodes[i-1], To: p.Nodes[i], Cost: cost[[2]string{p.Nodes[i-1], p.Nodes[i]}]})
	}
	want, _, err := controller.Tables(ns, ls)
	if err != nil {
		return nil, errUnavailable("route tables of the fabric's graph: %v", err)
	}
	if g.RouteVersion == 0 {
		out.Note = "no route version is published yet: the controller has not run"
		return out, nil
	}
	stored, err := f.Routes(ctx, g.RouteVersion)
	if err != nil {
		return nil, read(fmt.Sprintf("route version %d", g.RouteVersion), err)
	}
	if sameTables(want, stored) {
		out.InEffect = true
	} else {
		out.Note = fmt.Sprintf("the fabric's nodes or links changed since version %d was published: this path is what the controller publishes next", g.RouteVersion)
	}
	return out, nil
}

// sameTables reports whether a and b hold the same routes (a node with no routes equals a
// missing node, as in overlay/fabric).
func sameTables(a, b fabric.Tables) bool {
	for n, r := range a {
		if !maps.Equal(r, b[n]) {
			return false
		}
	}
	for n, r := range b {
		if !maps.Equal(r, a[n]) {
			return false
		}
	}
	return true
}
