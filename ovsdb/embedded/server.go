package embedded

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/ovn-kubernetes/libovsdb/database"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
)

// server speaks OVSDB's JSON-RPC protocol (RFC 7047 and ovsdb-server's
// extensions: monitor_cond, monitor_cond_since) on a listener, for the one
// database of a store. It uses libovsdb's database engine but not its
// server, whose protocol handling OVS's own clients cannot use (see
// monitor.go and txn.go). Databases other than Open_vSwitch, _Server
// included, are answered as ovsdb-server answers an unknown database: an
// "unknown database" error, which OVS's IDL and package dbcmd take to mean
// a standalone server.
type server struct {
	store  *store
	logger *slog.Logger

	mu      sync.Mutex // serializes transactions, commits and monitor changes
	conns   map[*conn]struct{}
	locks   map[string]*lockState
	changed chan struct{} // closed and replaced by every commit
	closed  bool

	wg sync.WaitGroup
	ln net.Listener
}

// outQueue bounds the messages waiting to be written to one client; a
// client that falls this far behind is disconnected (it reconnects and
// resynchronises), so a stuck client cannot hold up commits.
const outQueue = 4096

func newServer(st *store, logger *slog.Logger) *server {
	return &server{store: st, logger: logger, conns: map[*conn]struct{}{},
		locks: map[string]*lockState{}, changed: make(chan struct{})}
}

// serve accepts connections on ln until close.
func (s *server) serve(ln net.Listener) {
	s.ln = ln
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				nc.Close()
				return
			}
			ctx, cancel := context.WithCancel(context.Background())
			c := &conn{s: s, nc: nc, out: make(chan []byte, outQueue), done: make(chan struct{}),
				ctx: ctx, cancel: cancel, monitors: map[string]*monitor{}, pending: map[string]context.CancelCauseFunc{}}
			s.conns[c] = struct{}{}
			s.mu.Unlock()
			s.wg.Add(2)
			go c.writeLoop()
			go c.readLoop()
		}
	}()
}

// close stops accepting, disconnects every client and waits for the
// connections' goroutines.
func (s *server) close() {
	s.mu.Lock()
	s.closed = true
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	if s.ln != nil {
		_ = s.ln.Close()
	}
	for _, c := range conns {
		_ = c.nc.Close()
	}
	s.wg.Wait()
}

// commit makes update durable and current, then queues the monitors'
// updates. The caller holds s.mu.
func (s *server) commit(update database.Update, comments []string) error {
	if err := s.store.commitTxn(update, comments); err != nil {
		return err
	}
	close(s.changed)
	s.changed = make(chan struct{})
	changes, err := s.changes(update)
	if err != nil {
		// The change is committed; monitors cannot be told what it was.
		s.logger.Error("cannot compute monitor updates; disconnecting monitoring clients", "err", err)
		for c := range s.conns {
			if len(c.monitors) > 0 {
				_ = c.nc.Close()
			}
		}
		return nil
	}
	for c := range s.conns {
		for _, m := range c.monitors {
			tu := m.updates(changes)
			if tu == nil {
				continue
			}
			switch m.version {
			case monitorV1:
				c.notify("update", m.id, tu)
			case monitorV2:
				c.notify("update2", m.id, tu)
			default:
				c.notify("update3", m.id, datum.ZeroUUID, tu)
			}
		}
	}
	return nil
}

// lockState is one OVSDB lock (RFC 7047 4.1.8-4.1.10).
type lockState struct {
	owner   *conn
	waiters []*conn
}

// conn is one client connection.
type conn struct {
	s      *server
	nc     net.Conn
	out    chan []byte
	done   chan struct{} // closed when the reader has finished
	ctx    context.Context
	cancel context.CancelFunc

	monitors map[string]*monitor // by id as compact JSON; under s.mu

	pmu     sync.Mutex
	pending map[string]context.CancelCauseFunc // parked transactions by request id
}

// message is a JSON-RPC message in either direction.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
}

// rpcErr is a JSON-RPC error value.
type rpcErr struct{ v any }

var errCanceled = errors.New("canceled")

func (c *conn) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		c.s.logger.Error("cannot encode a reply", "err", err)
		_ = c.nc.Close()
		return
	}
	select {
	case c.out <- b:
	case <-c.done:
	default:
		c.s.logger.Warn("OVSDB client too slow; disconnecting", "remote", c.nc.RemoteAddr().String())
		_ = c.nc.Close()
	}
}

func (c *conn) reply(id json.RawMessage, result any, err *rpcErr) {
	if err != nil {
		c.send(map[string]any{"id": id, "result": nil, "error": err.v})
		return
	}
	c.send(map[string]any{"id": id, "result": result, "error": nil})
}

