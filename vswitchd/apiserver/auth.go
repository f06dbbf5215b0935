package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"connectrpc.com/connect"

	v1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/api/gen/ovsplane/v1/ovsplanev1connect"
	"github.com/ovsplane/ovsplane/vswitchd/config"
)

// Role is what a caller may do. The zero Role may do nothing.
type Role int

const (
	// RoleNone is refused every call.
	RoleNone Role = iota
	// RoleReader may make the read calls (see IsWrite).
	RoleReader
	// RoleAdmin may make every call.
	RoleAdmin
)

func (r Role) String() string {
	switch r {
	case RoleReader:
		return "reader"
	case RoleAdmin:
		return "admin"
	}
	return "none"
}

// readProcedures are the calls that change nothing. Every other procedure, including one
// added to the service later and not listed here, is a write and needs RoleAdmin.
var readProcedures = []string{
	ovsplanev1connect.SwitchServiceGetBridgeProcedure,
	ovsplanev1connect.SwitchServiceListBridgesProcedure,
	ovsplanev1connect.SwitchServiceGetPortProcedure,
	ovsplanev1connect.SwitchServiceListPortsProcedure,
	ovsplanev1connect.SwitchServiceListStatusProcedure,
	ovsplanev1connect.SwitchServiceWaitReadyProcedure,
	ovsplanev1connect.SwitchServiceWatchProcedure,
	ovsplanev1connect.SwitchServiceHealthProcedure,
	ovsplanev1connect.SwitchServiceListPluginsProcedure,
	ovsplanev1connect.SwitchServicePluginStatsProcedure,
}

// OverlayPrefix is the path of the read-only overlay view (Options.Overlay): every path below
// it is a read, as its handler answers GET only.
const OverlayPrefix = "/overlay/"

// IsWrite reports whether procedure ("/ovsplane.v1.SwitchService/ApplyPort") may change
// something and therefore needs RoleAdmin. Unknown procedures are writes (fail closed); paths
// under OverlayPrefix and FlowmonPrefix (and the prefixes without their slash) are reads, unless cleaning them
// ("..") leaves the prefix.
func IsWrite(procedure string) bool {
	return !underView(procedure, OverlayPrefix) && !underView(procedure, FlowmonPrefix) && !slices.Contains(readProcedures, procedure)
}

// FlowmonPrefix is the path of the read-only flowmon view (Options.Flowmon): every path below
// it is a read, as its handler answers GET only.
const FlowmonPrefix = "/flowmon/"

// underView reports whether procedure is prefix without its slash (redirected to the prefix)
// or a path below prefix that stays below it once cleaned.
func underView(procedure, prefix string) bool {
	return procedure == strings.TrimSuffix(prefix, "/") ||
		strings.HasPrefix(procedure, prefix) && strings.HasPrefix(path.Clean(procedure)+"/", prefix)
}

// Peer is who is calling, as the transport proved it: the kernel for a unix socket
// (SO_PEERCRED, SO_PEERGROUPS), the verified client certificate for TCP.
type Peer struct {
	// Transport is "unix" or "tcp".
	Transport string
	// UID, GID and PID are the unix peer's credentials when it connected; Groups its
	// supplementary groups.
	UID, GID, PID int
	Groups        []int
	// Subject is the TCP peer's certificate subject ("CN=vsctl,O=ops"); Names its common name
	// and its DNS, URI and e-mail SANs, which api.auth.*.subjects patterns are matched against.
	Subject string
	Names   []string
	// Err, when set, says why the peer could not be identified; such a peer is refused.
	Err error
}

// String names the peer for messages and logs: "uid 1000 (gid 1000, pid 4242)", "certificate
// CN=vsctl".
func (p *Peer) String() string {
	switch {
	case p == nil:
		return "an unidentified caller"
	case p.Err != nil:
		return "an unidentified " + p.Transport + " caller (" + p.Err.Error() + ")"
	case p.Transport == "unix":
		return fmt.Sprintf("uid %d (gid %d, pid %d)", p.UID, p.GID, p.PID)
	}
	return "certificate " + p.Subject
}

// logAttrs are the peer's attributes in audit lines.
func (p *Peer) logAttrs() []any {
	if p == nil {
		return []any{"transport", "in-process"}
	}
	attrs := []any{"transport", p.Transport}
	switch {
	case p.Err != nil:
		attrs = append(attrs, "peer_error", p.Err.Error())
	case p.Transport == "unix":
		attrs = append(attrs, "uid", p.UID, "gid", p.GID, "pid", p.PID)
	default:
		attrs = append(attrs, "subject", p.Subject, "names", strings.Join(p.Names, ","))
	}
	return attrs
}

type peerKey struct{}

func withPeer(ctx context.Context, p *Peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}

// PeerFrom returns the caller of the call ctx belongs to, or nil for a call that did not come
// through Serve's listeners (ServeHTTP in process).
func PeerFrom(ctx context.Context) *Peer {
	p, _ := ctx.Value(peerKey{}).(*Peer)
	return p
}

