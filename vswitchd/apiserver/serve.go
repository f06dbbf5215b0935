package apiserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/vswitchd/config"
)

// listener is one open API listener.
type listener struct {
	addr string // as configured, or with the actual port
	ln   net.Listener
	path string // unix socket path, "" for tcp
	srv  *http.Server
}

// Serve listens on every address of cfg.Listen (see config.API) and serves the API until ctx
// ends, identifying every caller (unix: SO_PEERCRED and SO_PEERGROUPS; tcp: the verified client
// certificate) and giving it the role cfg.Auth maps it to (see config.Auth); it then shuts
// down: then shuts down: streams (Watch) end cleanly, waits (WaitReady) end with Unavailable,
// calls in flight get Options.ShutdownTimeout to finish, and unix socket files are removed.
// It returns nil after a shutdown caused by ctx, or the first error: an address that cannot
// be listened on (nothing is served then; the error names the key and the fix), or a listener
// that failed while serving. Serve may be called once per Server.
func (s *Server) Serve(ctx context.Context, cfg config.API) error {
	pol, err := newPolicy(cfg, os.Geteuid())
	if err != nil {
		return err
	}
	s.policy.Store(pol)
	lns, err := s.listenAll(cfg)
	if err != nil {
		return err
	}
	errc := make(chan error, len(lns))
	for _, l := range lns {
		go func() {
			err := l.srv.Serve(l.ln)
			if !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("api: serving %s: %w", l.addr, err)
			}
		}()
		s.log.Info("API listening", "address", l.addr)
		if s.opts.OnListen != nil {
			s.opts.OnListen(l.addr)
		}
	}
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	s.shutdown(context.WithoutCancel(ctx), lns)
	return err
}

// shutdown stops the listeners: streams and waits are told to end, then each server gets the
// shutdown timeout to finish its calls before its connections are closed.
func (s *Server) shutdown(ctx context.Context, lns []*listener) {
	s.stop()
	ctx, cancel := context.WithTimeout(ctx, s.opts.ShutdownTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, l := range lns {
		wg.Go(func() {
			if err := l.srv.Shutdown(ctx); err != nil {
				s.log.Warn("API listener did not stop in time; closing its connections", "address", l.addr, "error", err)
				_ = l.srv.Close()
			}
			if l.path != "" {
				if err := os.Remove(l.path); err != nil && !errors.Is(err, os.ErrNotExist) {
					s.log.Warn("cannot remove API socket", "path", l.path, "error", err)
				}
			}
		})
	}
	wg.Wait()
	s.log.Info("API stopped")
}

// listenAll opens every configured address, or none: on an error it closes those it opened.
func (s *Server) listenAll(cfg config.API) (lns []*listener, err error) {
	defer func() {
		if err != nil {
			for _, l := range lns {
				_ = l.ln.Close()
			}
		}
	}()
	if len(cfg.Listen) == 0 {
		return nil, errors.New("api.listen: no address to listen on (the daemon's default is " +
			model.DefaultAPIAddr() + ")")
	}
	for i, addr := range cfg.Listen {
		key := fmt.Sprintf("api.listen[%d]", i)
		kind, rest, _ := strings.Cut(addr, ":")
		var l *listener
		switch kind {
		case "unix":
			l, err = s.listenUnix(key, rest, cfg)
		case "tcp":
			l, err = s.listenTLS(key, rest, cfg.TLS)
		default:
			err = fmt.Errorf("%s: %q must start with \"unix:\" or \"tcp:\"", key, addr)
		}
		if err != nil {
			return lns, err
		}
		lns = append(lns, l)
	}
	return lns, nil
}

func (s *Server) httpServer(protocols *http.Protocols) *http.Server {
	return &http.Server{
		Handler:           s.guard(),
		Protocols:         protocols,
		ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    s.opts.MaxHeaderBytes,
		ConnContext:       connContext,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// guard wraps the API handler for Serve's listeners: it identifies a TCP caller by its
// verified certificate (unix callers are identified per connection, by connContext) and
// bounds the time to read each request's body (Options.BodyTimeout, see LimitBody).
func (s *Server) guard() http.Handler {
	h := LimitBody(s.handler, s.opts.BodyTimeout)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil {
			r = r.WithContext(withPeer(r.Context(), tlsPeer(r.TLS)))
		}
		h.ServeHTTP(w, r)
	})
}

// LimitBody returns h with a deadline on reading each request's body: a body that has not
// arrived timeout after the handler started fails to read, and its connection is closed (a
// client sending one byte at a time no longer holds it). The deadline is cleared once the
// body has been read to its end, so that a response that takes longer — a stream (Watch), a
// wait (WaitReady), a profile — is not cut; http.Server.ReadTimeout would cut those.
// Requests without a body are not affected.
func LimitBody(h http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		body := &deadlineBody{ReadCloser: r.Body, rc: http.NewResponseController(w)}
		if err := body.rc.SetReadDeadline(time.Now().Add(timeout)); err == nil {
			r.Body = body
		}
		h.ServeHTTP(w, r)
		body.release(false)
	})
}