func (c *conn) notify(method string, params ...any) {
	c.send(map[string]any{"id": nil, "method": method, "params": params})
}

func (c *conn) writeLoop() {
	defer c.s.wg.Done()
	for {
		select {
		case b := <-c.out:
			if _, err := c.nc.Write(b); err != nil {
				_ = c.nc.Close()
				return
			}
		case <-c.done:
			return
		}
	}
}

func (c *conn) readLoop() {
	defer c.s.wg.Done()
	defer c.cleanup()
	dec := json.NewDecoder(c.nc)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return
		}
		raw, why := screen(raw)
		if why != "" {
			// As ovsdb-server: no answer, the session is dropped (see text.go).
			c.s.logger.Warn("OVSDB client sent a string ovsdb-server cannot parse; connection dropped (Protocol error)",
				"remote", c.nc.RemoteAddr().String(), "error", why)
			return
		}
		var m message
		if err := json.Unmarshal(raw, &m); err != nil {
			return
		}
		if m.Method == "" {
			continue // a reply: the server sends no requests
		}
		c.handle(m)
	}
}

// cleanup forgets the connection: its monitors, locks and parked
// transactions.
func (c *conn) cleanup() {
	c.cancel()
	s := c.s
	s.mu.Lock()
	delete(s.conns, c)
	for name := range s.locks {
		s.unlock(c, name)
	}
	c.monitors = nil
	close(c.done)
	s.mu.Unlock()
	_ = c.nc.Close()
}

func (c *conn) handle(m message) {
	var params []json.RawMessage
	if len(m.Params) > 0 && json.Unmarshal(m.Params, &params) != nil {
		c.reply(m.ID, nil, &rpcErr{"invalid params"})
		return
	}
	isNotification := len(m.ID) == 0 || string(m.ID) == "null"
	switch m.Method {
	case "echo":
		if params == nil {
			params = []json.RawMessage{}
		}
		c.reply(m.ID, params, nil)
	case "list_dbs":
		c.reply(m.ID, []string{vswitchDB}, nil)
	case "get_schema":
		if err := c.checkDB(m, params); err != nil {
			c.reply(m.ID, nil, err)
			return
		}
		c.reply(m.ID, json.RawMessage(c.s.store.schema), nil)
	case "transact":
		c.transact(m, params)
	case "cancel":
		if len(params) == 1 {
			c.pmu.Lock()
			cancel := c.pending[compact(params[0])]
			c.pmu.Unlock()
			if cancel != nil {
				cancel(errCanceled)
			}
		}
	case "monitor", "monitor_cond", "monitor_cond_since":
		c.monitor(m, params)
	case "monitor_cancel":
		c.s.mu.Lock()
		var key string
		if len(params) == 1 {
			key = compact(params[0])
		}
		_, ok := c.monitors[key]
		delete(c.monitors, key)
		c.s.mu.Unlock()
		if !ok {
			c.reply(m.ID, nil, &rpcErr{"unknown monitor"})
			return
		}
		c.reply(m.ID, map[string]any{}, nil)
	case "lock", "steal", "unlock":
		c.lock(m, params)
	case "set_db_change_aware":
		c.reply(m.ID, map[string]any{}, nil)
	default:
		if !isNotification {
			c.reply(m.ID, nil, &rpcErr{"unknown method"})
		}
	}
}

