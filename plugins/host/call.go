package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// call runs one plugin call on the current instance with the host's deadline. It fails fast
// with Unavailable when the plugin is not running; a call in flight when the process dies
// fails with Unavailable, one that outlives its deadline with DeadlineExceeded; both name the
// plugin and the call. Errors from the plugin keep their code and gain the plugin's name.
func call[T any](ctx context.Context, s *sup, method string, fn func(context.Context, *instance) (T, error)) (T, error) {
	var zero T
	in, err := s.current(method)
	if err != nil {
		return zero, err
	}
	cctx, cancel := context.WithTimeout(ctx, s.h.opts.CallTimeout)
	defer cancel()
	stop := context.AfterFunc(in.ctx, cancel)
	defer stop()
	v, err := fn(cctx, in)
	if err != nil {
		return zero, s.callError(ctx, cctx, in, method, err)
	}
	return v, nil
}

// current returns the running instance, or Unavailable naming the plugin, the call and why.
func (s *sup) current(method string) (*instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inst != nil && s.st.State == StateRunning {
		return s.inst, nil
	}
	why := string(s.st.State)
	if s.st.Reason != "" {
		why += ": " + s.st.Reason
	}
	return nil, &api.Error{Code: api.Unavailable, Message: fmt.Sprintf("plugin %q: %s: not running (%s)", s.name, method, why)}
}

// callError classifies a failed call. parent is the caller's context, cctx the call's.
func (s *sup) callError(parent, cctx context.Context, in *instance, method string, err error) error {
	switch {
	case in.ctx.Err() != nil || in.exited(api.CodeOf(err) == api.Unavailable):
		return &api.Error{Code: api.Unavailable, Message: fmt.Sprintf(
			"plugin %q: %s: the plugin process exited during the call; it is being restarted (%v)", s.name, method, err)}
	case parent.Err() != nil:
		code := api.CodeOf(parent.Err())
		return &api.Error{Code: code, Message: fmt.Sprintf("plugin %q: %s: %v", s.name, method, parent.Err())}
	case errors.Is(cctx.Err(), context.DeadlineExceeded) || deadlinePassed(cctx):
		return &api.Error{Code: api.DeadlineExceeded, Message: fmt.Sprintf(
			"plugin %q: %s: no answer within %s", s.name, method, s.h.opts.CallTimeout)}
	}
	return fmt.Errorf("plugin %q: %s: %w", s.name, method, err)
}

// portProvider is the supervised api.PortProvider of one plugin.
type portProvider struct{ s *sup }

func describe(r api.PortRequest) string { return "port " + r.Bridge + "/" + r.Name }

func (p portProvider) Validate(ctx context.Context, req api.PortRequest) ([]api.Problem, error) {
	return call(ctx, p.s, "Validate "+describe(req), func(ctx context.Context, in *instance) ([]api.Problem, error) {
		return in.port.Validate(ctx, req)
	})
}

// Attach calls the plugin's Attach and checks its answer. A request carrying State is for a
// port attached before (the contract: a request with State is a replay), so Replay is set on
// it whatever the caller said. An answer the checks refuse is an
// *api.RefusedAnswerError (with the answer's State) and is not detached here: the daemon,
// which knows whether the attachment is fresh, detaches it (vswitchd's attach).
func (p portProvider) Attach(ctx context.Context, req api.PortRequest) (api.Attachment, error) {
	if req.State != nil {
		req.Replay = true
	}
	a, err := call(ctx, p.s, "Attach "+describe(req), func(ctx context.Context, in *instance) (api.Attachment, error) {
		return in.port.Attach(ctx, req)
	})
	if err == nil {
		err = p.s.checkAttachment(req, a)
	}
	if err != nil {
		return api.Attachment{}, err
	}
	return a, nil
}

func (p portProvider) Detach(ctx context.Context, req api.PortRequest) error {
	_, err := call(ctx, p.s, "Detach "+describe(req), func(ctx context.Context, in *instance) (struct{}, error) {
		return struct{}{}, in.port.Detach(ctx, req)
	})
	return err
}

func (p portProvider) List(ctx context.Context) ([]api.OwnedPort, error) {
	return call(ctx, p.s, "List", func(ctx context.Context, in *instance) ([]api.OwnedPort, error) {
		return in.port.List(ctx)
	})
}

