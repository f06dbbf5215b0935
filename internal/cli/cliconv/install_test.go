package cliconv_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// requireTools fails t, naming the Debian package, when a tool the test needs is missing.
func requireTools(t *testing.T) {
	t.Helper()
	for tool, pkg := range map[string]string{"make": "make", "man": "man-db", "groff": "groff-base",
		"systemd-analyze": "systemd", "install": "coreutils"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: install the Debian package %s (CI: scripts/lab-setup.sh)", tool, pkg)
		}
	}
}

// makeInstall runs `make install` from the repository's root with vars, and returns its output.
func makeInstall(t *testing.T, vars ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "make", append([]string{"--no-print-directory", "-C", "../../..", "install"}, vars...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make install %s: %v\n%s", strings.Join(vars, " "), err, out)
	}
	return string(out)
}

// `make install PREFIX=...` installs the programs, the plugins, a man page for each, the bash
// completions and the systemd unit with ExecStart at PREFIX/bin; every man page renders with no
// groff warning and documents every option its program's --help lists; the installed unit
// passes `systemd-analyze verify`. DESTDIR stages the same tree below it.
func TestMakeInstallManPagesAndUnit(t *testing.T) {
	requireTools(t)
	bin := buildAll(t)
	prefix := filepath.Join(t.TempDir(), "prefix")
	makeInstall(t, "BIN="+bin, "PREFIX="+prefix)

	var want []string
	for _, b := range binaries {
		want = append(want, filepath.Join("share/man/man8", b.name+".8"))
		if b.plugin {
			want = append(want, filepath.Join("lib/ovsplane/plugins", b.name))
		} else {
			want = append(want, filepath.Join("bin", b.name))
		}
	}
	want = append(want, "share/bash-completion/completions/vsctl", "share/bash-completion/completions/ovsplaned",
		"lib/systemd/system/ovsplaned.service")
	for _, f := range want {
		if _, err := os.Stat(filepath.Join(prefix, f)); err != nil {
			t.Errorf("make install did not install %s: %v", f, err)
		}
	}
	pages, _ := filepath.Glob(filepath.Join(prefix, "share/man/man8/*.8"))
	if len(pages) != len(binaries) {
		t.Errorf("installed man pages %q, want one per program (%d)", pages, len(binaries))
	}

	t.Run("man", func(t *testing.T) {
		for _, b := range binaries {
			page := filepath.Join(prefix, "share/man/man8", b.name+".8")
			cmd := exec.CommandContext(t.Context(), "man", "--warnings", "-l", page)
			cmd.Env = append(os.Environ(), "MANWIDTH=80", "MANPAGER=cat", "PAGER=cat", "LC_ALL=C.UTF-8")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil || stderr.Len() > 0 {
				t.Errorf("man --warnings -l %s: %v\n%s", b.name+".8", err, stderr.String())
			}
			text := stdout.String()
			for _, section := range []string{"NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "SEE ALSO"} {
				if !strings.Contains(text, "\n"+section+"\n") {
					t.Errorf("%s.8 has no %s section", b.name, section)
				}
			}
			if !strings.Contains(text, b.name+" - ") {
				t.Errorf("%s.8: NAME does not start with %q", b.name, b.name+" - ")
			}
			// man finds it in the installed tree by name.
			where, err := exec.CommandContext(t.Context(), "man", "-M", filepath.Join(prefix, "share/man"), "-w", "8", b.name).Output()
			if err != nil || strings.TrimSpace(string(where)) != page {
				t.Errorf("man -M PREFIX/share/man -w 8 %s: %q, %v; want %s", b.name, where, err, page)
			}
			src, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			for _, flag := range documentedFlags(t, installed(bin, b), b) {
				if !strings.Contains(string(src), `\-\-`+strings.ReplaceAll(flag, "-", `\-`)) {
					t.Errorf("%s.8 does not document --%s, which its --help lists", b.name, flag)
				}
			}
		}
	})

	t.Run("systemd-analyze verify", func(t *testing.T) {
		unit := filepath.Join(prefix, "lib/systemd/system/ovsplaned.service")
		data, err := os.ReadFile(unit)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "\nExecStart="+prefix+"/bin/ovsplaned --config ") {
			t.Fatalf("the installed unit does not start %s/bin/ovsplaned:\n%s", prefix, data)
		}
		for _, key := range []string{"ExecReload=/bin/kill -HUP $MAINPID", "RuntimeDirectory=ovsplane",
			"StateDirectory=ovsplane", "ProtectSystem=strict", "NoNewPrivileges=yes"} {
			if !strings.Contains(string(data), "\n"+key+"\n") {
				t.Errorf("the unit lacks %s", key)
			}
		}
		if out, err := verify(t, unit); err != nil || strings.Contains(out, "ovsplaned.service") {
			t.Errorf("systemd-analyze verify %s: %v\n%s", unit, err, out)
		}
		// The check bites: a unit whose binary is missing, or with a misspelt key, fails it.
		for name, edit := range map[string]func(string) string{
			"missing-binary.service": func(s string) string { return strings.ReplaceAll(s, prefix+"/bin/ovsplaned", prefix+"/bin/nothing") },
			"typo.service":           func(s string) string { return strings.Replace(s, "\nExecStart=", "\nExecStrat=", 1) },
		} {
			bad := filepath.Join(t.TempDir(), name)
			if err := os.WriteFile(bad, []byte(edit(string(data))), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := verify(t, bad); err == nil {
				t.Errorf("systemd-analyze verify accepted %s:\n%s", name, out)
			}
		}
	})

	t.Run("DESTDIR", func(t *testing.T) {
		dest := t.TempDir()
		makeInstall(t, "BIN="+bin, "PREFIX=/usr", "DESTDIR="+dest)
		for _, f := range []string{"usr/bin/ovsplaned", "usr/share/man/man8/vsctl.8", "usr/lib/ovsplane/plugins/ovsplane-plugin-vdpa"} {
			if _, err := os.Stat(filepath.Join(dest, f)); err != nil {
				t.Errorf("make install DESTDIR: %s missing: %v", f, err)
			}
		}
		unit, err := os.ReadFile(filepath.Join(dest, "usr/lib/systemd/system/ovsplaned.service"))
		if err != nil || !strings.Contains(string(unit), "\nExecStart=/usr/bin/ovsplaned --config ") {
			t.Errorf("the staged unit does not start /usr/bin/ovsplaned (%v)", err)
		}
	})
}

