package flowmonapi

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/flowmon/query"
)

// Prefix is the path the API server mounts the Handler on.
const Prefix = "/flowmon/"

// SocketSuffix ends every collector job's query socket name: <job>.sock.
const SocketSuffix = ".sock"

// Bounds of a request.
const (
	// MaxInFlight bounds the flowmon requests served at once; more get unavailable.
	MaxInFlight = 4
	// DefaultRequestTimeout bounds one request, the collector's query included.
	DefaultRequestTimeout = 30 * time.Second
	// MaxCollectors bounds the sockets the collectors endpoint lists.
	MaxCollectors = 64
)

// Options configure a Handler.
type Options struct {
	// SocketDir is where the collector jobs' query sockets are: the flowmon plugin's data dir,
	// <data_dir>/plugin-data/flowmon. Empty: every data endpoint answers failed_precondition.
	SocketDir string
	// RequestTimeout bounds one request (0: DefaultRequestTimeout).
	RequestTimeout time.Duration
	// Now is the clock of relative time ranges; nil is time.Now.
	Now func() time.Time
	// Logger receives a debug line per failed request; nil discards.
	Logger *slog.Logger
}

// Handler serves the flowmon view (see the package doc). Create it with New; it is safe for
// concurrent use.
type Handler struct {
	opts     Options
	static   http.Handler
	inFlight chan struct{}

	mu      sync.Mutex
	clients map[string]*query.Client // by socket path, at most MaxCollectors: connections are reused
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
	if opts.Now == nil {
		opts.Now = time.Now
	}
	sub, err := fs.Sub(webFiles, "web")
	if err != nil { // the embedded tree always has web/: this is a build mistake
		sub = webFiles
	}
	return &Handler{opts: opts, static: http.StripPrefix(strings.TrimSuffix(Prefix, "/"), http.FileServerFS(sub)),
		inFlight: make(chan struct{}, MaxInFlight), clients: map[string]*query.Client{}}
}

// clientOf returns the (kept) client of a collector's socket.
func (h *Handler) clientOf(socket string) *query.Client {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.clients[socket]
	if c == nil {
		if len(h.clients) >= MaxCollectors {
			for k, old := range h.clients {
				old.CloseIdle()
				delete(h.clients, k)
			}
		}
		c = query.NewClient(socket, h.opts.RequestTimeout)
		h.clients[socket] = c
	}
	return c
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

func errPrecondition(format string, args ...any) error {
	return &apiError{http.StatusBadRequest, "failed_precondition", fmt.Sprintf(format, args...)}
}

func errUnavailable(format string, args ...any) error {
	return &apiError{http.StatusServiceUnavailable, "unavailable", fmt.Sprintf(format, args...)}
}

// Collector is one collector job the collectors endpoint lists.
type Collector struct {
	Job    string `json:"job"`
	Socket string `json:"socket"`
}

// ServeHTTP serves the page and the JSON endpoints under Prefix.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		h.fail(w, r, &apiError{http.StatusMethodNotAllowed, "invalid_argument",
			fmt.Sprintf("%s %s: the flowmon view is read-only: use GET", r.Method, r.URL.Path)})
		return
	}
	if len(r.URL.RawQuery) > query.MaxParamBytes {
		h.fail(w, r, errInvalid("query of %d bytes: at most %d", len(r.URL.RawQuery), query.MaxParamBytes))
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
		h.fail(w, r, errUnavailable("%d flowmon requests are in flight already: retry shortly", MaxInFlight))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.opts.RequestTimeout)
	defer cancel()
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		h.fail(w, r, errInvalid("query %.80q: %v", r.URL.RawQuery, err))
		return
	}
	var body []byte
	switch endpoint {
	case "collectors":
		var cs []Collector
		if cs, err = h.collectors(); err == nil {
			body, err = json.Marshal(struct {
				Collectors []Collector `json:"collectors"`
			}{cs})
		}
	case "query":
		body, err = h.query(ctx, v)
	case "status":
		body, err = h.status(ctx, v)
	default:
		err = &apiError{http.StatusNotFound, "not_found", fmt.Sprintf("no flowmon endpoint %.80q: use collectors, query or status", endpoint)}
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(body)
}

