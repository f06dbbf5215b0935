package sdktest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/internal/wire"
)

// DefaultFacts returns the facts of a typical Open vSwitch 3.1 with DPDK initialized, as the
// host would hand them to Configure.
func DefaultFacts() api.HostFacts {
	return api.HostFacts{
		OVSVersion:      "3.1.0",
		DPDKVersion:     "DPDK 22.11.1",
		DPDKInitialized: true,
		IfaceTypes: []string{"afxdp", "afxdp-nonpmd", "bareudp", "dpdk", "dpdkvhostuser", "dpdkvhostuserclient",
			"erspan", "geneve", "gre", "gtpu", "internal", "ip6erspan", "ip6gre", "lisp", "patch", "srv6", "stt",
			"system", "tap", "vxlan"},
		DatapathTypes:  []string{"netdev", "system"},
		AppctlCommands: []string{"dpif-netdev/pmd-rxq-show", "dpif-netdev/pmd-stats-show", "netdev-dpdk/get-mempool-info", "version"},
		OVSRunDir:      "/var/run/openvswitch",
		HostVersion:    "test",
	}
}

// Call is one call the FakeHost made.
type Call struct {
	Method string // e.g. "Attach"
	Object string // e.g. "br0/veth0"; empty for calls about no object
	Err    error
}

// FakeHost plays ovsplaned against a plugin through a Conn: it configures the plugin, keeps
// each attached port's state as the host keeps it in OVSDB, passes it back on Detach and on
// replay after a restart (with PortRequest.Replay set), starts the data-path jobs of each
// attachment and stops them before Detach, checks every answer with the host's checks
// (api.ValidateAttachment, ValidateFlowSet, ValidateChanges, ValidateGlobalConfig) and records
// every call. Like the host
// it sets a deadline (Timeout) on every call and refuses capability calls before Configure.
// Its methods return the plugin's errors; it fails the test only when it cannot connect.
type FakeHost struct {
	// Facts, Cookies and Groups are handed to Configure; change them before calling it.
	Facts   api.HostFacts
	Cookies api.CookieRange
	Groups  api.GroupRange
	// Timeout is the deadline of each call (default 5s).
	Timeout time.Duration

	t          testing.TB
	mu         sync.Mutex
	conn       *Conn
	config     []byte
	configured bool
	ports      map[string]api.PortRequest // by "bridge/name", State as stored
	jobs       map[string][]api.Job       // by "bridge/name": the jobs of the port's attachment
	calls      []Call
}

// NewFakeHost connects to impl (Connect) and checks its Info with api.ValidateInfo. Cookies
// default to the range 0x00ab_0000_0000_0000/0xffff_0000_0000_0000 and groups to 0xab00-0xabff.
func NewFakeHost(t testing.TB, impl api.Plugin) *FakeHost {
	t.Helper()
	h := &FakeHost{
		Facts:   DefaultFacts(),
		Cookies: api.CookieRange{Value: 0x00ab << 48, Mask: 0xffff << 48},
		Groups:  api.GroupRange{First: 0xab00, Count: 0x100},
		Timeout: 5 * time.Second,
		t:       t,
		ports:   map[string]api.PortRequest{},
		jobs:    map[string][]api.Job{},
	}
	h.conn = Connect(t, impl)
	if err := api.ValidateInfo(h.conn.Info); err != nil {
		t.Fatalf("sdktest: %v", err)
	}
	return h
}

// Conn returns the current connection (a new one after Restart).
func (h *FakeHost) Conn() *Conn {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.conn
}

// Calls returns the calls made so far, in order.
func (h *FakeHost) Calls() []Call {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.calls)
}

// State returns the stored state of an attached port and whether the port is attached.
func (h *FakeHost) State(bridge, name string) ([]byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	req, ok := h.ports[bridge+"/"+name]
	return req.State, ok
}

func (h *FakeHost) record(method, object string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, Call{Method: method, Object: object, Err: err})
}