// policy maps peers to roles: config.Auth with group names resolved, plus the built-ins
// (uid 0 and the daemon's uid are admins, api.socket_group's members readers).
type policy struct {
	admins, readers principals
}

type principals struct {
	uids, gids []int
	subjects   []string
}

// newPolicy resolves cfg.Auth (group names to gids; an unknown name is an error naming its
// key) for a daemon running as selfUID.
func newPolicy(cfg config.API, selfUID int) (*policy, error) {
	p := &policy{}
	var err error
	if p.admins, err = resolve("api.auth.admins", cfg.Auth.Admins); err != nil {
		return nil, err
	}
	if p.readers, err = resolve("api.auth.readers", cfg.Auth.Readers); err != nil {
		return nil, err
	}
	p.admins.uids = append(p.admins.uids, 0, selfUID)
	gid, err := socketGroup(cfg.SocketGroup)
	if err != nil {
		return nil, err
	}
	if gid >= 0 {
		p.readers.gids = append(p.readers.gids, gid)
	}
	return p, nil
}

func resolve(key string, c config.Principals) (principals, error) {
	out := principals{uids: slices.Clone(c.UIDs), gids: slices.Clone(c.GIDs), subjects: slices.Clone(c.Subjects)}
	for i, name := range c.Groups {
		gid, err := lookupGroup(name)
		if err != nil {
			return out, fmt.Errorf("%s.groups[%d]: %w", key, i, err)
		}
		out.gids = append(out.gids, gid)
	}
	return out, nil
}

// role returns the highest role p earns.
func (pol *policy) role(p *Peer) Role {
	switch {
	case p == nil || p.Err != nil || pol == nil:
		return RoleNone
	case pol.admins.match(p):
		return RoleAdmin
	case pol.readers.match(p):
		return RoleReader
	}
	return RoleNone
}

func (ps principals) match(p *Peer) bool {
	if p.Transport == "unix" {
		if slices.Contains(ps.uids, p.UID) || slices.Contains(ps.gids, p.GID) {
			return true
		}
		return slices.ContainsFunc(p.Groups, func(g int) bool { return slices.Contains(ps.gids, g) })
	}
	for _, pat := range ps.subjects {
		for _, n := range p.Names {
			if ok, _ := path.Match(pat, n); ok {
				return true
			}
		}
	}
	return false
}

// authorizeHTTP returns next behind the role check: every request's path is its procedure,
// classified by IsWrite (so a path that is no known read is a write), and the caller's role is
// looked up from its identity in the request's context — all before anything of the body is
// read, so a caller the role does not allow cannot make the server decode (or wait for) up to
// Options.MaxRequestBytes. A refused request is answered PermissionDenied in the protocol the
// client spoke (Connect unary JSON with HTTP 403; a Connect end-of-stream message; gRPC and
// gRPC-Web trailers with status 7; Connect JSON for anything else) and audit-logged here,
// once, without object names (they are in the body); it never reaches the handler, so the
// interceptor never sees it.
//
// A write it lets through is audit-logged by the interceptor; one that Connect ends before
// the interceptor runs (a body that does not decode, too large, an unsupported content type,
// an unknown procedure) is audit-logged here once it has ended, without object names, with
// the status the client got (see answerRecorder) — so every write call has exactly one line.
// That line is written before this handler returns, so before the answer ends (its last
// chunk, END_STREAM or gRPC trailers are sent then): a client that has read the whole answer
// can find the line.
func (s *Server) authorizeHTTP(next http.Handler) http.Handler {
	ew := connect.NewErrorWriter()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		peer, role, err := s.authorize(r.Context(), r.URL.Path)
		if err == nil && !IsWrite(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		if err == nil {
			mark := &auditMark{}
			ctx := withAuditMark(r.Context(), mark)
			rec := &answerRecorder{ResponseWriter: w, mark: mark}
			next.ServeHTTP(rec, r.WithContext(ctx))
			if !mark.done.Load() {
				var answered error
				if code := rec.code(); code != 0 {
					answered = connect.NewError(code, errors.New("answered before the interceptor ran"))
				}
				s.audit(ctx, peer, role, trimName(r.URL.Path), nil, start, answered)
			}
			return
		}
		s.audit(r.Context(), peer, role, trimName(r.URL.Path), nil, start, err)
		if werr := ew.Write(w, r, err); werr != nil {
			s.log.Debug("API: writing a refusal failed", "procedure", trimName(r.URL.Path), "error", werr)
		}
	})
}

// authInterceptor enforces roles again inside Connect, as a defence in depth behind
// authorizeHTTP (which refuses before the body is read): every call's procedure is classified
// (IsWrite), the caller's role is looked up, and a call the role does not allow ends with
// PermissionDenied before its handler runs. It audit-logs every write; a refusal here (a call
// that did not come through authorizeHTTP) is audit-logged here, so each refused call has
// exactly one line. A write Connect ends before this interceptor runs (its body does not
// decode) is audit-logged by authorizeHTTP instead.
type authInterceptor struct{ s *Server }

