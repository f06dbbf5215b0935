// Command multiportplugin is the test plugin of vswitchd's multi-port object tests
// (vswitchd/multiport_lab_test.go), served by plugins/sdk: port type "mport", whose object of
// name N on bridge B is three internal ports on two bridges — N and N-x on B, N-t on bridge N-br,
// which the object creates. Options bend the shape for the refusal tests: foreign_port=P adds
// a port P on B, foreign_bridge=F names the created bridge F, ports=K asks for K ports on B.
// Every Attach and Detach is appended to events.log in the plugin's data directory
// ("attach N replay=true|false state=S", "detach N state=S"), so a test sees them across
// restarts of the plugin; what it holds (List) is kept in held.json there, as a real plugin's
// host work outlives its process.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

const name = "mport"

type plugin struct {
	mu      sync.Mutex
	dataDir string
	held    map[string]api.OwnedPort // by object name: what List reports
	fresh   int                      // fresh attaches, for the state
}

func (p *plugin) Info(context.Context) (api.Info, error) {
	return api.Info{Name: name, Version: "1.0.0", Description: "test plugin: one object, three ports on two bridges",
		Types: []api.ObjectType{{Name: name, Kind: api.ObjectKindPort, Doc: "three internal ports on two bridges"}}}, nil
}

func (p *plugin) ConfigSchema(context.Context) (api.ConfigSchema, error) {
	return api.ConfigSchema{}, nil
}

func (p *plugin) Configure(_ context.Context, req api.ConfigureRequest) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dataDir = req.Facts.DataDir
	if err := os.MkdirAll(p.dataDir, 0o700); err != nil {
		return err
	}
	if b, err := os.ReadFile(filepath.Join(p.dataDir, "held.json")); err == nil {
		_ = json.Unmarshal(b, &p.held)
	}
	return nil
}

func (p *plugin) Health(context.Context) (api.Health, error) {
	return api.Health{State: api.HealthOK}, nil
}

func (p *plugin) Validate(context.Context, api.PortRequest) ([]api.Problem, error) { return nil, nil }

func internal(port string) api.OVSPort {
	return api.OVSPort{Name: port, Interfaces: []api.OVSInterface{{Name: port, Type: "internal"}}}
}

func (p *plugin) Attach(_ context.Context, req api.PortRequest) (api.Attachment, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	state := req.State
	if state == nil {
		p.fresh++
		state = []byte(req.Name + ":" + strconv.Itoa(p.fresh))
	}
	tb := req.Name + "-br"
	if f := req.Options["foreign_bridge"]; f != "" {
		tb = f
	}
	a := api.Attachment{State: state, Status: "three ports", Endpoints: map[string]string{"bridge": tb},
		Bridges: []api.OVSBridge{{Name: tb, ExternalIDs: map[string]string{"made-by": name}}}}
	a.Ports = []api.OVSPort{internal(req.Name), internal(req.Name + "-x")}
	t := internal(req.Name + "-t")
	t.Bridge = tb
	a.Ports = append(a.Ports, t)
	if f := req.Options["foreign_port"]; f != "" {
		a.Ports = append(a.Ports, internal(f))
	}
	if k, _ := strconv.Atoi(req.Options["ports"]); k > 0 {
		a.Ports = a.Ports[:1]
		for i := 1; i < k; i++ {
			a.Ports = append(a.Ports, internal(fmt.Sprintf("%s-%d", req.Name, i)))
		}
	}
	p.held[req.Name] = api.OwnedPort{Bridge: req.Bridge, Name: req.Name, Type: req.Type, State: state}
	p.save()
	p.record("attach %s replay=%v state=%s", req.Name, req.Replay, state)
	return a, nil
}

func (p *plugin) Detach(_ context.Context, req api.PortRequest) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.held, req.Name)
	p.save()
	p.record("detach %s state=%s", req.Name, req.State)
	return nil
}

func (p *plugin) List(context.Context) ([]api.OwnedPort, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]api.OwnedPort, 0, len(p.held))
	for _, o := range p.held {
		out = append(out, o)
	}
	return out, nil
}

// save writes held.json; p.mu is held.
func (p *plugin) save() {
	b, _ := json.Marshal(p.held)
	_ = os.WriteFile(filepath.Join(p.dataDir, "held.json"), b, 0o600)
}

// record appends one line to events.log; p.mu is held.
func (p *plugin) record(format string, args ...any) {
	f, err := os.OpenFile(filepath.Join(p.dataDir, "events.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, format+"\n", args...)
}

func main() {
	sdk.Serve(&plugin{held: map[string]api.OwnedPort{}})
}