// checkDB answers an unknown database as ovsdb-server does.
func (c *conn) checkDB(m message, params []json.RawMessage) *rpcErr {
	var db string
	if len(params) > 0 {
		_ = json.Unmarshal(params[0], &db)
	}
	if db == vswitchDB {
		return nil
	}
	return &rpcErr{map[string]any{"error": "unknown database", "syntax": string(m.Params),
		"details": fmt.Sprintf("%s request specifies unknown database %s", m.Method, db)}}
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// transact executes a transaction; one that waits for a condition is parked
// and retried after every commit, while the connection goes on with its
// other requests (as ovsdb-server's triggers do).
func (c *conn) transact(m message, params []json.RawMessage) {
	if err := c.checkDB(m, params); err != nil {
		c.reply(m.ID, nil, err)
		return
	}
	start := time.Now()
	c.s.mu.Lock()
	out := c.s.execute(c, params[1:], start)
	c.s.mu.Unlock()
	if !out.retry {
		c.reply(m.ID, out.results, nil)
		return
	}
	key := compact(m.ID)
	ctx, cancel := context.WithCancelCause(c.ctx)
	c.pmu.Lock()
	c.pending[key] = cancel
	c.pmu.Unlock()
	c.s.wg.Add(1)
	go func() {
		defer c.s.wg.Done()
		defer func() {
			c.pmu.Lock()
			delete(c.pending, key)
			c.pmu.Unlock()
			cancel(nil)
		}()
		for out.retry {
			if !c.park(ctx, out) {
				if errors.Is(context.Cause(ctx), errCanceled) {
					c.reply(m.ID, nil, &rpcErr{"canceled"})
				}
				return
			}
			c.s.mu.Lock()
			out = c.s.execute(c, params[1:], start)
			c.s.mu.Unlock()
		}
		c.reply(m.ID, out.results, nil)
	}()
}

// monitor starts a monitor and replies with its initial rows.
func (c *conn) monitor(m message, params []json.RawMessage) {
	if err := c.checkDB(m, params); err != nil {
		c.reply(m.ID, nil, err)
		return
	}
	if len(params) < 3 {
		c.reply(m.ID, nil, &rpcErr{"invalid params"})
		return
	}
	version := map[string]int{"monitor": monitorV1, "monitor_cond": monitorV2, "monitor_cond_since": monitorV3}[m.Method]
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	key := compact(params[1])
	if _, dup := c.monitors[key]; dup {
		c.reply(m.ID, nil, &rpcErr{"duplicate monitor ID"})
		return
	}
	mon, err := s.parseMonitor(version, json.RawMessage(key), params[2])
	if err != nil {
		c.reply(m.ID, nil, &rpcErr{map[string]any{"error": "syntax error", "details": err.Error()}})
		return
	}
	initial, err := s.initial(mon)
	if err != nil {
		c.reply(m.ID, nil, &rpcErr{map[string]any{"error": "internal error", "details": err.Error()}})
		return
	}
	if c.monitors == nil { // disconnected meanwhile
		return
	}
	c.monitors[key] = mon
	if version == monitorV3 {
		// A standalone database keeps no transaction history: never found.
		c.reply(m.ID, []any{false, datum.ZeroUUID, initial}, nil)
		return
	}
	c.reply(m.ID, initial, nil)
}

// lock handles lock, steal and unlock.
func (c *conn) lock(m message, params []json.RawMessage) {
	var name string
	if len(params) != 1 || json.Unmarshal(params[0], &name) != nil {
		c.reply(m.ID, nil, &rpcErr{"invalid params"})
		return
	}
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.locks[name]
	if l == nil {
		l = &lockState{}
		s.locks[name] = l
	}
	switch m.Method {
	case "unlock":
		s.unlock(c, name)
		c.reply(m.ID, map[string]any{}, nil)
	case "steal":
		if l.owner != nil && l.owner != c {
			l.owner.notify("stolen", name)
			l.waiters = append(l.waiters, l.owner)
		}
		l.waiters = without(l.waiters, c)
		l.owner = c
		c.reply(m.ID, map[string]any{"locked": true}, nil)
	default:
		if l.owner == c || contains(l.waiters, c) {
			c.reply(m.ID, nil, &rpcErr{"duplicate lock"})
			return
		}
		if l.owner == nil {
			l.owner = c
			c.reply(m.ID, map[string]any{"locked": true}, nil)
			return
		}
		l.waiters = append(l.waiters, c)
		c.reply(m.ID, map[string]any{"locked": false}, nil)
	}
}

// unlock drops c's ownership of (or wait for) lock name and hands it to the
// next waiter. The caller holds s.mu.
func (s *server) unlock(c *conn, name string) {
	l := s.locks[name]
	if l == nil {
		return
	}
	l.waiters = without(l.waiters, c)
	if l.owner == c {
		l.owner = nil
		if len(l.waiters) > 0 {
			l.owner, l.waiters = l.waiters[0], l.waiters[1:]
			l.owner.notify("locked", name)
		}
	}
	if l.owner == nil && len(l.waiters) == 0 {
		delete(s.locks, name)
	}
}

func without(list []*conn, c *conn) []*conn {
	out := list[:0]
	for _, x := range list {
		if x != c {
			out = append(out, x)
		}
	}
	return out
}

func contains(list []*conn, c *conn) bool {
	for _, x := range list {
		if x == c {
			return true
		}
	}
	return false
}

// park waits for the next commit or the deadline of a parked transaction;
// false when ctx ended first.
func (c *conn) park(ctx context.Context, out outcome) bool {
	var timer <-chan time.Time
	if !out.deadline.IsZero() {
		t := time.NewTimer(time.Until(out.deadline))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-ctx.Done():
		return false
	case <-out.changed:
	case <-timer:
	}
	return true
}
