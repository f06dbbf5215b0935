package stripeplugin

import (
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	"github.com/ovsplane/ovsplane/stripe/endpoint"
)

// EndpointConfig is where and how a job serves the application endpoint (stripe/endpoint):
// applications register on it and send and receive through the job's engines, each paced to
// its fair share of the available bandwidth.
type EndpointConfig struct {
	// Unix is the unix socket's absolute path, at most endpoint.MaxSocketPath bytes; "" is
	// <the plugin's data dir>/<job name>.sock (the plugin's data dir is under the daemon's
	// data dir: <data_dir>/plugin-data/stripe).
	Unix string `json:"unix,omitempty"`
	// TCP and UDP are optional listen addresses, IP:port with a literal IP (loopback unless
	// Remote), opened in the job's network namespace; "" serves no such socket.
	TCP string `json:"tcp,omitempty"`
	UDP string `json:"udp,omitempty"`
	// Remote allows TCP and UDP addresses that are not loopback: applications of other hosts
	// may then use the stripe.
	Remote bool `json:"remote,omitempty"`
	// MaxApps bounds the registered applications (0: endpoint.DefaultMaxApps; at most
	// MaxEndpointApps).
	MaxApps int `json:"max_apps,omitempty"`
	// PeriodMillis is how often the fair shares are computed (0: endpoint.DefaultPeriod,
	// 100 ms; 1 to 60000).
	PeriodMillis int `json:"period_ms,omitempty"`
}

// MaxEndpointApps bounds a job's registered applications.
const MaxEndpointApps = 4096

// check validates the endpoint's settings.
func (ec *EndpointConfig) check() error {
	if ec.Unix != "" {
		switch {
		case len(ec.Unix) > endpoint.MaxSocketPath:
			return problem("config.endpoint.unix", "%d bytes: a unix socket path is at most %d bytes; pick a shorter one", len(ec.Unix), endpoint.MaxSocketPath)
		case !filepath.IsAbs(ec.Unix) || strings.ContainsRune(ec.Unix, 0) || filepath.Clean(ec.Unix) != ec.Unix:
			return problem("config.endpoint.unix", "%q: want a clean absolute path (or leave it out for <plugin data dir>/<job>.sock)", clip(ec.Unix))
		}
	}
	for _, a := range []struct{ field, addr string }{{"tcp", ec.TCP}, {"udp", ec.UDP}} {
		if a.addr == "" {
			continue
		}
		f := "config.endpoint." + a.field
		ap, err := netip.ParseAddrPort(a.addr)
		if err != nil || ap.Port() == 0 || ap.Addr().Zone() != "" {
			return problem(f, "%q: want IP:port with a literal IP and a port of 1 to 65535, e.g. 127.0.0.1:7475 or [::1]:7475", clip(a.addr))
		}
		if !ec.Remote && !ap.Addr().IsLoopback() {
			return problem(f, "%s is not a loopback address: applications of other hosts would reach the stripe; use 127.0.0.1 or ::1, or set endpoint.remote", a.addr)
		}
	}
	if ec.MaxApps < 0 || ec.MaxApps > MaxEndpointApps {
		return problem("config.endpoint.max_apps", "%d: want 1 to %d (or leave it out for %d)", ec.MaxApps, MaxEndpointApps, endpoint.DefaultMaxApps)
	}
	if ec.PeriodMillis < 0 || ec.PeriodMillis > 60000 {
		return problem("config.endpoint.period_ms", "%d: want 1 to 60000 milliseconds (or leave it out for %d)", ec.PeriodMillis, endpoint.DefaultPeriod/time.Millisecond)
	}
	return nil
}

// period is how often the endpoint computes the shares, its default applied.
func (ec *EndpointConfig) period() time.Duration {
	if ec.PeriodMillis > 0 {
		return time.Duration(ec.PeriodMillis) * time.Millisecond
	}
	return endpoint.DefaultPeriod
}

// socketPath is the unix socket of job name: the configured one, else name.sock in dir.
func (ec *EndpointConfig) socketPath(dir, name string) string {
	if ec.Unix != "" {
		return ec.Unix
	}
	return filepath.Join(dir, name+".sock")
}