// deadlineBody is a request body read under a deadline, which it clears once the body has
// been read to its end, so that a stream or a wait answered later is not cut.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	mu   sync.Mutex
	done bool // the deadline was cleared, or the handler returned: no more deadline changes
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		b.release(true)
	}
	return n, err
}

// release ends the body's hold on the read deadline, clearing it if clear is set; only the
// first call does anything (a ResponseController must not be used once its handler returned).
func (b *deadlineBody) release(clear bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	b.done = true
	if clear {
		_ = b.rc.SetReadDeadline(time.Time{})
	}
}

// listenUnix creates the socket at path with the configured mode and group, replacing a
// stale socket file (one nobody accepts on) but nothing else.
func (s *Server) listenUnix(key, path string, cfg config.API) (*listener, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("%s: %q needs an absolute socket path (unix:/var/lib/ovsplane/ovsplaned.sock)", key, path)
	}
	mode, err := socketMode(cfg.SocketMode)
	if err != nil {
		return nil, err
	}
	gid, err := socketGroup(cfg.SocketGroup)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("%s: creating the socket's directory: %w", key, err)
	}
	if gid >= 0 {
		if err := s.reachableByGroup(filepath.Dir(path), gid); err != nil {
			return nil, err
		}
	}
	if err := removeStale(key, path); err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	if err := os.Chmod(path, mode); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("api.socket_mode: applying %#o to %s: %w", mode, path, err)
	}
	if gid >= 0 {
		if err := os.Chown(path, -1, gid); err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("api.socket_group: giving %s to group %s: %w", path, cfg.SocketGroup, err)
		}
	}
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true) // gRPC without TLS
	return &listener{addr: "unix:" + path, ln: ln, path: path, srv: s.httpServer(&p)}, nil
}

func removeStale(key, path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("%s: %s exists and is not a socket; move it away or listen elsewhere", key, path)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		_ = c.Close()
		return fmt.Errorf("%s: %s is in use (is another ovsplaned running?); stop it or listen elsewhere", key, path)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("%s: removing the stale socket: %w", key, err)
	}
	return nil
}

// socketMode parses api.socket_mode; empty means config.DefaultSocketMode.
func socketMode(s string) (os.FileMode, error) {
	if s == "" {
		s = config.DefaultSocketMode
	}
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m > 0o777 {
		return 0, fmt.Errorf("api.socket_mode: %q is not an octal file mode (like \"0660\")", s)
	}
	return os.FileMode(m), nil
}

// socketGroup resolves api.socket_group: a group name or a numeric gid; -1 when empty.
func socketGroup(g string) (int, error) {
	if g == "" {
		return -1, nil
	}
	if gid, err := strconv.Atoi(g); err == nil {
		if gid < 0 {
			return 0, fmt.Errorf("api.socket_group: %q is not a valid gid", g)
		}
		return gid, nil
	}
	gid, err := lookupGroup(g)
	if err != nil {
		return 0, fmt.Errorf("api.socket_group: %w", err)
	}
	return gid, nil
}