// verify runs systemd-analyze verify on unit and returns its output.
func verify(t *testing.T, unit string) (string, error) {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "systemd-analyze", "verify", unit).CombinedOutput()
	return string(out), err
}

// helpFlag is an option line of a Go flag set's or pflag set's usage.
var helpFlag = regexp.MustCompile(`(?m)^\s+(?:-[a-z], )?--?([a-z][a-z0-9-]*)\b`)

// documentedFlags returns the long options path's help lists (flowmon's subcommands' too),
// which its man page must document. vsctl's are ovs-vsctl's, documented in ovs-vsctl(8): its
// page must document the daemon options only.
func documentedFlags(t *testing.T, path string, b binary) []string {
	t.Helper()
	if b.name == "vsctl" {
		return []string{"daemon", "format", "timeout", "jobs", "private-key", "certificate", "ca-cert", "help", "version"}
	}
	helps := [][]string{{"--help"}}
	if b.name == "ovsplane-plugin-flowmon" {
		helps = append(helps, []string{"query", "-h"}, []string{"top", "-h"}, []string{"gen", "-h"})
	}
	var flags []string
	for _, args := range helps {
		code, stdout, stderr := runBin(t, path, args...)
		if code != 0 {
			t.Fatalf("%s %s: exit %d\n%s", b.name, strings.Join(args, " "), code, stderr)
		}
		for _, m := range helpFlag.FindAllStringSubmatch(stdout+stderr, -1) {
			if !slices.Contains(flags, m[1]) {
				flags = append(flags, m[1])
			}
		}
	}
	if len(flags) == 0 {
		t.Fatalf("%s --help lists no option", b.name)
	}
	return flags
}
