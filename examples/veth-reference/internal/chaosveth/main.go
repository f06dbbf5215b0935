// Command chaosveth is the sample veth plugin with a test barrier, built only by ovsplane's
// chaos tests (test/integration): not part of the sample to copy. It is vethplugin.Plugin
// unchanged, except that its configuration may carry one more key,
//
//	barrier: {dir: /tmp/…, hold: [vk1, vk4]}
//
// and the first Attach of each port named in hold does the port's host work (the veth pair
// and its namespace exist), records that it is inside the plugin in dir/<port>.inside (the
// plugin's pid) and then holds the call until its context ends — in a chaos test, until the
// plugin is killed, so the call dies inside the plugin, after the host work and before the
// reply. A held call that ends without being killed records why in dir/<port>.left. Later
// Attach calls of a held port (the host's replay, a retry) pass: the .inside file says it was
// held once.
package main

import (
	"log/slog"
	"os"

	"github.com/ovsplane/ovsplane/examples/veth-reference/internal/veth"
	"github.com/ovsplane/ovsplane/examples/veth-reference/internal/vethplugin"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

func main() {
	log := sdk.NewLogger(os.Stderr, slog.LevelInfo) // standard output is go-plugin's
	newLinks := func(hostNetns string) (vethplugin.Links, error) {
		return veth.New(veth.Config{Owner: vethplugin.Name, HostNetns: hostNetns, Logger: log})
	}
	inner, err := vethplugin.New(vethplugin.Options{NewLinks: newLinks, Logger: log})
	if err != nil {
		log.Error("cannot start", "err", err)
		os.Exit(1)
	}
	defer inner.Close()
	sdk.Serve(&plugin{Plugin: inner, log: log})
}
