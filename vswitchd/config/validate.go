package config

import (
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/ovsplane/ovsplane/internal/desired"
	"github.com/ovsplane/ovsplane/model"
)

var (
	logLevels  = []string{"debug", "info", "warn", "error"}
	logFormats = []string{"text", "json"}
	octalMode  = regexp.MustCompile(`^0?[0-7]{3}$`)
)

// Validate checks the whole configuration and returns every problem at once (errors.Join), each
// message starting with the key path and saying what is accepted, for example
//
//	bridges[1].name: duplicate bridge name "br0" (also bridges[0])
//
// It does not touch the host: files, groups and devices are checked by the daemon when used.
func (c *Config) Validate() error {
	v := &desired.Validator{}
	if len(c.Plugins) > 0 {
		// Types the plugins provide are known once they run: the daemon checks them then.
		v.PluginType = func(string) bool { return true }
	}
	c.validateSettings(v)
	if !v.TooManyObjects(c.Bridges) {
		v.Desired(c.OtherConfig, c.Bridges)
	}
	c.validatePlugins(v)
	return v.Err()
}

func (c *Config) validateSettings(v *desired.Validator) {
	ssl := false
	for i, ep := range c.OVSDB.Endpoints {
		path := fmt.Sprintf("ovsdb.endpoints[%d]", i)
		kind, rest, _ := strings.Cut(ep, ":")
		switch kind {
		case "unix":
			if rest == "" {
				v.Add(path, "%q has no socket path (write unix:/var/run/openvswitch/db.sock)", ep)
			}
		case "tcp", "ssl":
			ssl = ssl || kind == "ssl"
			if _, port, err := net.SplitHostPort(rest); err != nil || port == "" {
				v.Add(path, "%q is not %s:HOST:PORT (IPv6 hosts in brackets)", ep, kind)
			}
		default:
			v.Add(path, "%q must start with unix:, tcp: or ssl:", ep)
		}
	}
	if ssl {
		checkTLS(v, "ovsdb.tls", c.OVSDB.TLS, true, "an ssl: endpoint")
	}
	if w := c.OVSDB.ReconnectWait; w != 0 { // 0: unset, the daemon's default
		if p := reconnectWaitProblem(w); p != "" {
			v.Add("ovsdb.reconnect_wait", "%s", p)
		}
	}
	if d := c.OVSDB.ApplyTimeout; d != 0 { // 0: unset, the default
		if p := applyTimeoutProblem(d); p != "" {
			v.Add("ovsdb.apply_timeout", "%s", p)
		}
	}
	if p := c.OVSDB.VswitchdUnixctl; p != "" {
		if !filepath.IsAbs(p) || len(p) > MaxUnixctlPath || strings.ContainsFunc(p, unicode.IsControl) {
			v.Add("ovsdb.vswitchd_unixctl", "%.120q: want the absolute path (at most %d bytes, no control characters) of the socket ovs-vswitchd was started with --unixctl=PATH, e.g. /var/run/openvswitch/ovs-vswitchd.zs.ctl", p, MaxUnixctlPath)
		}
	}
	if !filepath.IsAbs(c.DataDir) {
		v.Add("data_dir", "%q must be an absolute path", c.DataDir)
	}
	if c.PluginDir != "" && !filepath.IsAbs(c.PluginDir) {
		v.Add("plugin_dir", "%q must be an absolute path", c.PluginDir)
	}
	tcp := false
	for i, addr := range c.API.Listen {
		path := fmt.Sprintf("api.listen[%d]", i)
		kind, rest, _ := strings.Cut(addr, ":")
		switch kind {
		case "unix":
			if !filepath.IsAbs(rest) {
				v.Add(path, "%q needs an absolute socket path (unix:/run/ovsplane/ovsplaned.sock)", addr)
			}
		case "tcp":
			tcp = true
			if _, port, err := net.SplitHostPort(rest); err != nil || port == "" {
				v.Add(path, "%q is not tcp:HOST:PORT", addr)
			}
		default:
			v.Add(path, "%q must start with unix: or tcp:", addr)
		}
	}
	if tcp {
		checkTLS(v, "api.tls", c.API.TLS, true, "a tcp: listener")
	}
	if !octalMode.MatchString(c.API.SocketMode) {
		v.Add("api.socket_mode", "%q is not an octal file mode (write it quoted, like \"0660\")", c.API.SocketMode)
	}
	c.validateAuth(v)
	c.validateOverlay(v)
	c.validatePprof(v)
	if !slices.Contains(logLevels, c.Log.Level) {
		v.Add("log.level", "unknown level %q (%s)", c.Log.Level, desired.OneOf(logLevels))
	}
	if !slices.Contains(logFormats, c.Log.Format) {
		v.Add("log.format", "unknown format %q (%s)", c.Log.Format, desired.OneOf(logFormats))
	}
	if a := c.Metrics.Address; a != "" {
		if _, _, err := net.SplitHostPort(a); err != nil {
			v.Add("metrics.address", "%q is not HOST:PORT (like 127.0.0.1:9476 or :9476)", a)
		}
	}
}

func checkTLS(v *desired.Validator, path string, t model.TLS, needCA bool, why string) {
	if t.PrivateKey == "" {
		v.Add(path+".private_key", "required by %s", why)
	}
	if t.Certificate == "" {
		v.Add(path+".certificate", "required by %s", why)
	}
	if needCA && t.CACert == "" {
		v.Add(path+".ca_cert", "required by %s", why)
	}
}

// validateOverlay checks overlay.fabric_remotes: at most MaxFabricRemotes unix:PATH (absolute)
// or tcp:HOST:PORT addresses, no duplicates. ssl: is refused: the fabric client takes no TLS
// files yet.
func (c *Config) validateOverlay(v *desired.Validator) {
	rs := c.Overlay.FabricRemotes
	if len(rs) > MaxFabricRemotes {
		v.Add("overlay.fabric_remotes", "%d remotes: give at most %d cluster members", len(rs), MaxFabricRemotes)
		return
	}
	for i, r := range rs {
		path := fmt.Sprintf("overlay.fabric_remotes[%d]", i)
		kind, rest, _ := strings.Cut(r, ":")
		switch kind {
		case "unix":
			if !filepath.IsAbs(rest) || len(rest) > MaxUnixctlPath {
				v.Add(path, "%.120q needs an absolute socket path of at most %d bytes (unix:/run/ovsplane/fabric1.sock)", r, MaxUnixctlPath)
			}
		case "tcp":
			if _, port, err := net.SplitHostPort(rest); err != nil || port == "" {
				v.Add(path, "%.120q is not tcp:HOST:PORT (IPv6 hosts in brackets)", r)
			}
		default:
			v.Add(path, "%.120q must start with unix: or tcp: (ssl: is not supported by the fabric view yet)", r)
		}
		if slices.Contains(rs[:i], r) {
			v.Add(path, "%.120q is listed twice", r)
		}
	}
}
