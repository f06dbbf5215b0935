package sdk_test

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/internal/wire"
)

// buildPlugin builds testdata/plugin, the test plugin as a real binary.
func buildPlugin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "testplugin")
	testkit.Build(t, "./testdata/plugin", bin)
	return bin
}

// newClient returns a go-plugin client configured as the host configures it.
func newClient(t *testing.T, cmd *exec.Cmd, logs *testkit.LogBuffer) *plugin.Client {
	t.Helper()
	c := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake(),
		VersionedPlugins: wire.ClientPluginSets(),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		SkipHostEnv:      true,
		StartTimeout:     20 * time.Second,
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "host", Output: logs, Level: hclog.Debug}),
	})
	t.Cleanup(c.Kill)
	return c
}

func ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestRealProcess runs the test plugin as a real process under go-plugin, as the host does:
// the handshake, version negotiation, AutoMTLS, the shims over the real connection, the
// plugin's structured logs forwarded to the host's logger, and debug-mode reattach.
func TestRealProcess(t *testing.T) {
	bin := buildPlugin(t)

	t.Run("serves protocol 1", func(t *testing.T) {
		logs := &testkit.LogBuffer{}
		client := newClient(t, exec.Command(bin), logs)
		rpc, err := client.Client()
		if err != nil {
			t.Fatalf("start: %v", err)
		}
		if v := client.NegotiatedVersion(); v != wire.ProtocolVersion {
			t.Errorf("negotiated version %d, want %d", v, wire.ProtocolVersion)
		}
		raw, err := rpc.Dispense(wire.NamePlugin)
		if err != nil {
			t.Fatalf("dispense: %v", err)
		}
		p := raw.(api.Plugin)
		info, err := p.Info(ctx(t))
		if err != nil || info.Name != "testplugin" || len(info.Capabilities) != 5 {
			t.Fatalf("Info = %+v, %v", info, err)
		}
		if err := p.Configure(ctx(t), api.ConfigureRequest{Config: []byte(`{"greeting":"hello"}`), Facts: api.HostFacts{OVSVersion: "3.1.0"}}); err != nil {
			t.Fatalf("Configure: %v", err)
		}
		raw, err = rpc.Dispense(wire.NamePortProvider)
		if err != nil {
			t.Fatalf("dispense: %v", err)
		}
		a, err := raw.(api.PortProvider).Attach(ctx(t), api.PortRequest{Bridge: "br0", Name: "p0", Options: map[string]string{"peer": "x"}})
		if err != nil || len(a.Ports) != 2 || a.Ports[0].Interfaces[0].Type != "dpdk" {
			t.Fatalf("Attach = %+v, %v", a, err)
		}
		_, err = raw.(api.PortProvider).Attach(ctx(t), api.PortRequest{Bridge: "br0", Name: "p1"})
		if api.CodeOf(err) != api.InvalidArgument || !strings.Contains(err.Error(), "options.peer: is required") {
			t.Errorf("Attach without peer: %v, want invalid_argument naming options.peer", err)
		}
		// The plugin's slog record arrives in the host's log as a structured record at its level.
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(logs.String(), "configured") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		line := lineWith(logs.String(), "configured")
		if !strings.Contains(line, "[INFO]") || !strings.Contains(line, "greeting=hello") || !strings.Contains(line, "ovs=3.1.0") {
			t.Errorf("plugin log line in the host's log = %q, want an INFO record with greeting=hello ovs=3.1.0\nall:\n%s", line, logs)
		}
	})

	t.Run("refuses another protocol version", func(t *testing.T) {
		cmd := exec.Command(bin)
		cmd.Env = []string{"OVSPLANE_TESTPLUGIN_PROTOCOL=2"}
		client := newClient(t, cmd, &testkit.LogBuffer{})
		_, err := client.Client()
		if err == nil {
			t.Fatal("a protocol 2 plugin was accepted")
		}
		if !wire.VersionMismatch(err) || !strings.Contains(err.Error(), "Plugin version: 2") || !strings.Contains(err.Error(), "Client versions: [1]") {
			t.Errorf("error %q: want go-plugin's refusal naming plugin version 2 and host versions [1]", err)
		}
		client.Kill()
		if !client.Exited() {
			t.Error("the refused plugin is still running")
		}
	})

	t.Run("debug mode reattach", func(t *testing.T) {
		cmd := exec.Command(bin)
		cmd.Env = []string{"OVSPLANE_PLUGIN_DEBUG=1"}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			t.Fatalf("reading the reattach line: %v", err)
		}
		value, ok := strings.CutPrefix(strings.TrimSpace(line), wire.ReattachEnv+"=")
		if !ok {
			t.Fatalf("reattach line %q", line)
		}
		r, err := wire.ParseReattach([]byte(strings.Trim(value, "'")))
		if err != nil || r.Plugin != "testplugin" || r.Pid != cmd.Process.Pid {
			t.Fatalf("ParseReattach(%s) = %+v, %v", value, r, err)
		}
		rc, err := r.Config()
		if err != nil {
			t.Fatal(err)
		}
		set, err := wire.ClientPluginSet(r.ProtocolVersion)
		if err != nil {
			t.Fatal(err)
		}
		client := plugin.NewClient(&plugin.ClientConfig{
			HandshakeConfig: wire.Handshake(), Plugins: set, Reattach: rc,
			AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
			Logger:           hclog.New(&hclog.LoggerOptions{Output: &testkit.LogBuffer{}}),
		})
		defer client.Kill()
		rpc, err := client.Client()
		if err != nil {
			t.Fatalf("reattach: %v", err)
		}
		raw, err := rpc.Dispense(wire.NamePlugin)
		if err != nil {
			t.Fatal(err)
		}
		if info, err := raw.(api.Plugin).Info(ctx(t)); err != nil || info.Name != "testplugin" {
			t.Errorf("Info over reattach = %+v, %v", info, err)
		}
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the debug-mode plugin did not exit on SIGINT")
		}
	})
}

func lineWith(logs, s string) string {
	for line := range strings.SplitSeq(logs, "\n") {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}