// lookupGroup resolves a group name to its gid.
func lookupGroup(name string) (int, error) {
	grp, err := user.LookupGroup(name)
	if err != nil {
		var unknown user.UnknownGroupError
		if errors.As(err, &unknown) {
			return 0, fmt.Errorf("group %q does not exist (create it with groupadd, or give an existing group or a numeric gid)", name)
		}
		return 0, fmt.Errorf("looking up group %q: %w", name, err)
	}
	gid, err := strconv.Atoi(grp.Gid)
	if err != nil {
		return 0, fmt.Errorf("group %q has a non-numeric gid %q", name, grp.Gid)
	}
	return gid, nil
}

// reachableByGroup lets members of gid (api.socket_group) reach a socket in dir. A directory
// others may search, or that gid may search already, is left alone. Otherwise — the default
// data dir is 0750 root:root — the daemon gives dir to gid with search permission only (g=x:
// no listing, no writing), which needs the daemon to own dir. Ancestors are not changed; one
// the group cannot search is logged.
func (s *Server) reachableByGroup(dir string, gid int) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("api.socket_group: %w", err)
	}
	if !searchable(fi, gid) {
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || int(st.Uid) != os.Geteuid() {
			return fmt.Errorf("api.socket_group: the socket's directory %s (mode %#o) does not let group %d reach the socket, and ovsplaned does not own it: run chgrp %d %s && chmod g+x %s, or listen elsewhere (api.listen)",
				dir, fi.Mode().Perm(), gid, gid, dir, dir)
		}
		if err := os.Chown(dir, -1, gid); err != nil {
			return fmt.Errorf("api.socket_group: giving the socket's directory %s to group %d: %w", dir, gid, err)
		}
		mode := fi.Mode()&(os.ModeSetgid|os.ModeSticky) | fi.Mode().Perm()&^0o070 | 0o010
		if err := os.Chmod(dir, mode); err != nil {
			return fmt.Errorf("api.socket_group: letting group %d search %s: %w", gid, dir, err)
		}
		s.log.Info("API socket directory given to api.socket_group, search permission only", "dir", dir, "gid", gid, "mode", fmt.Sprintf("%#o", mode.Perm()))
	}
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && !searchable(fi, gid) {
			s.log.Warn("members of api.socket_group cannot reach the API socket: a parent directory is closed to them", "dir", d, "gid", gid, "mode", fmt.Sprintf("%#o", fi.Mode().Perm()))
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// searchable reports whether members of gid may search the directory fi describes.
func searchable(fi os.FileInfo, gid int) bool {
	perm := fi.Mode().Perm()
	if perm&0o001 != 0 {
		return true
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Gid) == gid && perm&0o010 != 0
}

// listenTLS listens on a tcp: address; the API is served over TCP with TLS only.
func (s *Server) listenTLS(key, hostport string, t model.TLS) (*listener, error) {
	tc, err := serverTLSConfig(key, t)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", hostport)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetHTTP2(true)
	tc.NextProtos = []string{"h2", "http/1.1"}
	return &listener{addr: "tcp:" + ln.Addr().String(), ln: tls.NewListener(ln, tc), srv: s.httpServer(&p)}, nil
}

// serverTLSConfig loads the API's TLS files for the tcp: listener named by key: certificate,
// private key and CA certificate are all required, and clients must present a certificate the
// CA signed (mutual TLS): a TCP caller is identified by its certificate, never anonymous.
func serverTLSConfig(key string, t model.TLS) (*tls.Config, error) {
	if t.Certificate == "" || t.PrivateKey == "" {
		return nil, fmt.Errorf("%s: a tcp: listener needs TLS: set api.tls.certificate and api.tls.private_key (or listen on a unix: socket)", key)
	}
	if t.CACert == "" {
		return nil, fmt.Errorf("%s: a tcp: listener needs client certificates (mutual TLS): set api.tls.ca_cert to the CA that signs them (or listen on a unix: socket)", key)
	}
	cert, err := tls.LoadX509KeyPair(t.Certificate, t.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("api.tls: loading certificate %s and private key %s: %w", t.Certificate, t.PrivateKey, err)
	}
	pool, err := loadPool(t.CACert)
	if err != nil {
		return nil, fmt.Errorf("api.tls.ca_cert: %w", err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}, nil
}

func loadPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}
