package apiserver

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	"github.com/ovsplane/ovsplane/api/gen/ovsplane/v1/ovsplanev1connect"
	"github.com/ovsplane/ovsplane/model"
)

// Backend is what the server needs from the daemon core. Its methods' errors wrap the
// vswitchd sentinel errors (ErrInvalid, ErrNotFound, ErrConflict, ErrUnavailable) and name the
// object they are about.
type Backend interface {
	// ApplyBridge sets a bridge's desired state (b.Ports must be empty: ports are separate
	// objects) and returns once ovs-vswitchd applied it.
	ApplyBridge(ctx context.Context, b model.Bridge) (model.BridgeInfo, error)
	// DeleteBridge deletes a bridge and its ports.
	DeleteBridge(ctx context.Context, name string) error
	// Bridge returns one managed bridge, or an error wrapping model.ErrNotFound.
	Bridge(name string) (model.BridgeInfo, error)
	// Bridges returns every managed bridge, sorted by name.
	Bridges() []model.BridgeInfo
	// ApplyPort sets a port's desired state on bridge, batched with concurrent callers, and
	// returns once ovs-vswitchd applied it. An interface ovs-vswitchd refused is not an error:
	// the returned PortInfo.Status.State is model.StateError with the message.
	ApplyPort(ctx context.Context, bridge string, p model.Port) (model.PortInfo, error)
	// DeletePort deletes a port and its interfaces.
	DeletePort(ctx context.Context, name string) error
	// Port returns one managed port, or an error wrapping model.ErrNotFound.
	Port(name string) (model.PortInfo, error)
	// Ports returns the managed ports of bridge ("" for all), sorted by name.
	Ports(bridge string) []model.PortInfo
	// Status returns the status of every managed object.
	Status() []model.Status
	// WatchedStatuses returns the watcher plugins' statuses of the interfaces they watch
	// (managed or not), sorted by plugin then interface. It calls no plugin: the daemon keeps
	// them in memory from the plugins' answers.
	WatchedStatuses() []model.WatchedStatus
	// Subscribe returns the status of every object and a channel of later changes (removed
	// objects with an empty State). The channel is closed when ctx ends or when the subscriber
	// fell too far behind.
	Subscribe(ctx context.Context) (snapshot []model.Status, changes <-chan []model.Status)
	// WaitReady returns when every object named by keys ("port/vhu1") is ready, or an error
	// when one goes to the error state or ctx ends.
	WaitReady(ctx context.Context, keys []string) ([]model.Status, error)
	// Reload re-reads the config file; an invalid one is rejected whole and the running state
	// stays.
	Reload(ctx context.Context) error
	// Health returns the daemon's health.
	Health(ctx context.Context) model.Health
	// Plugins returns every configured plugin as the plugin host sees it, sorted by name
	// (empty without plugins). It calls no plugin: it reads the host's last known state.
	Plugins() []model.PluginInfo
	// PluginStats returns the data-path jobs of a configured plugin with their state and
	// latest stats sample, sorted by name; an error wrapping model.ErrNotFound for a plugin
	// the configuration does not list. It calls no plugin.
	PluginStats(plugin string) ([]model.JobInfo, error)
}

// APIVersion is the API package the server serves, reported by Health.
const APIVersion = "ovsplane.v1"

// DefaultMaxRequestBytes bounds a request message unless Options say otherwise.
const DefaultMaxRequestBytes = 4 << 20

// DefaultShutdownTimeout is how long Serve waits for calls in flight when its context ends.
const DefaultShutdownTimeout = 5 * time.Second

