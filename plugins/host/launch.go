package host

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/internal/wire"
)

// defaultPath is the PATH a plugin gets when the daemon has none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// maxSocketPath keeps go-plugin's socket path (<dir>/plugin<digits>) within sun_path.
const maxSocketPath = 90

// instance is one running plugin process (or a reattached one) and its dispensed services.
type instance struct {
	client  *plugin.Client
	conn    *grpc.ClientConn
	info    api.Info
	version string // negotiated API revision
	base    api.Plugin
	port    api.PortProvider
	watcher api.Watcher
	global  api.GlobalConfigContributor
	flows   api.FlowProgrammer
	data    api.DataPath
	pid     int
	sockDir string
	// reattached is set for a process the host did not start (debug mode): never killed.
	reattached bool
	// ctx ends when the instance is stopped or its process exits; calls in flight end with it.
	ctx    context.Context
	cancel context.CancelFunc
}

// exitGrace is how long a call that failed as Unavailable waits for go-plugin to notice the
// process's exit, so its error can say the process died rather than quote the transport.
const exitGrace = 200 * time.Millisecond

// exited reports whether the process has exited, waiting up to exitGrace when wait is set.
func (in *instance) exited(wait bool) bool {
	deadline := time.Now().Add(exitGrace)
	for {
		if in.client.Exited() {
			return true
		}
		if !wait || time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// killGrace bounds go-plugin's Kill, whose graceful shutdown call has no deadline and hangs
// on a process that does not answer (stopped, deadlocked).
const killGrace = 5 * time.Second

// kill stops the process and removes the socket dir; idempotent. graceful asks the plugin to
// exit first (go-plugin's Kill: up to 2 s, then SIGKILL); otherwise, and whenever that takes
// longer than killGrace, the host SIGKILLs the plugin's process group itself. A reattached
// process is never killed.
func (in *instance) kill(graceful bool) {
	in.cancel()
	if !graceful {
		in.sigkill()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		in.client.Kill()
	}()
	t := time.NewTimer(killGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		in.sigkill()
		<-done
	}
	if in.sockDir != "" {
		_ = os.RemoveAll(in.sockDir)
	}
}

// sigkill kills the plugin's process group (it has its own: Setpgid), unless the process was
// reattached or has already exited.
func (in *instance) sigkill() {
	if in.reattached || in.pid <= 0 || in.client.Exited() {
		return
	}
	_ = syscall.Kill(-in.pid, syscall.SIGKILL)
}

// launch verifies and starts the plugin's process (or attaches to it in debug mode), connects
// and dispenses its services, and reads its Info. It does not configure it.
func (s *sup) launch(ctx context.Context, p model.Plugin) (*instance, error) {
	cc, sockDir, err := s.clientConfig(p)
	if err != nil {
		return nil, err
	}
	client := plugin.NewClient(cc)
	in := &instance{client: client, sockDir: sockDir, reattached: cc.Reattach != nil}
	in.ctx, in.cancel = context.WithCancel(context.Background())
	ok := false
	defer func() {
		if !ok {
			in.kill(false)
		}
	}()
	rpc, err := client.Client()
	if err != nil {
		return nil, s.startError(err)
	}
	if rc := client.ReattachConfig(); rc != nil {
		in.pid = rc.Pid
	}
	if g, isGRPC := rpc.(*plugin.GRPCClient); isGRPC {
		in.conn = g.Conn
	}
	if err := in.dispense(ctx, rpc, s.h.opts.CallTimeout); err != nil {
		return nil, fmt.Errorf("plugin %q: %w", p.Name, err)
	}
	if err := api.ValidateInfo(in.info); err != nil {
		return nil, refuse(p.Name, "its Info is malformed (a plugin bug): %v", err)
	}
	if in.info.Name != p.Name {
		return nil, refuse(p.Name, "its Info.Name is %q, but the config entry names it %q; the two must be the same (ports, tags and logs use the name): rename the entry to %q, or rebuild the plugin with Info.Name %q",
			in.info.Name, p.Name, in.info.Name, p.Name)
	}
	v, err := wire.NegotiateAPIVersion(in.info.APIVersions)
	if err != nil {
		return nil, refuse(p.Name, "%v", err)
	}
	in.version = v
	ok = true
	return in, nil
}

// dispense gets the base service, reads Info and dispenses every capability it lists.
func (in *instance) dispense(ctx context.Context, rpc plugin.ClientProtocol, timeout time.Duration) error {
	raw, err := rpc.Dispense(wire.NamePlugin)
	if err != nil {
		return fmt.Errorf("dispensing %s: %w", wire.NamePlugin, err)
	}
	base, ok := raw.(api.Plugin)
	if !ok {
		return fmt.Errorf("dispensing %s: got %T", wire.NamePlugin, raw)
	}
	in.base = base
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if in.info, err = base.Info(cctx); err != nil {
		return fmt.Errorf("Info: %w", err)
	}
	for _, c := range in.info.Capabilities {
		name, known := wire.DispenseName(c)
		if !known {
			continue // a newer plugin's capability this host does not use
		}
		raw, err := rpc.Dispense(name)
		if err != nil {
			return fmt.Errorf("dispensing %s: %w", name, err)
		}
		var okc bool
		switch c {
		case api.CapabilityPortProvider:
			in.port, okc = raw.(api.PortProvider)
		case api.CapabilityWatcher:
			in.watcher, okc = raw.(api.Watcher)
		case api.CapabilityGlobalConfig:
			in.global, okc = raw.(api.GlobalConfigContributor)
		case api.CapabilityFlowProgram:
			in.flows, okc = raw.(api.FlowProgrammer)
		case api.CapabilityDataPath:
			in.data, okc = raw.(api.DataPath)
		}
		if !okc {
			return fmt.Errorf("dispensing %s: got %T", name, raw)
		}
	}
	return nil
}

// clientConfig builds go-plugin's configuration: the verified binary with SecureConfig,
// AutoMTLS, a fresh private socket dir, an explicit environment; or, in debug mode, the
// reattach address.
func (s *sup) clientConfig(p model.Plugin) (*plugin.ClientConfig, string, error) {
	h := s.h
	cc := &plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake(),
		VersionedPlugins: wire.ClientPluginSets(),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           newHCLog(s.log),
		StartTimeout:     h.opts.StartTimeout,
		SyncStdout:       streamLogger(s.log, "stdout"),
		SyncStderr:       streamLogger(s.log, "stderr"),
	}
	if r, debug := h.reattach[p.Name]; debug {
		rc, err := r.Config()
		if err != nil {
			return nil, "", fmt.Errorf("plugin %q: %w", p.Name, err)
		}
		cc.Reattach = rc
		cc.Plugins = wire.ClientPluginSets()[rc.ProtocolVersion]
		s.log.Warn("attaching to a plugin started by hand (debug mode): no trust checks, no mTLS", "pid", r.Pid, "address", r.Address)
		return cc, "", nil
	}
	bin, err := verify(h.opts.PluginDir, h.uid, p)
	if err != nil {
		return nil, "", err
	}
	sockDir, err := os.MkdirTemp(h.runDir, p.Name+"-")
	if err != nil {
		return nil, "", fmt.Errorf("plugin %q: socket dir: %w", p.Name, err)
	}
	if len(sockDir)+len("/plugin0000000000") > maxSocketPath {
		_ = os.RemoveAll(sockDir)
		return nil, "", fmt.Errorf("plugin %q: socket dir %s is too long for a unix socket path; use a shorter data dir", p.Name, sockDir)
	}
	dataDir := filepath.Join(h.dataRoot, p.Name)
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		_ = os.RemoveAll(sockDir)
		return nil, "", fmt.Errorf("plugin %q: data dir: %w", p.Name, err)
	}
	cmd := exec.Command(bin.path)
	cmd.Args = []string{p.Name}
	cmd.Dir = dataDir
	cmd.Env = s.environment(p, sockDir)
	// Its own process group: a terminal's ^C reaches the daemon, which stops the plugins.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cc.Cmd = cmd
	cc.SkipHostEnv = true
	cc.AutoMTLS = true
	cc.SecureConfig = &plugin.SecureConfig{Checksum: bin.sha256, Hash: sha256.New()}
	return cc, sockDir, nil
}

