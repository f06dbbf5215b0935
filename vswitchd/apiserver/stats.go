package apiserver

import (
	"context"

	"connectrpc.com/connect"

	"github.com/ovsplane/ovsplane/api/convert"
	v1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
)

// PluginStats returns one plugin's data-path jobs with their state and latest sample (see
// Backend.PluginStats); NOT_FOUND for a plugin the configuration does not list.
func (sv *service) PluginStats(ctx context.Context, req *connect.Request[v1.PluginStatsRequest]) (*connect.Response[v1.PluginStatsResponse], error) {
	if err := required("plugin", req.Msg.GetPlugin()); err != nil {
		return nil, err
	}
	jobs, err := sv.s.b.PluginStats(req.Msg.GetPlugin())
	if err != nil {
		return nil, toConnect(ctx, err)
	}
	return connect.NewResponse(&v1.PluginStatsResponse{Jobs: convert.JobsToProto(jobs)}), nil
}