// watcher is the supervised api.Watcher of one plugin.
type watcher struct{ s *sup }

func (w watcher) OnPortEvents(ctx context.Context, b api.PortEventBatch) ([]api.InterfaceChange, error) {
	return call(ctx, w.s, "OnPortEvents", func(ctx context.Context, in *instance) ([]api.InterfaceChange, error) {
		if in.watcher == nil {
			return nil, &api.Error{Code: api.Unimplemented, Message: "no watcher capability"}
		}
		changes, err := in.watcher.OnPortEvents(ctx, b)
		if err == nil {
			err = api.ValidateChanges(b, changes)
		}
		return changes, err
	})
}

// dataPath is the supervised api.DataPath of one plugin. Stats is bounded by the caller's
// context only (it streams until then), but still fails when the process dies.
type dataPath struct{ s *sup }

func (d dataPath) Start(ctx context.Context, job api.Job) (string, error) {
	return call(ctx, d.s, "Start job "+job.Name, func(ctx context.Context, in *instance) (string, error) {
		return in.data.Start(ctx, job)
	})
}

func (d dataPath) Stop(ctx context.Context, name string) error {
	_, err := call(ctx, d.s, "Stop job "+name, func(ctx context.Context, in *instance) (struct{}, error) {
		return struct{}{}, in.data.Stop(ctx, name)
	})
	return err
}

func (d dataPath) Stats(ctx context.Context, req api.StatsRequest, send func(api.StatsSample) error) error {
	in, err := d.s.current("Stats")
	if err != nil {
		return err
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(in.ctx, cancel)
	defer stop()
	if err := in.data.Stats(sctx, req, send); err != nil && ctx.Err() == nil {
		return d.s.callError(ctx, sctx, in, "Stats", err)
	}
	return ctx.Err()
}

// PortProvider returns the supervised port provider of the plugin providing the port type
// (from its Info at its last start), and the plugin's name. Calls go to the plugin's current
// process and fail fast with Unavailable while it is not running. ok is false when no
// configured plugin has provided the type.
func (h *Host) PortProvider(portType string) (p api.PortProvider, plugin string, ok bool) {
	s := h.provider(api.ObjectKindPort, portType, api.CapabilityPortProvider)
	if s == nil {
		return nil, "", false
	}
	return portProvider{s}, s.name, true
}

// DataPath returns the supervised data path of the plugin providing the job type.
func (h *Host) DataPath(jobType string) (d api.DataPath, plugin string, ok bool) {
	s := h.provider(api.ObjectKindJob, jobType, api.CapabilityDataPath)
	if s == nil {
		return nil, "", false
	}
	return dataPath{s}, s.name, true
}

func (h *Host) provider(kind api.ObjectKind, typ string, c api.Capability) *sup {
	h.mu.Lock()
	sups := h.ordered()
	h.mu.Unlock()
	for _, s := range sups {
		st := s.status()
		if slices.Contains(st.Capabilities, c) && slices.ContainsFunc(st.Types, func(t api.ObjectType) bool {
			return t.Kind == kind && t.Name == typ
		}) {
			return s
		}
	}
	return nil
}

// Watcher is one plugin's supervised watcher and the interfaces it wants events for.
type Watcher struct {
	Plugin  string
	Filter  api.WatchFilter
	Watcher api.Watcher
}

// Watchers returns the watchers of every plugin that has the capability (from its Info at
// its last start), in config order; calls fail fast while a plugin is not running.
func (h *Host) Watchers() []Watcher {
	h.mu.Lock()
	sups := h.ordered()
	h.mu.Unlock()
	var out []Watcher
	for _, s := range sups {
		st := s.status()
		if slices.Contains(st.Capabilities, api.CapabilityWatcher) {
			out = append(out, Watcher{Plugin: s.name, Filter: st.Watch, Watcher: watcher{s}})
		}
	}
	return out
}

// deadlinePassed reports whether ctx's deadline is behind us. gRPC runs its own timer for the
// deadline it sends, so its DeadlineExceeded can arrive a moment before the context's timer has
// set ctx.Err(): the call still timed out.
func deadlinePassed(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}
