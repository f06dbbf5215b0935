package ovsdbtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cenkalti/rpc2"
	"github.com/go-logr/logr"
	"github.com/ovn-kubernetes/libovsdb/database"
	"github.com/ovn-kubernetes/libovsdb/database/inmemory"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	"github.com/ovn-kubernetes/libovsdb/ovsdb/serverdb"
	"github.com/ovn-kubernetes/libovsdb/server"

	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// Names of the databases the Server serves.
const (
	// VswitchDB is the name of the Open_vSwitch database.
	VswitchDB = "Open_vSwitch"
	// ServerDB is the name of ovsdb-server's own _Server database.
	ServerDB = "_Server"
)

// socketName is the file name of the unix socket inside the server's directory.
const socketName = "db.sock"

// ErrClosed is returned by Server methods called after Close.
var ErrClosed = errors.New("ovsdbtest: server closed")

// Config describes a Server. The zero value is usable: it serves the vswitch
// schema and the _Server database on a socket in a fresh private temporary
// directory, with an Open_vSwitch row like the one `ovs-vsctl init` creates
// and ovs-vswitchd 3.1.0 (DPDK build) fills in.
type Config struct {
	// Dir is the directory for the unix socket. Empty means a new private
	// directory from os.MkdirTemp, removed by Close. The socket path must stay
	// under the 107-byte limit of unix socket paths.
	Dir string
	// Logger receives libovsdb's server logs. Nil discards them.
	Logger *slog.Logger
	// OVSVersion is written to Open_vSwitch.ovs_version. Empty means "3.1.0".
	OVSVersion string
	// IfaceTypes is written to Open_vSwitch.iface_types. Nil means
	// simvswitchd.DefaultIfaceTypes().
	IfaceTypes []string
	// DatapathTypes is written to Open_vSwitch.datapath_types. Nil means
	// simvswitchd.DefaultDatapathTypes().
	DatapathTypes []string
	// NoInit skips creating the Open_vSwitch row, leaving the database as
	// ovsdb-tool creates it (before `ovs-vsctl init` or ovs-vswitchd ran).
	NoInit bool
	// NoServerDB leaves out the _Server database, as libovsdb's in-memory
	// server does by default. Clients created WithLeaderOnly(true) then fail
	// to connect (see the package documentation).
	NoServerDB bool
}

// Option changes a Config; Start applies options in order.
type Option func(*Config)

// WithDir places the socket in dir instead of a private temporary directory.
func WithDir(dir string) Option { return func(c *Config) { c.Dir = dir } }

// WithLogger sends libovsdb's server logs to l.
func WithLogger(l *slog.Logger) Option { return func(c *Config) { c.Logger = l } }

// WithIfaceTypes sets the Open_vSwitch.iface_types the server starts with.
func WithIfaceTypes(types ...string) Option {
	return func(c *Config) { c.IfaceTypes = append([]string{}, types...) }
}

// WithDatapathTypes sets the Open_vSwitch.datapath_types the server starts with.
func WithDatapathTypes(types ...string) Option {
	return func(c *Config) { c.DatapathTypes = append([]string{}, types...) }
}

// WithoutInit starts with an empty Open_vSwitch table.
func WithoutInit() Option { return func(c *Config) { c.NoInit = true } }

// WithoutServerDB leaves out the _Server database.
func WithoutServerDB() Option { return func(c *Config) { c.NoServerDB = true } }

// Server is libovsdb's in-memory OVSDB server serving the vswitch schema on a
// unix socket. Its data outlives Stop and Serve, so Restart simulates an
// ovsdb-server restart with a persistent database file. All methods are safe
// for concurrent use.
type Server struct {
	cfg     Config
	dir     string
	ownsDir bool
	sock    string
	db      database.Database
	models  []model.DatabaseModel
	logger  logr.Logger

	mu     sync.Mutex
	gen    *generation // nil while stopped
	closed bool
}

// generation is one libovsdb OvsdbServer instance serving the shared database.
type generation struct {
	srv  *server.OvsdbServer
	done chan struct{} // closed when Serve returns
	err  error         // Serve's result, readable after done is closed

	mu      sync.Mutex
	conns   map[*rpc2.Client]struct{}
	stopped bool
}

// New creates the database, seeds it as described by cfg and starts serving.
// The caller must call Close. ctx bounds only the start-up.
func New(ctx context.Context, cfg Config) (*Server, error) {
	s := &Server{cfg: cfg, logger: logr.Discard()}
	if cfg.Logger != nil {
		s.logger = logr.FromSlogHandler(cfg.Logger.Handler())
	}
	if err := s.prepareDir(); err != nil {
		return nil, err
	}
	if err := s.createDatabases(); err != nil {
		s.removeDir()
		return nil, err
	}
	if err := s.seed(); err != nil {
		s.removeDir()
		return nil, err
	}
	if err := s.Serve(ctx); err != nil {
		s.removeDir()
		return nil, err
	}
	return s, nil
}

// Start is New for tests: it fails t on error and registers Close with
// t.Cleanup, so the server outlives everything the test registers after it.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var cfg Config
	for _, o := range opts {
		o(&cfg)
	}
	s, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("ovsdbtest: start server: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("ovsdbtest: close server: %v", err)
		}
	})
	return s
}

