package sdk

import (
	"encoding/json"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// Interface returns an interface row of the given type and options.
func Interface(name, ifType string, options map[string]string) api.OVSInterface {
	return api.OVSInterface{Name: name, Type: ifType, Options: options}
}

// Port returns a port row with the interfaces (two or more make a bond).
func Port(name string, ifaces ...api.OVSInterface) api.OVSPort {
	return api.OVSPort{Name: name, Interfaces: ifaces}
}

// SinglePort returns the common shape: one port on the request's bridge with one interface,
// both named name, e.g. SinglePort("vdpa0", "dpdk", map[string]string{"dpdk-devargs":
// "0000:3b:00.0,representor=vf3"}).
func SinglePort(name, ifType string, options map[string]string) api.OVSPort {
	return Port(name, Interface(name, ifType, options))
}

// EncodeState encodes v as JSON for api.Attachment.State. It fails with code Internal when the
// result is larger than api.MaxStateSize: keep state to what Detach and a replay need.
func EncodeState(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, api.Errorf(api.Internal, "encode plugin state: %w", err)
	}
	if len(b) > api.MaxStateSize {
		return nil, api.Errorf(api.Internal, "plugin state is %d bytes, more than %d", len(b), api.MaxStateSize)
	}
	return b, nil
}

// DecodeState decodes state written by EncodeState into v. It returns false, leaving v alone,
// when state is empty (a port never attached); undecodable state is an error with code
// FailedPrecondition naming the port.
func DecodeState(req api.PortRequest, v any) (bool, error) {
	if len(req.State) == 0 {
		return false, nil
	}
	if err := json.Unmarshal(req.State, v); err != nil {
		return false, api.Errorf(api.FailedPrecondition, "port %s/%s: stored plugin state: %v", req.Bridge, req.Name, err)
	}
	return true, nil
}
