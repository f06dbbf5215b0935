package daemoncmd

import (
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/vswitchd/config"
)

// checkPort checks a port vsctl is about to send to the daemon with the daemon's own function
// (config.ValidatePortWith, which applies package limits): the same refusals and messages,
// without a round trip and without sending bytes the daemon would refuse. Every interface type
// is accepted here: the daemon knows its plugins' types.
func checkPort(bridge string, p model.Port) error {
	return config.ValidatePortWith(bridge, p, func(string) bool { return true })
}
