package apiserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

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
// ends, then shuts down: streams (Watch) end cleanly, waits (WaitReady) end with Unavailable,
// calls in flight get Options.ShutdownTimeout to finish, and unix socket files are removed.
// It returns nil after a shutdown caused by ctx, or the first error: an address that cannot
// be listened on (nothing is served then; the error names the key and the fix), or a listener
// that failed while serving. Serve may be called once per Server.
func (s *Server) Serve(ctx context.Context, cfg config.API) error {
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
		return nil, errors.New("api.listen: no address to listen on (the daemon's default is unix:" +
			filepath.Join(config.DefaultDataDir, config.SocketName) + ")")
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
		Handler:           s,
		Protocols:         protocols,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
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
	grp, err := user.LookupGroup(g)
	if err != nil {
		var unknown user.UnknownGroupError
		if errors.As(err, &unknown) {
			return 0, fmt.Errorf("api.socket_group: group %q does not exist (create it with groupadd, or give an existing group or a numeric gid)", g)
		}
		return 0, fmt.Errorf("api.socket_group: looking up group %q: %w", g, err)
	}
	gid, err := strconv.Atoi(grp.Gid)
	if err != nil {
		return 0, fmt.Errorf("api.socket_group: group %q has a non-numeric gid %q", g, grp.Gid)
	}
	return gid, nil
}

// listenTLS listens on a tcp: address; the API is served over TCP with TLS only.
func (s *Server) listenTLS(key, hostport string, t config.TLS) (*listener, error) {
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

// serverTLSConfig loads the API's TLS files for the tcp: listener named by key: certificate
// and private key are required; with a CA certificate, clients must present a certificate it
// signed.
func serverTLSConfig(key string, t config.TLS) (*tls.Config, error) {
	if t.Certificate == "" || t.PrivateKey == "" {
		return nil, fmt.Errorf("%s: a tcp: listener needs TLS: set api.tls.certificate and api.tls.private_key (or listen on a unix: socket)", key)
	}
	cert, err := tls.LoadX509KeyPair(t.Certificate, t.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("api.tls: loading certificate %s and private key %s: %w", t.Certificate, t.PrivateKey, err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if t.CACert != "" {
		pool, err := loadPool(t.CACert)
		if err != nil {
			return nil, fmt.Errorf("api.tls.ca_cert: %w", err)
		}
		tc.ClientCAs = pool
		tc.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return tc, nil
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