func (a authInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		procedure := req.Spec().Procedure
		start := time.Now()
		peer, role, err := a.s.authorize(ctx, procedure)
		if err == nil {
			var resp connect.AnyResponse
			resp, err = next(ctx, req)
			if !IsWrite(procedure) {
				return resp, err
			}
			a.s.audit(ctx, peer, role, procedure, objects(req.Any()), start, err)
			return resp, err
		}
		a.s.audit(ctx, peer, role, procedure, objects(req.Any()), start, err)
		return nil, err
	}
}

func (a authInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (a authInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		procedure := conn.Spec().Procedure
		start := time.Now()
		peer, role, err := a.s.authorize(ctx, procedure)
		if err != nil {
			a.s.audit(ctx, peer, role, procedure, nil, start, err)
			return err
		}
		err = next(ctx, conn)
		if IsWrite(procedure) {
			a.s.audit(ctx, peer, role, procedure, nil, start, err)
		}
		return err
	}
}

// authorize returns the caller, its role, and a PermissionDenied error when the role does not
// allow procedure. The message names the caller and the configuration key that would let it.
func (s *Server) authorize(ctx context.Context, procedure string) (*Peer, Role, error) {
	peer := PeerFrom(ctx)
	role := s.opts.Unidentified
	if peer != nil {
		role = s.policy.Load().role(peer)
	}
	write := IsWrite(procedure)
	if role == RoleAdmin || (role == RoleReader && !write) {
		return peer, role, nil
	}
	method := procedure[strings.LastIndex(procedure, "/")+1:]
	var fix string
	switch {
	case peer == nil:
		fix = "call it through the daemon's API listeners"
	case peer.Err != nil:
		fix = "connect again; if it persists, report it"
	case peer.Transport == "unix" && write:
		fix = fmt.Sprintf("add uid %d to api.auth.admins.uids (or one of its groups to api.auth.admins.groups) and restart ovsplaned", peer.UID)
	case peer.Transport == "unix":
		fix = fmt.Sprintf("add uid %d to api.auth.readers.uids (or one of its groups to api.auth.readers.groups, or the user to api.socket_group) and restart ovsplaned", peer.UID)
	case write:
		fix = "add a pattern matching one of its names (" + strings.Join(peer.Names, ", ") + ") to api.auth.admins.subjects and restart ovsplaned"
	default:
		fix = "add a pattern matching one of its names (" + strings.Join(peer.Names, ", ") + ") to api.auth.readers.subjects and restart ovsplaned"
	}
	need := "reader"
	if write {
		need = "admin"
	}
	return peer, role, connect.NewError(connect.CodePermissionDenied,
		fmt.Errorf("%s may not call %s: role %s, %s needed; %s", peer, method, role, need, fix))
}

// maxAuditName bounds an object name in an audit line (names are checked after the line is
// written for refused calls, so they may be anything the request size allows).
const maxAuditName = 128

// trimName cuts s to maxAuditName bytes for an audit line.
func trimName(s string) string {
	if len(s) > maxAuditName {
		return s[:maxAuditName] + "…"
	}
	return s
}

// objects returns the names of the objects a write request is about, as audit attributes.
func objects(msg any) []any {
	switch m := msg.(type) {
	case *v1.ApplyBridgeRequest:
		return []any{"bridge", trimName(m.GetBridge().GetName())}
	case *v1.DeleteBridgeRequest:
		return []any{"bridge", trimName(m.GetName())}
	case *v1.ApplyPortRequest:
		return []any{"bridge", trimName(m.GetBridge()), "port", trimName(m.GetPort().GetName())}
	case *v1.DeletePortRequest:
		return []any{"port", trimName(m.GetName())}
	case *v1.GetBridgeRequest:
		return []any{"bridge", trimName(m.GetName())}
	case *v1.GetPortRequest:
		return []any{"port", trimName(m.GetName())}
	}
	return nil
}

// audit writes one line to the audit logger: who (transport and identity), the role, what
// (procedure and object names), the result ("ok" or the status code) and the duration. It
// never logs request contents or error messages (options and external_ids may hold secrets).
// It marks the call audited (markAudited), so that authorizeHTTP does not write a second line.
func (s *Server) audit(ctx context.Context, peer *Peer, role Role, procedure string, objs []any, start time.Time, err error) {
	result := "ok"
	if err != nil {
		result = connect.CodeOf(err).String()
		var ce *connect.Error
		if !errors.As(err, &ce) {
			result = classify(ctx, err).String()
		}
	}
	attrs := append([]any{"procedure", procedure}, peer.logAttrs()...)
	attrs = append(attrs, "role", role.String())
	attrs = append(attrs, objs...)
	attrs = append(attrs, "result", result, "duration", time.Since(start).Round(time.Microsecond).String())
	s.opts.Audit.Log(ctx, slog.LevelInfo, "api audit", attrs...)
	markAudited(ctx)
}
