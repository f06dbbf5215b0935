package wire

import (
	"context"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/ovsplane/ovsplane/plugins/api"
	pb "github.com/ovsplane/ovsplane/plugins/api/gen/ovsplane/plugin/v1"
)

// basePlugin is the go-plugin glue of the base service (dispense name NamePlugin). On the
// plugin side Impl is served; on the host side Impl is nil and the dispensed value is a Plugin
// that calls the plugin over gRPC.
type basePlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl api.Plugin
}

var _ plugin.GRPCPlugin = (*basePlugin)(nil)

// GRPCServer registers the base service for Impl.
func (p *basePlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterPluginServer(s, &baseServer{impl: p.Impl})
	return nil
}

// GRPCClient returns a Plugin backed by the connection.
func (p *basePlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &baseClient{c: pb.NewPluginClient(c)}, nil
}

type baseServer struct {
	pb.UnimplementedPluginServer
	impl api.Plugin
}

func (s *baseServer) GetInfo(ctx context.Context, _ *pb.GetInfoRequest) (*pb.GetInfoResponse, error) {
	info, err := s.impl.Info(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	// The services served are what the implementation satisfies, whatever it declares.
	info.Capabilities = CapabilitiesOf(s.impl)
	if len(info.APIVersions) == 0 {
		info.APIVersions = api.SupportedAPIVersions()
	}
	return &pb.GetInfoResponse{Info: infoToProto(info)}, nil
}

func (s *baseServer) GetConfigSchema(ctx context.Context, _ *pb.GetConfigSchemaRequest) (*pb.GetConfigSchemaResponse, error) {
	cs, err := s.impl.ConfigSchema(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.GetConfigSchemaResponse{JsonSchema: cs.JSONSchema, Doc: cs.Doc}, nil
}

func (s *baseServer) Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	if err := s.impl.Configure(ctx, configureFromProto(req)); err != nil {
		return nil, toStatus(err)
	}
	return &pb.ConfigureResponse{}, nil
}

func (s *baseServer) Health(ctx context.Context, _ *pb.HealthRequest) (*pb.HealthResponse, error) {
	h, err := s.impl.Health(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	return healthToProto(h), nil
}

type baseClient struct{ c pb.PluginClient }

var _ api.Plugin = (*baseClient)(nil)

func (c *baseClient) Info(ctx context.Context) (api.Info, error) {
	resp, err := c.c.GetInfo(ctx, &pb.GetInfoRequest{})
	if err != nil {
		return api.Info{}, fromStatus(ctx, "GetInfo", err)
	}
	return infoFromProto(resp.GetInfo()), nil
}

func (c *baseClient) ConfigSchema(ctx context.Context) (api.ConfigSchema, error) {
	resp, err := c.c.GetConfigSchema(ctx, &pb.GetConfigSchemaRequest{})
	if err != nil {
		return api.ConfigSchema{}, fromStatus(ctx, "GetConfigSchema", err)
	}
	return api.ConfigSchema{JSONSchema: resp.GetJsonSchema(), Doc: resp.GetDoc()}, nil
}

func (c *baseClient) Configure(ctx context.Context, req api.ConfigureRequest) error {
	_, err := c.c.Configure(ctx, configureToProto(req))
	return fromStatus(ctx, "Configure", err)
}

func (c *baseClient) Health(ctx context.Context) (api.Health, error) {
	resp, err := c.c.Health(ctx, &pb.HealthRequest{})
	if err != nil {
		return api.Health{}, fromStatus(ctx, "Health", err)
	}
	return healthFromProto(resp), nil
}
