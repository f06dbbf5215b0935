// Package examples_test keeps the material users copy honest: every examples/*.yaml loads and
// validates with the daemon's own loader, the production sample documents every setting, and
// contrib/systemd/ovsplaned.service is a valid unit that agrees with the sample.
package examples_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/ovsplane/ovsplane/vswitchd/config"
)

const (
	sample   = "ovsplaned.yaml"
	unitPath = "../contrib/systemd/ovsplaned.service"
	// maxExposure is the highest `systemd-analyze security` exposure the unit may have
	// (0 = fully sandboxed, 10 = not at all; systemd calls up to 5.9 "MEDIUM").
	maxExposure = 5.0
)

func TestEveryExampleConfigLoads(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(files, sample) || !slices.Contains(files, "quickstart.yaml") {
		t.Fatalf("examples: %v, want %s and quickstart.yaml among them", files, sample)
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			cfg, err := config.Load(t.Context(), config.Options{File: f})
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.Bridges) == 0 {
				t.Errorf("%s has no bridges: an example should show a desired state", f)
			}
		})
	}
}

// commentedKey matches a commented-out settings line of the sample ("  # socket_group: x",
// "  #   private_key: …"), capturing the indentation and the line without its "# ".
var commentedKey = regexp.MustCompile(`^(\s*)# (\s*(?:ovsdb|endpoints|tls|private_key|certificate|ca_cert|reconnect_wait|apply_timeout|vswitchd_unixctl|data_dir|api|listen|socket_mode|socket_group|log|level|format|metrics|address|plugin_dir):(?:\s.*)?)$`)

// uncomment returns the sample with its commented-out settings lines enabled.
func uncomment(data []byte) []byte {
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if m := commentedKey.FindStringSubmatch(line); m != nil {
			line = m[1] + m[2]
		}
		out.WriteString(line + "\n")
	}
	return out.Bytes()
}

// TestSampleShowsEverySetting holds examples/ovsplaned.yaml to its promise: every daemon
// setting appears, set or commented out, and the commented-out alternatives load too.
func TestSampleShowsEverySetting(t *testing.T) {
	data, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	all := uncomment(data)
	if _, err := config.Load(t.Context(), config.Options{File: sample + " (commented settings enabled)", Data: all}); err != nil {
		t.Errorf("with its commented-out settings enabled: %v", err)
	}
	var tree map[string]any
	if err := yaml.Unmarshal(all, &tree); err != nil {
		t.Fatal(err)
	}
	shown := map[string]bool{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			key := strings.TrimPrefix(prefix+"."+k, ".")
			if sub, ok := v.(map[string]any); ok && key != "other_config" {
				walk(key, sub)
				continue
			}
			shown[config.FlagName(key)] = true
		}
	}
	walk("", tree)
	fs := pflag.NewFlagSet("ovsplaned", pflag.ContinueOnError)
	config.RegisterFlags(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		if !shown[f.Name] {
			t.Errorf("%s does not show the setting behind --%s", sample, f.Name)
		}
	})
}

// unit is a parsed systemd unit file: section → key → values, in order.
type unit map[string]map[string][]string

