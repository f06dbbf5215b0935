package config

import (
	"fmt"
	"github.com/ovsplane/ovsplane/internal/desired"
	"net"
	"path"
	"strconv"
)

// Auth maps API callers to roles (api.auth). Unix-socket callers are identified by the
// kernel (SO_PEERCRED: uid, gid, pid; SO_PEERGROUPS: supplementary groups), TCP callers by
// their verified client certificate (subject common name and SANs). The role of a caller is
// the highest that any of its identities earns:
//
//   - admin: every call, reads and writes (Apply*, Delete*, Reload). Always: uid 0 and the
//     daemon's own uid; and whoever Admins lists.
//   - reader: read calls only (Get*, List*, WaitReady, Watch, Health). Whoever Readers lists,
//     and the members of api.socket_group (the group the socket is given to) unless Admins
//     lists them.
//   - anyone else is refused (PermissionDenied naming the caller and the key to change).
//
// The daemon resolves group names when it starts listening (a name that does not exist is
// an error naming the key); Validate checks the shape only.
type Auth struct {
	Admins  Principals `mapstructure:"admins" yaml:"admins,omitempty"`
	Readers Principals `mapstructure:"readers" yaml:"readers,omitempty"`
}

// Principals lists the callers that hold one role.
type Principals struct {
	// UIDs are user ids of unix-socket callers.
	UIDs []int `mapstructure:"uids" yaml:"uids,omitempty"`
	// GIDs are group ids: a unix-socket caller whose primary or supplementary groups hold one
	// of them matches.
	GIDs []int `mapstructure:"gids" yaml:"gids,omitempty"`
	// Groups are group names, like GIDs.
	Groups []string `mapstructure:"groups" yaml:"groups,omitempty"`
	// Subjects are patterns (path.Match syntax: *, ?, [a-z]) matched against the verified
	// client certificate of a TCP caller: its subject common name and each of its DNS, URI and
	// e-mail SANs, e.g. "vsctl", "*.ops.example.com", "spiffe://example.org/ops/*".
	Subjects []string `mapstructure:"subjects" yaml:"subjects,omitempty"`
}

// Empty reports whether p lists nobody.
func (p Principals) Empty() bool {
	return len(p.UIDs) == 0 && len(p.GIDs) == 0 && len(p.Groups) == 0 && len(p.Subjects) == 0
}

// validateAuth checks api.auth: ids are not negative, names and patterns are well formed.
func (c *Config) validateAuth(v *desired.Validator) {
	for _, role := range []struct {
		key string
		p   Principals
	}{{"api.auth.admins", c.API.Auth.Admins}, {"api.auth.readers", c.API.Auth.Readers}} {
		for i, id := range role.p.UIDs {
			if id < 0 || id > 1<<32-2 {
				v.Add(fmt.Sprintf("%s.uids[%d]", role.key, i), "%d is not a uid (0..4294967294)", id)
			}
		}
		for i, id := range role.p.GIDs {
			if id < 0 || id > 1<<32-2 {
				v.Add(fmt.Sprintf("%s.gids[%d]", role.key, i), "%d is not a gid (0..4294967294)", id)
			}
		}
		for i, g := range role.p.Groups {
			if g == "" {
				v.Add(fmt.Sprintf("%s.groups[%d]", role.key, i), "empty group name")
			} else if _, err := strconv.Atoi(g); err == nil {
				v.Add(fmt.Sprintf("%s.groups[%d]", role.key, i), "%q is a number: list group ids under %s.gids", g, role.key)
			}
		}
		for i, s := range role.p.Subjects {
			if _, err := path.Match(s, ""); err != nil || s == "" {
				v.Add(fmt.Sprintf("%s.subjects[%d]", role.key, i), "%q is not a pattern (a name, or a glob like \"*.ops.example.com\")", s)
			}
		}
	}
}

// validatePprof checks that Go's profiles (metrics.pprof) go on a network address only when
// metrics.pprof_any_address says so explicitly: they expose memory contents and let anyone
// who reaches them burn CPU.
func (c *Config) validatePprof(v *desired.Validator) {
	if c.Metrics.PProf && c.Metrics.Address == "" {
		v.Add("metrics.pprof", "needs metrics.address (the profiles are served there)")
	}
	if c.Metrics.PProf && !c.Metrics.PProfAnyAddress && c.Metrics.Address != "" && !IsLoopback(c.Metrics.Address) {
		v.Add("metrics.pprof", "metrics.address %q is not a loopback address: serve the profiles on 127.0.0.1 or [::1], or set metrics.pprof_any_address: true (--metrics-pprof-any-address) to expose them there", c.Metrics.Address)
	}
}

// IsLoopback reports whether HOST:PORT listens on loopback only: localhost, 127.0.0.0/8 or
// ::1. An empty host (":9476") means every address and is not loopback.
func IsLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// normalize turns empty lists into nil (see normalizeEmpty).
func (a *Auth) normalize() {
	for _, p := range []*Principals{&a.Admins, &a.Readers} {
		nilIfEmpty(&p.UIDs)
		nilIfEmpty(&p.GIDs)
		nilIfEmpty(&p.Groups)
		nilIfEmpty(&p.Subjects)
	}
}