func (h *FakeHost) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(h.t.Context(), h.Timeout)
}

func (h *FakeHost) ready(method string, capability any) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case !h.configured:
		return api.Errorf(api.FailedPrecondition, "sdktest: %s before a successful Configure", method)
	case capability == nil:
		return api.Errorf(api.Unimplemented, "sdktest: %s: the plugin does not serve this capability", method)
	}
	return nil
}

// Configure calls Configure with config (nil means "{}") and the host's facts, cookie and group
// ranges, and the API version negotiated from the plugin's Info.
func (h *FakeHost) Configure(config []byte) error {
	if config == nil {
		config = []byte("{}")
	}
	version, err := wire.NegotiateAPIVersion(h.Conn().Info.APIVersions)
	if err == nil {
		ctx, cancel := h.ctx()
		defer cancel()
		err = h.Conn().Plugin.Configure(ctx, api.ConfigureRequest{
			Config: config, Facts: h.Facts, APIVersion: version, Cookies: h.Cookies, Groups: h.Groups,
		})
	}
	h.record("Configure", "", err)
	if err == nil {
		h.mu.Lock()
		h.config, h.configured = config, true
		h.mu.Unlock()
	}
	return err
}

// Health calls Health.
func (h *FakeHost) Health() (api.Health, error) {
	ctx, cancel := h.ctx()
	defer cancel()
	health, err := h.Conn().Plugin.Health(ctx)
	h.record("Health", "", err)
	return health, err
}

// Validate calls Validate.
func (h *FakeHost) Validate(req api.PortRequest) ([]api.Problem, error) {
	pp := h.Conn().PortProvider
	if err := h.ready("Validate", nilIfNone(pp)); err != nil {
		return nil, err
	}
	ctx, cancel := h.ctx()
	defer cancel()
	problems, err := pp.Validate(ctx, req)
	h.record("Validate", req.Bridge+"/"+req.Name, err)
	return problems, err
}

// Attach calls Attach with the port's stored state (when req has none) and Replay set when the
// port was attached before, checks the answer with api.ValidateAttachment, stores the new state
// and starts the attachment's Jobs (DataPath.Start, recorded as "Start" calls), as the host
// does once the port is written; a job that fails to start is returned as an error with the
// attachment, the port staying attached.
//
// An answer the checks refuse is an *api.RefusedAnswerError (Plugin is the plugin's Info.Name,
// State the answer's State), as the host returns it, and nothing is stored. When the attachment
// was fresh (no state was passed to the plugin), the fake host then undoes it as the daemon
// does: it calls Detach with the request and the refused answer's State (recorded as a
// "Detach" call) and returns the refusal, joined with Detach's error if Detach failed. A
// refused answer to an Attach that passed a state (a replay) is not detached. The plugin's
// own errors (and transport failures and timeouts) are returned as they are and detach
// nothing.
func (h *FakeHost) Attach(req api.PortRequest) (api.Attachment, error) {
	pp := h.Conn().PortProvider
	if err := h.ready("Attach", nilIfNone(pp)); err != nil {
		return api.Attachment{}, err
	}
	key := req.Bridge + "/" + req.Name
	stored, attached := h.State(req.Bridge, req.Name)
	if req.State == nil {
		req.State = stored
	}
	// Asking again for a port attached before is a replay, as the host marks it.
	req.Replay = req.Replay || attached
	fresh := req.State == nil
	ctx, cancel := h.ctx()
	defer cancel()
	a, err := pp.Attach(ctx, req)
	if err == nil {
		if verr := api.ValidateAttachment(h.Facts, req, a); verr != nil {
			err = &api.RefusedAnswerError{Plugin: h.Conn().Info.Name, State: a.State, Err: verr}
		}
	}
	h.record("Attach", key, err)
	if refused, ok := errors.AsType[*api.RefusedAnswerError](err); ok && fresh {
		undo := req
		undo.State = refused.State
		dctx, dcancel := h.ctx() // Detach has its own deadline, as in the daemon
		derr := pp.Detach(dctx, undo)
		dcancel()
		h.record("Detach", key, derr)
		if derr != nil {
			err = errors.Join(err, fmt.Errorf("detach of the refused attachment: %w", derr))
		}
	}
	if err != nil {
		return api.Attachment{}, err
	}
	req.State = a.State
	h.mu.Lock()
	h.ports[key] = req
	h.jobs[key] = a.Jobs
	h.mu.Unlock()
	if err := h.startJobs(a.Jobs); err != nil {
		return a, fmt.Errorf("port %s: %w", key, err)
	}
	return a, nil
}

