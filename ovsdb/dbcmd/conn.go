package dbcmd

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// TLSFiles names the PEM files of an ssl: connection, as ovs-vsctl's -p, -c and -C options do.
type TLSFiles struct {
	PrivateKey, Certificate, CACert string
}

// DialOptions control Dial.
type DialOptions struct {
	// TLS is required for ssl: remotes.
	TLS *TLSFiles
	// LeaderOnly skips servers of a clustered database that are not the Raft leader or are
	// disconnected from the cluster.
	LeaderOnly bool
	// Shuffle tries the remotes of a comma-separated list in random order.
	Shuffle bool
	// Retry keeps trying (until ctx ends) when no remote can be reached, instead of failing.
	Retry bool
	// Database is the database name; "Open_vSwitch" when empty.
	Database string
}

// Conn is one JSON-RPC connection to an ovsdb-server. Calls may be made from one goroutine at
// a time; replies to the server's "echo" requests are sent automatically.
type Conn struct {
	nc       net.Conn
	database string

	wmu sync.Mutex
	enc *json.Encoder

	// noServerDB is set when the server turned out to serve no _Server database (ovsplaned's
	// embedded, libovsdb-based server), which also lacks the "comment" operation.
	noServerDB bool

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan rpcReply
	updates chan json.RawMessage
	err     error
	done    chan struct{}
}

type rpcReply struct {
	Result json.RawMessage
	Error  json.RawMessage
}

type rpcMessage struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// ConnectError is a failure to reach the database, worded as ovs-vsctl words it
// ("unix:/run/openvswitch/db.sock: database connection failed (No such file or directory)").
type ConnectError struct {
	Remote string
	Err    error
}

func (e *ConnectError) Error() string {
	return fmt.Sprintf("%s: database connection failed (%s)", e.Remote, Strerror(e.Err))
}

func (e *ConnectError) Unwrap() error { return e.Err }

// errNotLeader marks a server passed over by DialOptions.LeaderOnly.
var errNotLeader = errors.New("not the cluster leader")

// Strerror renders err as C's strerror would when it carries an errno, else as err.Error().
func Strerror(err error) string {
	if errors.Is(err, errNotLeader) {
		return ""
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		s := errno.Error()
		if s != "" {
			return strings.ToUpper(s[:1]) + s[1:]
		}
	}
	if errors.Is(err, io.EOF) {
		return "End of file"
	}
	return err.Error()
}

// Dial connects to the first usable remote of remotes, a comma-separated list of unix:PATH,
// tcp:HOST:PORT and ssl:HOST:PORT (the syntax of ovs-vsctl's --db). With LeaderOnly a server
// whose copy of a clustered database is not the connected leader is passed over. Without Retry
// the error of the last remote tried is returned as a *ConnectError (a server passed over for
// not being the leader reports no reason, as ovs-vsctl's "database connection failed ()");
// with Retry Dial keeps cycling through the remotes until one works or ctx ends.
func Dial(ctx context.Context, remotes string, opts DialOptions) (*Conn, error) {
	list := strings.Split(remotes, ",")
	for i := range list {
		list[i] = strings.TrimSpace(list[i])
	}
	if opts.Shuffle && len(list) > 1 {
		rand.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
	}
	if opts.Database == "" {
		opts.Database = "Open_vSwitch"
	}
	backoff := 100 * time.Millisecond
	for {
		var last error
		for _, r := range list {
			c, err := dialOne(ctx, r, opts)
			if err == nil {
				return c, nil
			}
			last = err
		}
		if !opts.Retry || ctx.Err() != nil {
			return nil, last
		}
		select {
		case <-ctx.Done():
			return nil, last
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 8*time.Second)
	}
}

func dialOne(ctx context.Context, remote string, opts DialOptions) (*Conn, error) {
	fail := func(err error) (*Conn, error) { return nil, &ConnectError{Remote: remote, Err: err} }
	kind, addr, ok := strings.Cut(remote, ":")
	if !ok {
		return fail(syscall.EAFNOSUPPORT)
	}
	var d net.Dialer
	var nc net.Conn
	var err error
	switch kind {
	case "unix":
		nc, err = d.DialContext(ctx, "unix", addr)
	case "tcp":
		nc, err = d.DialContext(ctx, "tcp", hostPort(addr))
	case "ssl":
		var cfg *tls.Config
		cfg, err = tlsConfig(opts.TLS)
		if err != nil {
			return fail(err)
		}
		td := tls.Dialer{NetDialer: &d, Config: cfg}
		nc, err = td.DialContext(ctx, "tcp", hostPort(addr))
	default:
		return fail(syscall.EAFNOSUPPORT)
	}
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Err != nil {
			var se *os.SyscallError
			if errors.As(op.Err, &se) {
				return fail(se.Err)
			}
		}
		return fail(err)
	}
	c := newConn(nc, opts.Database)
	if opts.LeaderOnly {
		if err := c.checkLeader(ctx); err != nil {
			c.Close()
			return fail(err)
		}
	}
	return c, nil
}

