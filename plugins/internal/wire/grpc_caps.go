package wire

import (
	"context"
	"errors"
	"io"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/ovsplane/ovsplane/plugins/api"
	pb "github.com/ovsplane/ovsplane/plugins/api/gen/ovsplane/plugin/v1"
)

// watcherPlugin is the go-plugin glue of the Watcher capability (NameWatcher).
type watcherPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl api.Watcher
}

// GRPCServer registers the Watcher service for Impl.
func (p *watcherPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterWatcherServer(s, &watcherServer{impl: p.Impl})
	return nil
}

// GRPCClient returns a Watcher backed by the connection.
func (p *watcherPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &watcherClient{c: pb.NewWatcherClient(c)}, nil
}

type watcherServer struct {
	pb.UnimplementedWatcherServer
	impl api.Watcher
}

func (s *watcherServer) OnPortEvents(ctx context.Context, req *pb.PortEventsRequest) (*pb.PortEventsResponse, error) {
	cs, err := s.impl.OnPortEvents(ctx, eventsFromProto(req))
	if err != nil {
		return nil, toStatus(err)
	}
	return changesToProto(cs), nil
}

type watcherClient struct{ c pb.WatcherClient }

func (c *watcherClient) OnPortEvents(ctx context.Context, batch api.PortEventBatch) ([]api.InterfaceChange, error) {
	resp, err := c.c.OnPortEvents(ctx, eventsToProto(batch))
	if err != nil {
		return nil, fromStatus(ctx, "OnPortEvents", err)
	}
	return changesFromProto(resp), nil
}

// globalConfigPlugin is the go-plugin glue of the GlobalConfigContributor capability
// (NameGlobalConfig).
type globalConfigPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl api.GlobalConfigContributor
}

// GRPCServer registers the GlobalConfig service for Impl.
func (p *globalConfigPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterGlobalConfigServer(s, &globalServer{impl: p.Impl})
	return nil
}

// GRPCClient returns a GlobalConfigContributor backed by the connection.
func (p *globalConfigPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &globalClient{c: pb.NewGlobalConfigClient(c)}, nil
}

type globalServer struct {
	pb.UnimplementedGlobalConfigServer
	impl api.GlobalConfigContributor
}

func (s *globalServer) Contribute(ctx context.Context, _ *pb.ContributeRequest) (*pb.ContributeResponse, error) {
	g, err := s.impl.Contribute(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.ContributeResponse{OtherConfig: g.OtherConfig, DpdkExtra: g.DPDKExtra}, nil
}

type globalClient struct{ c pb.GlobalConfigClient }

func (c *globalClient) Contribute(ctx context.Context) (api.GlobalConfig, error) {
	resp, err := c.c.Contribute(ctx, &pb.ContributeRequest{})
	if err != nil {
		return api.GlobalConfig{}, fromStatus(ctx, "Contribute", err)
	}
	return api.GlobalConfig{OtherConfig: resp.GetOtherConfig(), DPDKExtra: resp.GetDpdkExtra()}, nil
}

// flowProgramPlugin is the go-plugin glue of the FlowProgrammer capability (NameFlowProgram).
type flowProgramPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl api.FlowProgrammer
}

// GRPCServer registers the FlowProgram service for Impl.
func (p *flowProgramPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterFlowProgramServer(s, &flowServer{impl: p.Impl})
	return nil
}

// GRPCClient returns a FlowProgrammer backed by the connection.
func (p *flowProgramPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &flowClient{c: pb.NewFlowProgramClient(c)}, nil
}

type flowServer struct {
	pb.UnimplementedFlowProgramServer
	impl api.FlowProgrammer
}

func (s *flowServer) Flows(ctx context.Context, req *pb.FlowsRequest) (*pb.FlowsResponse, error) {
	fs, err := s.impl.Flows(ctx, bridgeFromProto(req.GetBridge()))
	if err != nil {
		return nil, toStatus(err)
	}
	return flowSetToProto(fs), nil
}

type flowClient struct{ c pb.FlowProgramClient }

func (c *flowClient) Flows(ctx context.Context, bridge api.BridgeFacts) (api.FlowSet, error) {
	resp, err := c.c.Flows(ctx, &pb.FlowsRequest{Bridge: bridgeToProto(bridge)})
	if err != nil {
		return api.FlowSet{}, fromStatus(ctx, "Flows", err)
	}
	return flowSetFromProto(resp)
}