// startJobs starts the jobs of an attachment, as the host does once the port is written.
func (h *FakeHost) startJobs(jobs []api.Job) error {
	var errs []error
	for _, job := range jobs {
		if _, err := h.StartJob(job); err != nil {
			errs = append(errs, fmt.Errorf("start job %s: %w", job.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Detach stops the jobs of the port's last attachment (DataPath.Stop), then calls Detach with
// the request and state stored by Attach (a request with only the bridge, name and type when
// the port was never attached) and forgets the port on success.
func (h *FakeHost) Detach(bridge, name string) error {
	pp := h.Conn().PortProvider
	if err := h.ready("Detach", nilIfNone(pp)); err != nil {
		return err
	}
	key := bridge + "/" + name
	h.mu.Lock()
	req, ok := h.ports[key]
	h.mu.Unlock()
	if !ok {
		req = api.PortRequest{Bridge: bridge, Name: name}
	}
	ctx, cancel := h.ctx()
	defer cancel()
	h.mu.Lock()
	jobs := h.jobs[key]
	h.mu.Unlock()
	// The host stops the port's jobs once its rows are gone, before Detach.
	var errs []error
	for _, job := range jobs {
		if err := h.StopJob(job.Name); err != nil {
			errs = append(errs, fmt.Errorf("stop job %s: %w", job.Name, err))
		}
	}
	err := pp.Detach(ctx, req)
	h.record("Detach", key, err)
	if err == nil {
		h.mu.Lock()
		delete(h.ports, key)
		delete(h.jobs, key)
		h.mu.Unlock()
	}
	return errors.Join(append(errs, err)...)
}

// List calls List.
func (h *FakeHost) List() ([]api.OwnedPort, error) {
	pp := h.Conn().PortProvider
	if err := h.ready("List", nilIfNone(pp)); err != nil {
		return nil, err
	}
	ctx, cancel := h.ctx()
	defer cancel()
	ports, err := pp.List(ctx)
	h.record("List", "", err)
	return ports, err
}

// Restart plays a plugin restart: it connects to impl (a fresh instance, as a new process
// would be), configures it with the last configuration and replays Attach of every stored
// port with its stored state and Replay set, in name order, as the host does. It returns the
// errors of the replay joined.
func (h *FakeHost) Restart(impl api.Plugin) error {
	h.t.Helper()
	conn := Connect(h.t, impl)
	h.mu.Lock()
	h.conn, h.configured = conn, false
	config := h.config
	keys := slices.Sorted(maps.Keys(h.ports))
	reqs := make([]api.PortRequest, len(keys))
	for i, k := range keys {
		reqs[i] = h.ports[k]
	}
	h.mu.Unlock()
	if config == nil {
		return nil
	}
	if err := h.Configure(config); err != nil {
		return fmt.Errorf("configure after restart: %w", err)
	}
	var errs []error
	for _, req := range reqs {
		req.Replay = true
		if _, err := h.Attach(req); err != nil {
			errs = append(errs, fmt.Errorf("replay %s/%s: %w", req.Bridge, req.Name, err))
		}
	}
	return errors.Join(errs...)
}

// nilIfNone turns a nil interface value of a capability into an untyped nil for ready.
func nilIfNone[T comparable](v T) any {
	var zero T
	if v == zero {
		return nil
	}
	return v
}