// environment returns the plugin's whole environment (go-plugin appends its handshake
// variables): PATH, the socket dir, and the variables the config entry allows.
func (s *sup) environment(p model.Plugin, sockDir string) []string {
	lookup := func(name string) (string, bool) {
		for _, kv := range s.h.opts.Environ {
			if k, v, _ := strings.Cut(kv, "="); k == name {
				return v, true
			}
		}
		return "", false
	}
	path, ok := lookup("PATH")
	if !ok {
		path = defaultPath
	}
	env := []string{"PATH=" + path, plugin.EnvUnixSocketDir + "=" + sockDir}
	for _, name := range p.Env {
		if v, ok := lookup(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}

var pluginVersionRE = regexp.MustCompile(`Plugin version: (\d+)`)

// startError turns go-plugin's start failures into the host's: a protocol version mismatch
// is a refusal naming both versions; a checksum mismatch (the binary changed after verify) is
// a refusal too.
func (s *sup) startError(err error) error {
	name := s.name
	switch {
	case wire.VersionMismatch(err):
		theirs := "another"
		if m := pluginVersionRE.FindStringSubmatch(err.Error()); m != nil {
			theirs = m[1]
		}
		return &refusal{plugin: name, msg: fmt.Sprintf(
			"it speaks plugin protocol version %s, this host speaks version %d; rebuild the plugin against ovsplane's plugins/api (protocol %d) or install a matching ovsplane (go-plugin: %v)",
			theirs, wire.ProtocolVersion, wire.ProtocolVersion, err)}
	case errors.Is(err, plugin.ErrChecksumsDoNotMatch):
		return &refusal{plugin: name, msg: fmt.Sprintf("the binary changed between the host's check and its start: %v", err)}
	}
	return fmt.Errorf("plugin %q: start: %w", name, err)
}

func pluginLogger(l *slog.Logger, name string) *slog.Logger {
	return l.With(slog.String("plugin", name))
}