// hostPort turns OVS's HOST:PORT (an IPv6 host in brackets) into Go's form; OVS's default
// port 6640 applies when none is given.
func hostPort(addr string) string {
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	return net.JoinHostPort(strings.Trim(addr, "[]"), "6640")
}

// MissingTLSError is the failure of an ssl: remote without the key, certificate or CA
// certificate it needs. It reads as the errno OVS reports then ("Protocol not available");
// Missing lists what is missing, in OVS's words ("Private key", "Certificate", "CA
// certificate").
type MissingTLSError struct{ Missing []string }

func (e *MissingTLSError) Error() string { return Strerror(syscall.ENOPROTOOPT) }

func (e *MissingTLSError) Unwrap() error { return syscall.ENOPROTOOPT }

func tlsConfig(f *TLSFiles) (*tls.Config, error) {
	if f == nil {
		f = &TLSFiles{}
	}
	var missing []string
	for _, m := range []struct{ file, what string }{
		{f.PrivateKey, "Private key"}, {f.Certificate, "Certificate"}, {f.CACert, "CA certificate"},
	} {
		if m.file == "" {
			missing = append(missing, m.what)
		}
	}
	if len(missing) > 0 {
		return nil, &MissingTLSError{Missing: missing}
	}
	cert, err := tls.LoadX509KeyPair(f.Certificate, f.PrivateKey)
	if err != nil {
		return nil, err
	}
	pem, err := os.ReadFile(f.CACert)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no certificates", f.CACert)
	}
	// OVS checks the peer's certificate against the CA but not its name.
	return &tls.Config{
		Certificates:       []tls.Certificate{cert},
		RootCAs:            pool,
		InsecureSkipVerify: true,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("peer sent no certificate")
			}
			leaf, err := x509.ParseCertificate(raw[0])
			if err != nil {
				return err
			}
			inter := x509.NewCertPool()
			for _, r := range raw[1:] {
				if c, err := x509.ParseCertificate(r); err == nil {
					inter.AddCert(c)
				}
			}
			_, err = leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
			return err
		},
	}, nil
}

func newConn(nc net.Conn, database string) *Conn {
	c := &Conn{
		nc:       nc,
		database: database,
		enc:      json.NewEncoder(nc),
		pending:  map[int64]chan rpcReply{},
		updates:  make(chan json.RawMessage, 64),
		done:     make(chan struct{}),
	}
	c.enc.SetEscapeHTML(false)
	go c.readLoop()
	return c
}

// Close closes the connection; pending calls fail.
func (c *Conn) Close() error {
	return c.nc.Close()
}

func (c *Conn) readLoop() {
	dec := json.NewDecoder(c.nc)
	var err error
	for {
		var m rpcMessage
		if err = dec.Decode(&m); err != nil {
			break
		}
		switch {
		case m.Method == "echo":
			c.send(rpcMessage{ID: m.ID, Result: m.Params, Error: json.RawMessage("null")})
		case m.Method == "update" || m.Method == "update2" || m.Method == "update3":
			select {
			case c.updates <- m.Params:
			default: // a slow reader only needs the latest state; it re-reads on wake-up
			}
		case m.Method != "":
			// Requests we do not serve are ignored (ovsdb-server sends none other).
		default:
			var id int64
			if json.Unmarshal(m.ID, &id) != nil {
				continue
			}
			c.mu.Lock()
			ch := c.pending[id]
			delete(c.pending, id)
			c.mu.Unlock()
			if ch != nil {
				ch <- rpcReply{Result: m.Result, Error: m.Error}
			}
		}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		err = io.EOF
	}
	c.mu.Lock()
	c.err = err
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	c.mu.Unlock()
	close(c.done)
}

func (c *Conn) send(m rpcMessage) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.enc.Encode(m)
}

// RPCError is an error reply to a JSON-RPC request (not to be confused with the per-operation
// errors inside a successful "transact" reply).
type RPCError struct {
	Method string
	JSON   string
}

func (e *RPCError) Error() string { return fmt.Sprintf("%s: %s", e.Method, e.JSON) }

