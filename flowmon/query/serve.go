package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The query socket protocol: the flowmon-collector job owns its store (DuckDB allows one
// writing process) and answers queries over HTTP/1.1 on a unix socket,
// <plugin data dir>/<job>.sock (the plugin's data dir is <daemon data_dir>/plugin-data/flowmon).
//
//	GET /v1/query?PARAMS   PARAMS as ParseValues reads them; 200 with a Wire object
//	GET /v1/status         200 with a Status object
//
// Errors answer {"error": "..."}: 400 for a bad query (the message names the parameter and
// the fix), 404 for another path, 405 for another method, 503 when too many queries run or the
// store failed or took longer than the handler's timeout.
const (
	PathQuery  = "/v1/query"
	PathStatus = "/v1/status"
)

// Bounds of the query socket.
const (
	// DefaultQueryTimeout bounds one query's run in the store.
	DefaultQueryTimeout = 30 * time.Second
	// DefaultMaxInFlight bounds the queries a handler runs at once.
	DefaultMaxInFlight = 4
	// MaxStatusBytes bounds a Status's JSON form as a Client reads it.
	MaxStatusBytes = 1 << 20
)

// Status is what a collector reports about itself on PathStatus: its counters (received,
// decoded, stored, dropped, ... as the collector names them) sampled at Time.
type Status struct {
	Job      string            `json:"job"`
	Store    string            `json:"store"`
	Started  time.Time         `json:"started"`
	Time     time.Time         `json:"time"`
	Counters map[string]uint64 `json:"counters"`
}

// ServeOptions configure NewHandler.
type ServeOptions struct {
	// Run answers a validated query (a store's Query).
	Run func(ctx context.Context, q Query) (Result, error)
	// Status reports the collector; nil answers 404 on PathStatus.
	Status func() Status
	// Timeout bounds one query (0: DefaultQueryTimeout); MaxInFlight the queries at once (0:
	// DefaultMaxInFlight).
	Timeout     time.Duration
	MaxInFlight int
	// Now is the clock for relative ranges; nil is time.Now.
	Now func() time.Time
}

// NewHandler returns the query socket's handler (see PathQuery).
func NewHandler(opts ServeOptions) http.Handler {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultQueryTimeout
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	slots := make(chan struct{}, opts.MaxInFlight)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			writeError(w, http.StatusMethodNotAllowed, "only GET is served")
			return
		}
		switch r.URL.Path {
		case PathStatus:
			if opts.Status == nil {
				writeError(w, http.StatusNotFound, "this server reports no status")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(opts.Status())
		case PathQuery:
			if len(r.URL.RawQuery) > MaxParamBytes {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("query string of %d bytes, at most %d", len(r.URL.RawQuery), MaxParamBytes))
				return
			}
			v, err := url.ParseQuery(r.URL.RawQuery)
			if err != nil {
				writeError(w, http.StatusBadRequest, "query string: "+err.Error())
				return
			}
			q, err := ParseValues(v, opts.Now())
			if err != nil {
				writeError(w, http.StatusBadRequest, err.Error())
				return
			}
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
			default:
				writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("%d queries already run: retry shortly", opts.MaxInFlight))
				return
			}
			ctx, cancel := context.WithTimeout(r.Context(), opts.Timeout)
			defer cancel()
			res, err := opts.Run(ctx, q)
			if err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					err = fmt.Errorf("the query took longer than %s: narrow the time range or the filters: %w", opts.Timeout, err)
				}
				writeError(w, http.StatusServiceUnavailable, "store: "+err.Error())
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = WriteJSON(w, q.Kind, res)
		default:
			writeError(w, http.StatusNotFound, fmt.Sprintf("no such path: use %s or %s", PathQuery, PathStatus))
		}
	})
}

// writeError answers {"error": msg} with status.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// Client asks a collector's query socket (or the daemon's API, which serves the same paths
// under /flowmon: see NewClientAt). The zero value is not usable: use NewClient.
type Client struct {
	socket string
	prefix string
	hc     *http.Client
}

// NewClient returns a client of the query socket at path; every request is bounded by its
// ctx and by timeout (0: DefaultQueryTimeout plus 5 s).
func NewClient(path string, timeout time.Duration) *Client {
	return NewClientAt(path, "", timeout)
}

// NewClientAt is NewClient for a server on the unix socket path that serves the protocol's
// paths below prefix: "/flowmon" for the daemon's API socket, "" for a collector's socket.
func NewClientAt(path, prefix string, timeout time.Duration) *Client {
	if timeout <= 0 {
		timeout = DefaultQueryTimeout + 5*time.Second
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
		MaxIdleConns: 2, IdleConnTimeout: 30 * time.Second,
	}
	return &Client{socket: path, prefix: prefix, hc: &http.Client{Transport: tr, Timeout: timeout}}
}

// CloseIdle closes the client's idle connections.
func (c *Client) CloseIdle() { c.hc.CloseIdleConnections() }

// Socket returns the socket path the client asks.
func (c *Client) Socket() string { return c.socket }

// Get sends GET path?rawQuery and returns the status and the body (at most max bytes).
func (c *Client) Get(ctx context.Context, path, rawQuery string, limit int64) (int, []byte, error) {
	u := url.URL{Scheme: "http", Host: "flowmon", Path: c.prefix + path, RawQuery: rawQuery}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, nil, fmt.Errorf("flowmon query socket %s: %w", c.socket, err)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("flowmon query socket %s (is a flowmon-collector job running?): %w", c.socket, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return 0, nil, fmt.Errorf("flowmon query socket %s: reading the answer: %w", c.socket, err)
	}
	if int64(len(body)) > limit {
		return 0, nil, fmt.Errorf("flowmon query socket %s: answer of more than %d bytes", c.socket, limit)
	}
	return resp.StatusCode, body, nil
}

// Query runs q (validated first) on the collector and returns its result.
func (c *Client) Query(ctx context.Context, q Query) (Result, error) {
	if err := q.Validate(); err != nil {
		return Result{}, err
	}
	status, body, err := c.Get(ctx, PathQuery, q.Values().Encode(), MaxResultBytes)
	if err != nil {
		return Result{}, err
	}
	if status != http.StatusOK {
		return Result{}, answerError(status, body)
	}
	_, res, err := ReadJSON(strings.NewReader(string(body)))
	return res, err
}

// Status returns the collector's status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	status, body, err := c.Get(ctx, PathStatus, "", MaxStatusBytes)
	if err != nil {
		return Status{}, err
	}
	if status != http.StatusOK {
		return Status{}, answerError(status, body)
	}
	var s Status
	if err := json.Unmarshal(body, &s); err != nil {
		return Status{}, fmt.Errorf("decoding the collector's status: %w", err)
	}
	return s, nil
}

// answerError turns an error answer into an error carrying its message.
func answerError(status int, body []byte) error {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return fmt.Errorf("flowmon collector (HTTP %d): %s", status, e.Error)
	}
	return fmt.Errorf("flowmon collector: HTTP %d: %.200s", status, body)
}
