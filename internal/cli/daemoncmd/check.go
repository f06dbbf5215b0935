package daemoncmd

import (
	"github.com/ovsplane/ovsplane/internal/desired"
	"github.com/ovsplane/ovsplane/model"
)

// checkPort checks a port vsctl is about to send to the daemon with the daemon's own function
// (desired.ValidatePortWith, which applies package limits): the same refusals and messages,
// without a round trip and without sending bytes the daemon would refuse. Every interface type
// is accepted here: the daemon knows its plugins' types.
func checkPort(bridge string, p model.Port) error {
	return desired.ValidatePortWith(bridge, p, func(string) bool { return true })
}