// collectors lists the query sockets in the sockets dir, sorted by job.
func (h *Handler) collectors() ([]Collector, error) {
	if h.opts.SocketDir == "" {
		return nil, errPrecondition("this daemon knows no flowmon sockets directory: is the flowmon plugin configured?")
	}
	ents, err := os.ReadDir(h.opts.SocketDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, errUnavailable("reading %s: %v", h.opts.SocketDir, err)
	}
	cs := []Collector{}
	for _, e := range ents {
		job, ok := strings.CutSuffix(e.Name(), SocketSuffix)
		if !ok || job == "" || e.Type()&fs.ModeSocket == 0 {
			continue
		}
		if len(cs) == MaxCollectors {
			break
		}
		cs = append(cs, Collector{Job: job, Socket: filepath.Join(h.opts.SocketDir, e.Name())})
	}
	slices.SortFunc(cs, func(a, b Collector) int { return strings.Compare(a.Job, b.Job) })
	return cs, nil
}

// client picks the collector named by v's job parameter (removed from v), or the only one.
func (h *Handler) client(v url.Values) (*query.Client, error) {
	job := v.Get("job")
	v.Del("job")
	cs, err := h.collectors()
	if err != nil {
		return nil, err
	}
	if job != "" {
		for _, c := range cs {
			if c.Job == job {
				return h.clientOf(c.Socket), nil
			}
		}
		return nil, &apiError{http.StatusNotFound, "not_found", fmt.Sprintf("no flowmon-collector job %.64q runs (no socket %s%s in %s)", job, job, SocketSuffix, h.opts.SocketDir)}
	}
	switch len(cs) {
	case 0:
		return nil, errPrecondition("no flowmon-collector job runs (no query socket in %s): start one (docs/flowmon.md)", h.opts.SocketDir)
	case 1:
		return h.clientOf(cs[0].Socket), nil
	}
	names := make([]string, 0, len(cs))
	for _, c := range cs {
		names = append(names, c.Job)
	}
	return nil, errPrecondition("%d flowmon-collector jobs run (%s): name one with job=NAME", len(cs), strings.Join(names, ", "))
}

// query validates the query, makes its range absolute and forwards it.
func (h *Handler) query(ctx context.Context, v url.Values) ([]byte, error) {
	c, err := h.client(v)
	if err != nil {
		return nil, err
	}
	q, err := query.ParseValues(v, h.opts.Now())
	if err != nil {
		return nil, errInvalid("%v", err)
	}
	return h.forward(ctx, c, query.PathQuery, q.Values().Encode(), query.MaxResultBytes)
}

// status forwards a status request.
func (h *Handler) status(ctx context.Context, v url.Values) ([]byte, error) {
	c, err := h.client(v)
	if err != nil {
		return nil, err
	}
	if len(v) > 0 {
		return nil, errInvalid("status takes only job=NAME")
	}
	return h.forward(ctx, c, query.PathStatus, "", query.MaxStatusBytes)
}

// forward asks the collector and maps its answer to the API's.
func (h *Handler) forward(ctx context.Context, c *query.Client, path, raw string, limit int64) ([]byte, error) {
	status, body, err := c.Get(ctx, path, raw, limit)
	if err != nil {
		if ctx.Err() != nil {
			return nil, &apiError{http.StatusGatewayTimeout, "deadline_exceeded", fmt.Sprintf("the collector did not answer within %s: %v", h.opts.RequestTimeout, err)}
		}
		return nil, errUnavailable("%v", err)
	}
	if status == http.StatusOK {
		return body, nil
	}
	var e struct {
		Error string `json:"error"`
	}
	msg := fmt.Sprintf("HTTP %d", status)
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		msg = e.Error
	}
	if status == http.StatusBadRequest {
		return nil, errInvalid("collector %s: %s", filepath.Base(c.Socket()), msg)
	}
	return nil, errUnavailable("collector %s: %s", filepath.Base(c.Socket()), msg)
}

// fail writes err as a Connect-style error answer.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = &apiError{http.StatusInternalServerError, "internal", err.Error()}
	}
	h.opts.Logger.Debug("flowmon view: request failed", "path", r.URL.Path, "code", ae.code, "error", ae.msg)
	body, _ := json.Marshal(struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}{ae.code, ae.msg})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(ae.status)
	_, _ = w.Write(append(body, '\n'))
}