func (s *Server) prepareDir() error {
	if s.cfg.Dir != "" {
		s.dir = s.cfg.Dir
	} else {
		dir, err := os.MkdirTemp("", "ovsdbtest")
		if err != nil {
			return fmt.Errorf("ovsdbtest: create socket directory: %w", err)
		}
		s.dir, s.ownsDir = dir, true
	}
	s.sock = filepath.Join(s.dir, socketName)
	if len(s.sock) > 107 {
		s.removeDir()
		return fmt.Errorf("ovsdbtest: socket path %q is longer than 107 bytes", s.sock)
	}
	return nil
}

func (s *Server) removeDir() {
	if s.ownsDir {
		_ = os.RemoveAll(s.dir)
	}
}

// createDatabases builds the in-memory database holding the vswitch schema
// and, unless disabled, the _Server schema.
func (s *Server) createDatabases() error {
	clientModels := map[string]model.ClientDBModel{}
	schemas := map[string]ovsdb.DatabaseSchema{VswitchDB: vswitch.Schema()}
	vs, err := vswitch.FullDatabaseModel()
	if err != nil {
		return fmt.Errorf("ovsdbtest: vswitch model: %w", err)
	}
	clientModels[VswitchDB] = vs
	if !s.cfg.NoServerDB {
		sm, err := serverdb.FullDatabaseModel()
		if err != nil {
			return fmt.Errorf("ovsdbtest: _Server model: %w", err)
		}
		clientModels[ServerDB] = sm
		schemas[ServerDB] = serverdb.Schema()
	}
	for name, schema := range schemas {
		dbModel, errs := model.NewDatabaseModel(schema, clientModels[name])
		if len(errs) > 0 {
			return fmt.Errorf("ovsdbtest: database model %s: %w", name, errors.Join(errs...))
		}
		s.models = append(s.models, dbModel)
	}
	l := s.logger.WithName("inmemory")
	s.db = persistentDatabase{inmemory.NewDatabase(clientModels, &l)}
	for _, m := range s.models {
		if err := s.db.CreateDatabase(m.Schema.Name, m.Schema); err != nil {
			return fmt.Errorf("ovsdbtest: create database %s: %w", m.Schema.Name, err)
		}
	}
	return nil
}

// Endpoint returns the OVSDB connection string, "unix:" followed by Sock().
func (s *Server) Endpoint() string { return "unix:" + s.sock }

// Sock returns the path of the unix socket. It stays the same across Restart.
func (s *Server) Sock() string { return s.sock }

// Serve starts serving on Sock() after Stop; it is a no-op while serving.
// The database content is the one Stop left behind.
func (s *Server) Serve(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ovsdbtest: serve %s: %w", s.sock, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.gen != nil {
		return nil
	}
	g, err := s.startGeneration()
	if err != nil {
		return err
	}
	s.gen = g
	return nil
}

func (s *Server) startGeneration() (*generation, error) {
	srv, err := server.NewOvsdbServer(s.db, &s.logger, s.models...)
	if err != nil {
		return nil, fmt.Errorf("ovsdbtest: create server on %s: %w", s.sock, err)
	}
	g := &generation{srv: srv, done: make(chan struct{}), conns: map[*rpc2.Client]struct{}{}}
	srv.OnConnect(g.track)
	srv.OnDisConnect(g.untrack)
	go func() {
		g.err = srv.Serve("unix", s.sock)
		close(g.done)
	}()
	// Serve sets Ready once it listens; until then Close must not be called
	// (libovsdb reads its listener field without synchronisation).
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !srv.Ready() {
		select {
		case <-g.done:
			return nil, fmt.Errorf("ovsdbtest: serve on %s: %w", s.sock, g.err)
		case <-tick.C:
		}
	}
	return g, nil
}

// track records a new connection, or closes it if the generation stopped.
func (g *generation) track(c *rpc2.Client) {
	g.mu.Lock()
	stopped := g.stopped
	if !stopped {
		g.conns[c] = struct{}{}
	}
	g.mu.Unlock()
	if stopped {
		_ = c.Close()
	}
}

func (g *generation) untrack(c *rpc2.Client) {
	g.mu.Lock()
	delete(g.conns, c)
	g.mu.Unlock()
}

// stop closes the listener (which removes the socket file) and every
// connection, so clients see a disconnect as with a real server restart.
func (g *generation) stop() {
	g.mu.Lock()
	g.stopped = true
	conns := make([]*rpc2.Client, 0, len(g.conns))
	for c := range g.conns {
		conns = append(conns, c)
	}
	g.mu.Unlock()
	g.srv.Close()
	<-g.done
	for _, c := range conns {
		_ = c.Close()
	}
}

// Stop stops serving and drops every client connection, keeping the data.
// Clients reconnecting before Serve fail to connect. Stop is idempotent.
// (A connection accepted just before Stop is closed asynchronously, as soon
// as libovsdb reports it.)
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != nil {
		s.gen.stop()
		s.gen = nil
	}
}

// Restart stops serving and serves again on the same socket with the same
// data, like restarting ovsdb-server; connected clients are disconnected and
// must reconnect. It fails t on error.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	if err := s.Serve(context.Background()); err != nil {
		t.Fatalf("ovsdbtest: restart server: %v", err)
	}
}

// Close stops serving and removes the socket directory if New created it.
// The Server cannot be used afterwards. Close is idempotent.
func (s *Server) Close() error {
	s.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.ownsDir {
		if err := os.RemoveAll(s.dir); err != nil {
			return fmt.Errorf("ovsdbtest: remove %s: %w", s.dir, err)
		}
	}
	return nil
}
