// Command testplugin is the plugin the host's tests run as a real process. Its name is its
// argv[0] (the host passes the configured name); its behaviour comes from its config and the
// options of each port:
//
//	config: {"crash_on_configure": true, "other_config": {...}, "dpdk_extra": [...], "bad_cookie": true}
//	port options: mode=env (Endpoints: the environment), mode=hang (never answers),
//	              mode=slow with sleep=DURATION, mode=crash (exits)
//
// It writes a line "<pid>" to ./started when it starts and "<pid> <bridge>/<port> replay=<bool>"
// to ./attach.log on every Attach (its working directory is its data dir). With
// TESTPLUGIN_INFO_NAME in its environment its Info.Name is that, not its argv[0].
//
// Built with -ldflags "-X main.protocolVersion=2" it serves protocol version 2 only.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	plugin "github.com/hashicorp/go-plugin"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/internal/wire"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

var protocolVersion = "1"

type config struct {
	CrashOnConfigure bool              `json:"crash_on_configure"`
	OtherConfig      map[string]string `json:"other_config"`
	DPDKExtra        []string          `json:"dpdk_extra"`
	BadCookie        bool              `json:"bad_cookie"`
}

type testPlugin struct {
	name     string
	infoName string // Info.Name
	log      *slog.Logger
	mu       sync.Mutex
	cfg      config
}

func (p *testPlugin) Info(context.Context) (api.Info, error) {
	return api.Info{
		Name:    p.infoName,
		Version: "1.2.3",
		Types:   []api.ObjectType{{Name: p.name + "-port", Kind: api.ObjectKindPort}},
	}, nil
}

func (p *testPlugin) ConfigSchema(context.Context) (api.ConfigSchema, error) {
	return api.ConfigSchema{}, nil
}

func (p *testPlugin) Configure(_ context.Context, req api.ConfigureRequest) error {
	var c config
	if err := json.Unmarshal(req.Config, &c); err != nil {
		return api.Errorf(api.InvalidArgument, "config: %v", err)
	}
	if c.CrashOnConfigure {
		fmt.Fprintln(os.Stderr, "crashing on purpose")
		os.Exit(3)
	}
	p.mu.Lock()
	p.cfg = c
	p.mu.Unlock()
	p.log.Info("configured", "answer", 42, "api", req.APIVersion)
	fmt.Fprintln(os.Stderr, "raw line from "+p.name)
	return nil
}

func (p *testPlugin) Health(context.Context) (api.Health, error) {
	return api.Health{State: api.HealthOK}, nil
}

func (p *testPlugin) Validate(context.Context, api.PortRequest) ([]api.Problem, error) {
	return nil, nil
}

func (p *testPlugin) Attach(_ context.Context, req api.PortRequest) (api.Attachment, error) {
	f, err := os.OpenFile("attach.log", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		fmt.Fprintf(f, "%d %s/%s replay=%t\n", os.Getpid(), req.Bridge, req.Name, req.Replay)
		_ = f.Close()
	}
	a := api.Attachment{Ports: []api.OVSPort{sdk.SinglePort(req.Name, "", nil)}, State: []byte(`{"ok":true}`), Status: "attached"}
	switch req.Options["mode"] {
	case "env":
		a.Endpoints = map[string]string{}
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			a.Endpoints[k] = v
		}
	case "hang":
		select {}
	case "slow":
		d, _ := time.ParseDuration(req.Options["sleep"])
		time.Sleep(d)
	case "crash":
		os.Exit(2)
	case "nul-name": // an answer the host's checks refuse, after the "host work"
		a.Ports[0].Interfaces[0].Name = req.Name + "\x00"
	}
	return a, nil
}

func (p *testPlugin) Detach(context.Context, api.PortRequest) error { return nil }
func (p *testPlugin) List(context.Context) ([]api.OwnedPort, error) { return nil, nil }
func (p *testPlugin) OnPortEvents(context.Context, api.PortEventBatch) ([]api.InterfaceChange, error) {
	return nil, nil
}

func (p *testPlugin) Contribute(context.Context) (api.GlobalConfig, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return api.GlobalConfig{OtherConfig: p.cfg.OtherConfig, DPDKExtra: p.cfg.DPDKExtra}, nil
}

func (p *testPlugin) Flows(_ context.Context, b api.BridgeFacts) (api.FlowSet, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fl := api.Flow{Table: 0, Priority: 10, Match: "in_port=1", Actions: "drop"}
	if p.cfg.BadCookie {
		fl.Cookie = 1
	}
	return api.FlowSet{Flows: []api.Flow{fl}}, nil
}

func main() {
	name := filepath.Base(os.Args[0])
	if f, err := os.OpenFile("started", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
		fmt.Fprintf(f, "%d\n", os.Getpid())
		_ = f.Close()
	}
	impl := &testPlugin{name: name, infoName: name, log: sdk.NewLogger(os.Stderr, slog.LevelInfo)}
	if n := os.Getenv("TESTPLUGIN_INFO_NAME"); n != "" {
		impl.infoName = n
	}
	if protocolVersion == "1" {
		sdk.Serve(impl)
		return
	}
	// Another protocol version: what a plugin built against a future contract would offer.
	hs := wire.Handshake()
	hs.ProtocolVersion = 2
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  hs,
		VersionedPlugins: map[int]plugin.PluginSet{2: wire.ServerPluginSets(impl)[wire.ProtocolVersion]},
		GRPCServer:       plugin.DefaultGRPCServer,
	})
}
