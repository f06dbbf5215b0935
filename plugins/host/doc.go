// Package host runs ovsplane's plugins for the daemon: it verifies each configured binary,
// starts it with hashicorp/go-plugin, supervises it, and hands the daemon supervised views of
// its capabilities (plugins/api's interfaces) whose calls always go to the current process.
//
// # Trust
//
// Only the plugins listed in the daemon's config (model.Plugin) run. Before every start the
// host checks, without executing anything, that the plugin dir and every path component below
// it down to the binary are real directories and files (no symlinks), owned by root or by the
// daemon's uid, not writable by group or others, and that the binary's SHA-256 equals the
// pin; a refusal names the file and the fix, and starts no process. The pin is also given to
// go-plugin's SecureConfig, which hashes the binary again just before exec. The plugin runs
// with AutoMTLS, its unix socket in a fresh 0700 directory under <data_dir>/plugin-run, its
// working directory <data_dir>/plugin-data/<name> (HostFacts.DataDir), its own process group,
// and an explicit environment: PATH, the variables its config entry allows, and go-plugin's
// handshake variables; nothing else of the daemon's environment. A plugin that speaks another
// protocol version is refused with a message naming both versions (go-plugin learns the
// plugin's version from its handshake, so that process ran briefly; it is killed at once), and
// so is a plugin whose Info.Name is not its configured name. Reload runs the trust checks
// again on every running plugin and refuses (stops) one whose binary fails them now.
//
// # Supervision
//
// go-plugin never restarts a plugin; the host does. Each plugin has a supervisor that polls
// for the process's exit (every 25 ms) and checks health every HealthInterval (go-plugin's
// gRPC health service, then the plugin's own Health; three consecutive HealthFailing reports
// count as a failure). After an exit or a failed check it restarts the plugin with exponential
// backoff (BackoffInitial doubling to BackoffMax). BreakerFailures failures within
// BreakerWindow open the plugin's circuit breaker: it is marked failed, calls fail with
// Unavailable naming the reason, and it stays down until Reset or Reload. After every start,
// before the plugin is marked running, the host calls Configure (config as JSON, host facts,
// the negotiated API revision, the plugin's cookie and group ranges), Contribute, and then
// replays the ports the daemon says the plugin owns (Options.Owned): one Attach per port, with
// PortRequest.Replay set, the outcomes handed to Options.Replayed.
//
// Every call has a deadline (CallTimeout unless the caller's is shorter). A call to a plugin
// that is not running fails at once with api.Unavailable; a call in flight when the process
// dies fails with api.Unavailable, a call that outlives its deadline with
// api.DeadlineExceeded; both messages name the plugin and the call.
//
// # Logs
//
// The plugin's stderr (hclog JSON lines, as plugins/sdk writes them; other lines as text)
// and what it writes to stdout and stderr after serving arrive in the daemon's *slog.Logger
// with plugin=<name>.
//
// # Debug reattach
//
// A plugin author runs the plugin under a debugger (plugins/sdk's debug mode prints the
// line) and starts the daemon with OVSPLANE_PLUGIN_REATTACH set to it (Options.Reattach);
// the host then attaches to that process instead of starting one.
//
// # Using it
//
//	h, err := host.New(host.Options{PluginDir: cfg.PluginDir, DataDir: cfg.DataDir,
//		Logger: log, Environ: os.Environ(), Reattach: os.Getenv(host.ReattachEnv),
//		Owned: ownedPortsFromOVSDB, Replayed: compareShapes, Facts: ovsFacts, OnChange: kick})
//	err = h.Start(ctx, cfg.Plugins)          // on SIGHUP: h.Reload(ctx, newCfg.Plugins)
//	pp, name, ok := h.PortProvider("veth")   // Validate/Attach/Detach through the plugin
//	merged := h.GlobalConfig(ctx, cfg.OtherConfig)
//	flows := h.Flows(ctx, bridgeFacts)
//	defer h.Close(ctx)
package host
