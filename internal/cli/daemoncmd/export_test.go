package daemoncmd

import (
	"context"
	"fmt"

	"github.com/ovsplane/ovsplane/model"
)

// EnvAddr is envAddr, for the test that checks it against api/client's.
const EnvAddr = envAddr

// ApplyThenGet sends b and p to the daemon at addr through apiClient (ApplyBridge, ApplyPort),
// then reads the port back (GetPort) and returns it as model values; it also checks that
// GetPort of a name the daemon does not know is the not_found answer.
func ApplyThenGet(ctx context.Context, addr string, b model.Bridge, p model.Port) (model.PortInfo, error) {
	c, err := dialAPI(addr, model.TLS{})
	if err != nil {
		return model.PortInfo{}, err
	}
	defer c.Close()
	if err := c.applyBridge(ctx, b); err != nil {
		return model.PortInfo{}, fmt.Errorf("applyBridge: %w", err)
	}
	if _, err := c.applyPort(ctx, b.Name, p); err != nil {
		return model.PortInfo{}, fmt.Errorf("applyPort: %w", err)
	}
	if _, err := c.getPort(ctx, "no-such-port"); !isNotFound(err) {
		return model.PortInfo{}, fmt.Errorf("getPort of an unknown port: %v, want not_found", err)
	}
	got, err := c.getPort(ctx, p.Name)
	if err != nil {
		return model.PortInfo{}, fmt.Errorf("getPort: %w", err)
	}
	return model.PortInfo{Bridge: got.Bridge, Spec: portFromWire(got.Spec)}, nil
}
