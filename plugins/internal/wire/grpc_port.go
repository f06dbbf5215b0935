package wire

import (
	"context"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/ovsplane/ovsplane/plugins/api"
	pb "github.com/ovsplane/ovsplane/plugins/api/gen/ovsplane/plugin/v1"
)

// portProviderPlugin is the go-plugin glue of the PortProvider capability (NamePortProvider).
type portProviderPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl api.PortProvider
}

var _ plugin.GRPCPlugin = (*portProviderPlugin)(nil)

// GRPCServer registers the PortProvider service for Impl.
func (p *portProviderPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterPortProviderServer(s, &portServer{impl: p.Impl})
	return nil
}

// GRPCClient returns a PortProvider backed by the connection.
func (p *portProviderPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &portClient{c: pb.NewPortProviderClient(c)}, nil
}

type portServer struct {
	pb.UnimplementedPortProviderServer
	impl api.PortProvider
}

func (s *portServer) Validate(ctx context.Context, req *pb.ValidateRequest) (*pb.ValidateResponse, error) {
	problems, err := s.impl.Validate(ctx, portRequestFromProto(req.GetPort()))
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.ValidateResponse{Problems: problemsToProto(problems)}, nil
}

func (s *portServer) Attach(ctx context.Context, req *pb.AttachRequest) (*pb.AttachResponse, error) {
	a, err := s.impl.Attach(ctx, portRequestFromProto(req.GetPort()))
	if err != nil {
		return nil, toStatus(err)
	}
	return attachmentToProto(a), nil
}

func (s *portServer) Detach(ctx context.Context, req *pb.DetachRequest) (*pb.DetachResponse, error) {
	if err := s.impl.Detach(ctx, portRequestFromProto(req.GetPort())); err != nil {
		return nil, toStatus(err)
	}
	return &pb.DetachResponse{}, nil
}

func (s *portServer) List(ctx context.Context, _ *pb.ListRequest) (*pb.ListResponse, error) {
	ps, err := s.impl.List(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	return ownedToProto(ps), nil
}

type portClient struct{ c pb.PortProviderClient }

var _ api.PortProvider = (*portClient)(nil)

func (c *portClient) Validate(ctx context.Context, req api.PortRequest) ([]api.Problem, error) {
	resp, err := c.c.Validate(ctx, &pb.ValidateRequest{Port: portRequestToProto(req)})
	if err != nil {
		return nil, fromStatus(ctx, "Validate", err)
	}
	return problemsFromProto(resp.GetProblems()), nil
}

func (c *portClient) Attach(ctx context.Context, req api.PortRequest) (api.Attachment, error) {
	resp, err := c.c.Attach(ctx, &pb.AttachRequest{Port: portRequestToProto(req)})
	if err != nil {
		return api.Attachment{}, fromStatus(ctx, "Attach", err)
	}
	return attachmentFromProto(resp), nil
}

func (c *portClient) Detach(ctx context.Context, req api.PortRequest) error {
	_, err := c.c.Detach(ctx, &pb.DetachRequest{Port: portRequestToProto(req)})
	return fromStatus(ctx, "Detach", err)
}

func (c *portClient) List(ctx context.Context) ([]api.OwnedPort, error) {
	resp, err := c.c.List(ctx, &pb.ListRequest{})
	if err != nil {
		return nil, fromStatus(ctx, "List", err)
	}
	return ownedFromProto(resp), nil
}