// Call sends one request and waits for its reply. It returns the raw result.
func (c *Conn) Call(ctx context.Context, method string, params ...any) (json.RawMessage, error) {
	if params == nil {
		params = []any{}
	}
	p, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding parameters: %w", method, err)
	}
	ch := make(chan rpcReply, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", method, c.err)
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	idJSON, _ := json.Marshal(id)
	if err := c.send(rpcMessage{ID: idJSON, Method: method, Params: p}); err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			c.mu.Lock()
			err := c.err
			c.mu.Unlock()
			return nil, fmt.Errorf("%s: connection closed: %w", method, err)
		}
		if len(r.Error) > 0 && string(r.Error) != "null" {
			return nil, &RPCError{Method: method, JSON: string(r.Error)}
		}
		return r.Result, nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, ctx.Err()
	}
}

// Transact runs ops (already in RFC 7047 form) as one transaction on the connection's
// database and returns the raw result array.
func (c *Conn) Transact(ctx context.Context, ops []any) ([]json.RawMessage, error) {
	params := append([]any{c.database}, ops...)
	raw, err := c.Call(ctx, "transact", params...)
	if err != nil {
		return nil, err
	}
	var res []json.RawMessage
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("transact: reply is not an array: %w", err)
	}
	return res, nil
}

// TransactInto runs ops as one transaction and decodes the result array into v (numbers as
// json.Number), in one pass over the reply.
func (c *Conn) TransactInto(ctx context.Context, ops []any, v any) error {
	params := append([]any{c.database}, ops...)
	raw, err := c.Call(ctx, "transact", params...)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("transact: malformed reply: %w", err)
	}
	return nil
}

// checkLeader fails unless the server's copy of the database can take writes: standalone (or
// a server without _Server), or clustered and both connected and the leader.
func (c *Conn) checkLeader(ctx context.Context) error {
	raw, err := c.Call(ctx, "transact", "_Server", map[string]any{
		"op": "select", "table": "Database",
		"where":   []any{[]any{"name", "==", c.database}},
		"columns": []string{"model", "connected", "leader"},
	})
	var rerr *RPCError
	if errors.As(err, &rerr) {
		// A server without the _Server database (an embedded or old server) serves no
		// clustered databases: it can take writes, as OVS's IDL concludes too.
		c.noServerDB = true
		return nil
	}
	if err != nil {
		return err
	}
	var res []struct {
		Rows []struct {
			Model     string `json:"model"`
			Connected bool   `json:"connected"`
			Leader    bool   `json:"leader"`
		} `json:"rows"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || len(res) < 1 {
		return fmt.Errorf("server does not serve database %s", c.database)
	}
	if res[0].Error != "" {
		c.noServerDB = true
		return nil // no _Server database: see above
	}
	if len(res[0].Rows) != 1 {
		return fmt.Errorf("server does not serve database %s", c.database)
	}
	r := res[0].Rows[0]
	if r.Model == "clustered" && (!r.Connected || !r.Leader) {
		return errNotLeader
	}
	return nil
}

// WaitCurCfg blocks until Open_vSwitch.cur_cfg reaches at least next (ovs-vswitchd has applied
// the configuration of a transaction that incremented next_cfg to next), or ctx ends. It
// monitors only that one column.
func (c *Conn) WaitCurCfg(ctx context.Context, next int64) error {
	req := map[string]any{"Open_vSwitch": map[string]any{"columns": []string{"cur_cfg"},
		"select": map[string]bool{"initial": true, "insert": true, "delete": true, "modify": true}}}
	raw, err := c.Call(ctx, "monitor", c.database, "vsctl-cur-cfg", req)
	if err != nil {
		return err
	}
	for {
		if curCfgReached(raw, next) {
			return nil
		}
		select {
		case raw = <-c.updates:
			// "update" params are [monitor-id, table-updates].
			var p []json.RawMessage
			if json.Unmarshal(raw, &p) == nil && len(p) == 2 {
				raw = p[1]
			}
		case <-c.done:
			return fmt.Errorf("waiting for ovs-vswitchd: connection closed: %w", c.err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func curCfgReached(tableUpdates json.RawMessage, next int64) bool {
	var u map[string]map[string]struct {
		New *struct {
			CurCfg int64 `json:"cur_cfg"`
		} `json:"new"`
	}
	if json.Unmarshal(tableUpdates, &u) != nil {
		return false
	}
	for _, row := range u["Open_vSwitch"] {
		if row.New != nil && row.New.CurCfg >= next {
			return true
		}
	}
	return false
}
