package apiserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"connectrpc.com/connect"

	"github.com/ovsplane/ovsplane/api/convert"
	v1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/model/limits"
)

func (sv *service) ApplyBridge(ctx context.Context, req *connect.Request[v1.ApplyBridgeRequest]) (*connect.Response[v1.ApplyBridgeResponse], error) {
	if err := required("bridge.name", req.Msg.GetBridge().GetName()); err != nil {
		return nil, err
	}
	info, err := sv.s.b.ApplyBridge(ctx, convert.BridgeFromProto(req.Msg.GetBridge()))
	if err != nil {
		return nil, toConnect(ctx, err)
	}
	return connect.NewResponse(&v1.ApplyBridgeResponse{Bridge: convert.BridgeInfoToProto(info)}), nil
}

func (sv *service) GetBridge(ctx context.Context, req *connect.Request[v1.GetBridgeRequest]) (*connect.Response[v1.GetBridgeResponse], error) {
	if err := required("name", req.Msg.GetName()); err != nil {
		return nil, err
	}
	info, err := sv.s.b.Bridge(req.Msg.GetName())
	if err != nil {
		return nil, toConnect(ctx, err)
	}
	return connect.NewResponse(&v1.GetBridgeResponse{Bridge: convert.BridgeInfoToProto(info)}), nil
}

func (sv *service) ListBridges(context.Context, *connect.Request[v1.ListBridgesRequest]) (*connect.Response[v1.ListBridgesResponse], error) {
	resp := &v1.ListBridgesResponse{}
	for _, b := range sv.s.b.Bridges() {
		resp.Bridges = append(resp.Bridges, convert.BridgeInfoToProto(b))
	}
	return connect.NewResponse(resp), nil
}

func (sv *service) DeleteBridge(ctx context.Context, req *connect.Request[v1.DeleteBridgeRequest]) (*connect.Response[v1.DeleteBridgeResponse], error) {
	if err := required("name", req.Msg.GetName()); err != nil {
		return nil, err
	}
	if err := sv.s.b.DeleteBridge(ctx, req.Msg.GetName()); err != nil {
		return nil, toConnect(ctx, err)
	}
	return connect.NewResponse(&v1.DeleteBridgeResponse{}), nil
}

func (sv *service) ApplyPort(ctx context.Context, req *connect.Request[v1.ApplyPortRequest]) (*connect.Response[v1.ApplyPortResponse], error) {
	if err := required("bridge", req.Msg.GetBridge()); err != nil {
		return nil, err
	}
	if err := required("port.name", req.Msg.GetPort().GetName()); err != nil {
		return nil, err
	}
	// Before the conversion: 100,000 interfaces are refused without copying them (the
	// Backend checks every other bound of package limits).
	if err := limits.CheckInterfaces(limits.Object(limits.Port, req.Msg.GetPort().GetName()), len(req.Msg.GetPort().GetInterfaces())); err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	info, err := sv.s.b.ApplyPort(ctx, req.Msg.GetBridge(), convert.PortFromProto(req.Msg.GetPort()))
	if err != nil {
		return nil, toConnect(ctx, err)
	}
	return connect.NewResponse(&v1.ApplyPortResponse{Port: convert.PortInfoToProto(info)}), nil
}

func (sv *service) GetPort(ctx context.Context, req *connect.Request[v1.GetPortRequest]) (*connect.Response[v1.GetPortResponse], error) {
	if err := required("name", req.Msg.GetName()); err != nil {
		return nil, err
	}
	info, err := sv.s.b.Port(req.Msg.GetName())
	if err != nil {
		return nil, toConnect(ctx, err)
	}
	return connect.NewResponse(&v1.GetPortResponse{Port: convert.PortInfoToProto(info)}), nil
}

func (sv *service) ListPorts(_ context.Context, req *connect.Request[v1.ListPortsRequest]) (*connect.Response[v1.ListPortsResponse], error) {
	resp := &v1.ListPortsResponse{}
	for _, p := range sv.s.b.Ports(req.Msg.GetBridge()) {
		resp.Ports = append(resp.Ports, convert.PortInfoToProto(p))
	}
	return connect.NewResponse(resp), nil
}

func (sv *service) DeletePort(ctx context.Context, req *connect.Request[v1.DeletePortRequest]) (*connect.Response[v1.DeletePortResponse], error) {
	if err := required("name", req.Msg.GetName()); err != nil {
		return nil, err
	}
	if err := sv.s.b.DeletePort(ctx, req.Msg.GetName()); err != nil {
		return nil, toConnect(ctx, err)
	}
	return connect.NewResponse(&v1.DeletePortResponse{}), nil
}