// parseUnit reads the subset of the unit file syntax the project's units use: sections,
// Key=Value lines, comments and backslash continuations.
func parseUnit(data []byte) (unit, error) {
	u := unit{}
	section := ""
	var pending string
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if pending != "" {
			line, pending = pending+" "+line, ""
		}
		if strings.HasSuffix(line, "\\") {
			pending = strings.TrimSuffix(line, "\\")
			continue
		}
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				return nil, fmt.Errorf("line %d: %q is neither a section nor Key=Value", i+1, line)
			}
			u[section][strings.TrimSpace(k)] = append(u[section][strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	return u, nil
}

// one returns the single value of key in section, or "".
func (u unit) one(section, key string) string {
	v := u[section][key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

func TestSystemdUnit(t *testing.T) {
	data, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	u, err := parseUnit(data)
	if err != nil {
		t.Fatalf("%s: %v", unitPath, err)
	}
	require := func(section, key string, ok func(string) bool, what string) {
		t.Helper()
		if v := u.one(section, key); !ok(v) {
			t.Errorf("[%s] %s=%q: want %s", section, key, v, what)
		}
	}
	has := func(word string) func(string) bool {
		return func(v string) bool { return slices.Contains(strings.Fields(v), word) }
	}
	is := func(want ...string) func(string) bool {
		return func(v string) bool { return slices.Contains(want, v) }
	}
	require("Unit", "Description", func(v string) bool { return v != "" }, "a description")
	require("Unit", "Wants", has("openvswitch-switch.service"), "openvswitch-switch.service")
	require("Unit", "After", has("openvswitch-switch.service"), "openvswitch-switch.service")
	require("Service", "Type", is("exec", "simple"), "exec or simple (the daemon sends no sd_notify)")
	require("Service", "ExecReload", func(v string) bool { return strings.Contains(v, "-HUP $MAINPID") }, "a SIGHUP to $MAINPID")
	require("Service", "Restart", is("on-failure"), "on-failure")
	require("Service", "RuntimeDirectory", is("ovsplane"), "ovsplane")
	require("Service", "StateDirectory", is("ovsplane"), "ovsplane")
	require("Service", "ProtectSystem", is("strict", "full", "yes"), "a protected file system")
	require("Service", "NoNewPrivileges", is("yes", "true"), "yes")
	require("Service", "ReadWritePaths", func(v string) bool {
		return slices.ContainsFunc(strings.Fields(v), func(p string) bool { return strings.TrimPrefix(p, "-") == "/run/openvswitch" })
	}, "/run/openvswitch writable (OVSDB's socket)")
	require("Install", "WantedBy", has("multi-user.target"), "multi-user.target")

	t.Run("agrees with the sample", func(t *testing.T) {
		args := strings.Fields(u.one("Service", "ExecStart"))
		i := slices.Index(args, "--config")
		if len(args) == 0 || filepath.Base(args[0]) != "ovsplaned" || i < 0 || i+1 >= len(args) {
			t.Fatalf("ExecStart=%q: want ovsplaned --config FILE", u.one("Service", "ExecStart"))
		}
		if conf := args[i+1]; filepath.Dir(conf) != "/etc/"+u.one("Service", "ConfigurationDirectory") {
			t.Errorf("--config %s is not in the unit's ConfigurationDirectory", conf)
		}
		cfg, err := config.Load(t.Context(), config.Options{File: sample})
		if err != nil {
			t.Fatal(err)
		}
		if want := "/var/lib/" + u.one("Service", "StateDirectory"); cfg.DataDir != want {
			t.Errorf("sample data_dir %s, unit StateDirectory %s", cfg.DataDir, want)
		}
		run := "/run/" + u.one("Service", "RuntimeDirectory") + "/"
		for _, l := range cfg.API.Listen {
			if p, ok := strings.CutPrefix(l, "unix:"); ok && !strings.HasPrefix(p, run) && !strings.HasPrefix(p, cfg.DataDir+"/") {
				t.Errorf("sample api.listen %s is outside the unit's writable directories", l)
			}
		}
	})

	t.Run("systemd-analyze", func(t *testing.T) { analyze(t, data) })
}

// analyze runs `systemd-analyze verify` (and `security`, for the exposure) on a copy of the unit
// whose ExecStart names a stand-in executable, since verify insists that the binary exists.
// Without systemd-analyze, the parsed checks of TestSystemdUnit stand alone.
func analyze(t *testing.T, data []byte) {
	bin, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Logf("no systemd-analyze (%v): only the parsed checks ran", err)
		return
	}
	dir := t.TempDir()
	stub := filepath.Join(dir, "ovsplaned")
	if err := os.WriteFile(stub, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "ovsplaned.service")
	if err := os.WriteFile(path, bytes.ReplaceAll(data, []byte("/usr/local/bin/ovsplaned"), []byte(stub)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), bin, "verify", path).CombinedOutput()
	// verify exits 0 on unknown keys and bad values; it only warns. Warnings about other units
	// (dependencies on this host) are not this unit's.
	var problems []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(line, "ovsplaned.service") {
			problems = append(problems, line)
		}
	}
	if err != nil || len(problems) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, strings.Join(problems, "\n"))
	}

	out, err = exec.CommandContext(t.Context(), bin, "security", "--offline=true", path).CombinedOutput()
	m := regexp.MustCompile(`Overall exposure level for ovsplaned\.service: ([0-9.]+)`).FindSubmatch(out)
	if err != nil || m == nil {
		t.Logf("systemd-analyze security --offline unavailable here (%v): exposure not checked", err)
		return
	}
	exposure, _ := strconv.ParseFloat(string(m[1]), 64)
	t.Logf("systemd-analyze security: exposure %.1f", exposure)
	if exposure > maxExposure {
		t.Errorf("exposure %.1f > %.1f: the unit lost some of its sandboxing\n%s", exposure, maxExposure, out)
	}
}