// Options tune a Server. The zero value is usable.
type Options struct {
	// Logger receives one line per listener and per shutdown, and a debug line per failed
	// call. Default: a logger that discards.
	Logger *slog.Logger
	// MaxRequestBytes bounds a request message (larger ones get ResourceExhausted).
	// Default DefaultMaxRequestBytes.
	MaxRequestBytes int
	// ShutdownTimeout bounds the graceful part of Serve's shutdown. Default
	// DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// OnListen, if set, is called by Serve with each address once it listens ("unix:PATH",
	// "tcp:HOST:PORT" with the actual port when the configured one was 0).
	OnListen func(addr string)
	// Audit receives one line per write call and per refused call (see Server.audit for the
	// format). Default: Logger with the attribute log=audit.
	Audit *slog.Logger
	// Unidentified is the role of a call that carries no peer identity: one made through
	// ServeHTTP by the program itself rather than through Serve's listeners, which identify
	// every caller. Default RoleNone: such calls are refused.
	Unidentified Role
	// ReadHeaderTimeout bounds reading a request's headers. Default DefaultReadHeaderTimeout.
	ReadHeaderTimeout time.Duration
	// BodyTimeout bounds reading a request's body, from the end of its headers to its last
	// byte; a client that sends it slower loses its connection. Streams that stay open after
	// their request (Watch) are not affected. Default DefaultBodyTimeout.
	BodyTimeout time.Duration
	// IdleTimeout closes a connection that has no call for that long. Default
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers. Default DefaultMaxHeaderBytes.
	MaxHeaderBytes int
	// Overlay, when not nil, serves the read-only overlay view under OverlayPrefix (GET
	// only; see vswitchd/overlayapi), behind the same roles, audit and limits: its paths are
	// reads (IsWrite).
	Overlay http.Handler
	// Flowmon, when not nil, serves the read-only flowmon view under FlowmonPrefix (GET only;
	// see vswitchd/flowmonapi), behind the same roles, audit and limits.
	Flowmon http.Handler
}

// Defaults of Options' HTTP limits.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultBodyTimeout       = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxHeaderBytes    = 64 << 10
)

// Server is the API's HTTP handler and listener owner. Create it with New. Its handler is
// safe for concurrent use; Serve may be called once.
type Server struct {
	b       Backend
	log     *slog.Logger
	opts    Options
	handler http.Handler
	// policy maps callers to roles; Serve sets it before it listens.
	policy atomic.Pointer[policy]

	// stopping is closed when Serve's shutdown starts: streams and waits end on it.
	stopping chan struct{}
	stopOnce sync.Once
}

// CompressMinBytes is the smallest response the API compresses for a client that accepts it.
const CompressMinBytes = 4 << 10

// New returns a Server for b. It does not listen: use it as an http.Handler, or call Serve.
func New(b Backend, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	if opts.Audit == nil {
		opts.Audit = opts.Logger.With("log", "audit")
	}
	defaultDuration(&opts.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	defaultDuration(&opts.BodyTimeout, DefaultBodyTimeout)
	defaultDuration(&opts.IdleTimeout, DefaultIdleTimeout)
	if opts.MaxHeaderBytes <= 0 {
		opts.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	s := &Server{b: b, log: opts.Logger, opts: opts, stopping: make(chan struct{})}
	path, h := ovsplanev1connect.NewSwitchServiceHandler(&service{s: s},
		connect.WithReadMaxBytes(opts.MaxRequestBytes),
		// A response smaller than this goes uncompressed even to a client that accepts gzip:
		// compressing the typical answer (one port, a few hundred bytes) costs both sides more
		// CPU per call than the bytes it saves on a local socket.
		connect.WithCompressMinBytes(CompressMinBytes),
		connect.WithInterceptors(authInterceptor{s: s}, logInterceptor{log: s.log}),
	)
	mux := http.NewServeMux()
	mux.Handle(path, h)
	if opts.Overlay != nil {
		mux.Handle(OverlayPrefix, opts.Overlay)
	}
	if opts.Flowmon != nil {
		mux.Handle(FlowmonPrefix, opts.Flowmon)
	}
	s.handler = s.authorizeHTTP(mux)
	return s
}

// ServeHTTP serves the API's calls (paths /ovsplane.v1.SwitchService/METHOD) in process.
// Such calls carry no peer identity: they get Options.Unidentified's role (by default none,
// so they are refused). Serve's listeners identify their callers and enforce roles.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

func defaultDuration(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

// stop ends streams and waits in flight; idempotent.
func (s *Server) stop() { s.stopOnce.Do(func() { close(s.stopping) }) }

// untilStop returns ctx, also canceled when the server stops.
func (s *Server) untilStop(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-s.stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// service implements the generated handler interface on top of the Backend.
type service struct{ s *Server }

var _ ovsplanev1connect.SwitchServiceHandler = (*service)(nil)

func required(field, value string) error {
	if strings.TrimSpace(value) == "" {
		return connect.NewError(connect.CodeInvalidArgument, errors.New(field+" is required"))
	}
	return nil
}