func (sv *service) ListStatus(context.Context, *connect.Request[v1.ListStatusRequest]) (*connect.Response[v1.ListStatusResponse], error) {
	return connect.NewResponse(&v1.ListStatusResponse{Statuses: convert.StatusesToProto(sv.s.b.Status()),
		Watched: convert.WatchedStatusesToProto(sv.s.b.WatchedStatuses())}), nil
}

// WaitReady also ends when the server stops (Unavailable). A Backend error that is none of the
// sentinels while a listed object is in the error state is reported as Aborted.
func (sv *service) WaitReady(ctx context.Context, req *connect.Request[v1.WaitReadyRequest]) (*connect.Response[v1.WaitReadyResponse], error) {
	keys := req.Msg.GetKeys()
	if len(keys) == 0 {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New(`keys: at least one object key required (like "port/vhu1")`))
	}
	for i, k := range keys {
		if !validKey(k) {
			return nil, connect.NewError(connect.CodeInvalidArgument,
				fmt.Errorf(`keys[%d]: %q is not KIND/NAME (kind bridge, port or interface, like "port/vhu1")`, i, k))
		}
	}
	wctx, cancel := sv.s.untilStop(ctx)
	defer cancel()
	statuses, err := sv.s.b.WaitReady(wctx, keys)
	if err != nil {
		if ctx.Err() == nil && sv.s.isStopping() {
			// Through toConnect like every Unavailable, so it carries the retry hint.
			return nil, toConnect(ctx, fmt.Errorf("%w: ovsplaned is shutting down; wait again once it is back", model.ErrUnavailable))
		}
		if statuses == nil {
			statuses = sv.s.b.Status()
		}
		if inError(statuses, keys) != "" && classify(ctx, err) == connect.CodeInternal {
			return nil, connect.NewError(connect.CodeAborted, err)
		}
		return nil, toConnect(ctx, err)
	}
	return connect.NewResponse(&v1.WaitReadyResponse{Statuses: convert.StatusesToProto(statuses)}), nil
}

func validKey(k string) bool {
	for _, kind := range []model.Kind{model.KindBridge, model.KindPort, model.KindInterface, model.KindNetFlow, model.KindIPFIX, model.KindSFlow, model.KindCollectorSet, model.KindQoS, model.KindMirror} {
		if name, ok := strings.CutPrefix(k, string(kind)+"/"); ok && name != "" {
			return true
		}
	}
	return false
}

// inError returns the key of the first status among keys in the error state, or "".
func inError(statuses []model.Status, keys []string) string {
	for _, st := range statuses {
		if st.State == model.StateError && slices.Contains(keys, st.Key()) {
			return st.Key()
		}
	}
	return ""
}

// Watch sends the snapshot, then every change, until the client goes, the server stops (the
// stream ends cleanly) or the Backend drops a subscriber that fell behind (ResourceExhausted).
func (sv *service) Watch(ctx context.Context, _ *connect.Request[v1.WatchRequest], stream *connect.ServerStream[v1.WatchResponse]) error {
	wctx, cancel := sv.s.untilStop(ctx)
	defer cancel()
	snapshot, changes := sv.s.b.Subscribe(wctx)
	if err := stream.Send(&v1.WatchResponse{Snapshot: true, Statuses: convert.StatusesToProto(snapshot)}); err != nil {
		return err
	}
	for {
		select {
		case <-wctx.Done():
			return sv.watchEnd(ctx)
		case batch, ok := <-changes:
			if !ok {
				if wctx.Err() != nil {
					return sv.watchEnd(ctx)
				}
				return connect.NewError(connect.CodeResourceExhausted,
					errors.New("watch fell too far behind the daemon's changes and was dropped; watch again (the new snapshot has the current state)"))
			}
			if err := stream.Send(&v1.WatchResponse{Statuses: convert.StatusesToProto(batch)}); err != nil {
				return err
			}
		}
	}
}

func (sv *service) watchEnd(ctx context.Context) error {
	if ctx.Err() != nil {
		return toConnect(ctx, ctx.Err())
	}
	return nil // the server stops: a clean end of stream
}

func (sv *service) Reload(ctx context.Context, _ *connect.Request[v1.ReloadRequest]) (*connect.Response[v1.ReloadResponse], error) {
	if err := sv.s.b.Reload(ctx); err != nil {
		return nil, toConnect(ctx, err)
	}
	return connect.NewResponse(&v1.ReloadResponse{}), nil
}

func (sv *service) Health(ctx context.Context, _ *connect.Request[v1.HealthRequest]) (*connect.Response[v1.HealthResponse], error) {
	return connect.NewResponse(convert.HealthToProto(sv.s.b.Health(ctx), APIVersion)), nil
}

func (sv *service) ListPlugins(context.Context, *connect.Request[v1.ListPluginsRequest]) (*connect.Response[v1.ListPluginsResponse], error) {
	return connect.NewResponse(&v1.ListPluginsResponse{Plugins: convert.PluginsToProto(sv.s.b.Plugins())}), nil
}
