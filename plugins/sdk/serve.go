package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/internal/wire"
)

// DebugEnv is the environment variable that makes Serve run in debug mode when set to 1.
const DebugEnv = "OVSPLANE_PLUGIN_DEBUG"

// ServeConfig tunes ServeWith. The zero value serves under the host.
type ServeConfig struct {
	// Stderr receives go-plugin's own log lines (hclog JSON, which the host parses like the
	// plugin's). nil means os.Stderr as it was when ServeWith was called.
	Stderr io.Writer
	// Debug serves without a host, for running the plugin by hand or under a debugger: the
	// plugin listens on a unix socket, prints `OVSPLANE_PLUGIN_REATTACH='{...}'` (the reattach line)
	// to DebugOut for the host to attach to, and serves until SIGINT or SIGTERM.
	Debug bool
	// DebugOut receives the reattach line in debug mode; nil means os.Stdout.
	DebugOut io.Writer
}

// Serve serves impl to the host that started this process and returns when the host is done
// with it. It serves the base service and every capability impl implements (a type embedding
// Base and declaring Info, Validate and Attach is a port provider), at plugin protocol version
// 1. With OVSPLANE_PLUGIN_DEBUG=1 in the environment it serves in debug mode
// (ServeConfig.Debug). Call it last in main, after nothing was written to standard output. Like go-plugin's Serve it exits the process on a fatal error: an invalid
// Info (api.ValidateInfo) or a binary run by hand outside debug mode.
func Serve(impl api.Plugin) {
	ServeWith(impl, ServeConfig{Debug: os.Getenv(DebugEnv) == "1"})
}

// ServeWith is Serve with explicit settings.
func ServeWith(impl api.Plugin, cfg ServeConfig) {
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	if cfg.DebugOut == nil {
		cfg.DebugOut = os.Stdout
	}
	info, err := checkInfo(impl)
	if err != nil {
		fmt.Fprintf(cfg.Stderr, "ovsplane plugin: %v\n", err)
		os.Exit(1)
	}
	sc := &plugin.ServeConfig{
		HandshakeConfig:  wire.Handshake(),
		VersionedPlugins: wire.ServerPluginSets(impl),
		GRPCServer:       plugin.DefaultGRPCServer,
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:       "go-plugin",
			Level:      hclog.Info,
			Output:     cfg.Stderr,
			JSONFormat: true,
		}),
	}
	if !cfg.Debug {
		go exitWithParent(cfg.Stderr, os.Getppid(), os.Getppid, parentPoll, func() { os.Exit(3) })
		plugin.Serve(sc)
		return
	}
	serveDebug(sc, info.Name, cfg)
}

// checkInfo asks impl for its Info, completed as the server shim completes it, and validates it.
func checkInfo(impl api.Plugin) (api.Info, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := impl.Info(ctx)
	if err != nil {
		return api.Info{}, fmt.Errorf("info: %w", err)
	}
	info.Capabilities = wire.CapabilitiesOf(impl)
	if err := api.ValidateInfo(info); err != nil {
		return info, fmt.Errorf("%w%s", err, missingMethods(impl, info))
	}
	return info, nil
}

// missingMethods names what impl lacks to serve the types its Info lists, for the error of an
// Info that declares a port or job type without the capability: "" when nothing is missing.
func missingMethods(impl api.Plugin, info api.Info) string {
	var port, job bool
	for _, t := range info.Types {
		port = port || t.Kind == api.ObjectKindPort
		job = job || t.Kind == api.ObjectKindJob
	}
	var hint string
	if _, ok := impl.(api.PortProvider); port && !ok {
		hint += fmt.Sprintf(" (%T serves no port type: it needs Validate, Attach, Detach and List;"+
			" embed sdk.Base for Detach and List)", impl)
	}
	if _, ok := impl.(api.DataPath); job && !ok {
		hint += fmt.Sprintf(" (%T serves no job type: it needs Start, Stop and Stats)", impl)
	}
	return hint
}

func serveDebug(sc *plugin.ServeConfig, name string, cfg ServeConfig) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	reattach := make(chan *plugin.ReattachConfig, 1)
	closed := make(chan struct{})
	sc.Test = &plugin.ServeTestConfig{Context: ctx, ReattachConfigCh: reattach, CloseCh: closed}
	go plugin.Serve(sc)
	select {
	case rc := <-reattach:
		line, err := json.Marshal(wire.ReattachOf(name, rc))
		if err != nil {
			fmt.Fprintf(cfg.Stderr, "ovsplane plugin: %v\n", err)
			return
		}
		fmt.Fprintf(cfg.DebugOut, "%s='%s'\n", wire.ReattachEnv, line)
		fmt.Fprintf(cfg.Stderr, "ovsplane plugin %s: serving in debug mode until interrupted; give the line above to ovsplaned\n", name)
	case <-closed:
		return
	}
	<-closed
}

// parentPoll is how often a plugin checks that the daemon that started it still runs.
const parentPoll = 500 * time.Millisecond

// exitWithParent calls exit once the process's parent is no longer parent (the daemon was
// killed and the process re-parented): a restarted daemon starts its own plugin processes, and
// an orphan must not keep acting on the host beside them. go-plugin offers no such watch, and
// a parent-death signal is tied to the thread that started the process, not to the daemon.
func exitWithParent(stderr io.Writer, parent int, getppid func() int, every time.Duration, exit func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	for range t.C {
		if getppid() != parent {
			fmt.Fprintf(stderr, "ovsplane plugin: the daemon (pid %d) that started this plugin is gone; exiting\n", parent)
			exit()
			return
		}
	}
}