// dataPathPlugin is the go-plugin glue of the DataPath capability (NameDataPath).
type dataPathPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl api.DataPath
}

// GRPCServer registers the DataPath service for Impl.
func (p *dataPathPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterDataPathServer(s, &dataPathServer{impl: p.Impl})
	return nil
}

// GRPCClient returns a DataPath backed by the connection.
func (p *dataPathPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &dataPathClient{c: pb.NewDataPathClient(c)}, nil
}

type dataPathServer struct {
	pb.UnimplementedDataPathServer
	impl api.DataPath
}

func (s *dataPathServer) Start(ctx context.Context, req *pb.StartJobRequest) (*pb.StartJobResponse, error) {
	st, err := s.impl.Start(ctx, api.Job{Name: req.GetName(), Type: req.GetType(), Config: req.GetConfig()})
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.StartJobResponse{Status: st}, nil
}

func (s *dataPathServer) Stop(ctx context.Context, req *pb.StopJobRequest) (*pb.StopJobResponse, error) {
	if err := s.impl.Stop(ctx, req.GetName()); err != nil {
		return nil, toStatus(err)
	}
	return &pb.StopJobResponse{}, nil
}

func (s *dataPathServer) Stats(req *pb.StatsRequest, stream pb.DataPath_StatsServer) error {
	ctx := stream.Context()
	err := s.impl.Stats(ctx, api.StatsRequest{Jobs: req.GetJobs(), IntervalMillis: req.GetIntervalMs()},
		func(sample api.StatsSample) error { return stream.Send(sampleToProto(sample)) })
	switch {
	case err != nil && errors.Is(ctx.Err(), context.Canceled):
		// The host ended the stream: that is the normal end, not a plugin failure.
		return nil
	case err != nil && ctx.Err() != nil:
		// The call's deadline passed. The server sees it a moment before the host does: say
		// so, or the host would read an early end of stream.
		return toStatus(&api.Error{Code: api.DeadlineExceeded, Message: ctx.Err().Error()})
	}
	return toStatus(err)
}

type dataPathClient struct{ c pb.DataPathClient }

func (c *dataPathClient) Start(ctx context.Context, job api.Job) (string, error) {
	resp, err := c.c.Start(ctx, &pb.StartJobRequest{Name: job.Name, Type: job.Type, Config: job.Config})
	if err != nil {
		return "", fromStatus(ctx, "Start", err)
	}
	return resp.GetStatus(), nil
}

func (c *dataPathClient) Stop(ctx context.Context, name string) error {
	_, err := c.c.Stop(ctx, &pb.StopJobRequest{Name: name})
	return fromStatus(ctx, "Stop", err)
}

// Stats receives samples and hands each to send until the stream ends: it returns nil when the
// plugin ended it while ctx was live, an *Error with ctx's code (DeadlineExceeded, Canceled)
// when ctx ended, and send's error as it is when send failed.
func (c *dataPathClient) Stats(ctx context.Context, req api.StatsRequest, send func(api.StatsSample) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the stream when send fails
	stream, err := c.c.Stats(ctx, &pb.StatsRequest{Jobs: req.Jobs, IntervalMs: req.IntervalMillis})
	if err != nil {
		return fromStatus(ctx, "Stats", err)
	}
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			if ctxErr := ctx.Err(); ctxErr != nil {
				// The plugin ended the stream because ctx ended.
				return &api.Error{Code: api.CodeOf(ctxErr), Message: ctxErr.Error()}
			}
			return nil
		}
		if err != nil {
			return fromStatus(ctx, "Stats", err)
		}
		if err := send(sampleFromProto(m)); err != nil {
			return err
		}
	}
}

var (
	_ api.Watcher                 = (*watcherClient)(nil)
	_ api.GlobalConfigContributor = (*globalClient)(nil)
	_ api.FlowProgrammer          = (*flowClient)(nil)
	_ api.DataPath                = (*dataPathClient)(nil)
	_ plugin.GRPCPlugin           = (*watcherPlugin)(nil)
	_ plugin.GRPCPlugin           = (*globalConfigPlugin)(nil)
	_ plugin.GRPCPlugin           = (*flowProgramPlugin)(nil)
	_ plugin.GRPCPlugin           = (*dataPathPlugin)(nil)
)
