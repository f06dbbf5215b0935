package config

import (
	"context"
	"errors"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/internal/desired"
)

// problemStart is how every problem of a rejected configuration starts: with where it is —
// the key path (bridges[1].ports[0].name, log.level, plugins[0].config.x, "(top level)"; keys
// are printed as written, spaces and all), the environment variable or flag, or the line —
// then ": " and what is wrong.
var problemStart = regexp.MustCompile(`^(` +
	`(line \d+: )?\S[^\n]*?: \S` + // a key path (or "(top level)"; keys as written, ":" too) and the message
	`|line \d+: the document` + // the document as a whole is not a mapping
	`|environment [A-Z0-9_]+: ` +
	`|flag --[a-z0-9-]+: ` +
	`|parsing YAML: ` + // a syntax error: yaml.v3's message, with its line when it has one
	`|document too large` +
	`)`)

// FuzzConfigFile loads arbitrary configuration files with an arbitrary OVSPLANE_ environment
// (NUL-separated KEY=VALUE pairs) and checks that Load never panics, returns either a valid
// Config or an error, never both; that a rejected file's error starts with the file's name
// and the count of its problems, and that every problem names where it is (a key path, a
// variable or a line); and that neither the problems nor the allocations grow out of
// proportion to the input.
func FuzzConfigFile(f *testing.F) {
	for _, path := range examples {
		f.Add(readExample(f, path), "")
	}
	f.Add([]byte("bridges:\n  - name: br0\n    ports: [{name: p, tag: 5, interfaces: [{name: p, type: dpdk}]}]\n"), "OVSPLANE_LOG_LEVEL=debug\x00OVSPLANE_OVSDB_ENDPOINTS=unix:/a,tcp:1.2.3.4:6640")
	f.Add([]byte("log: {level: loud}\n"), "OVSPLANE_NOPE=1\x00OVSPLANE_API_SOCKET_MODE=999")
	f.Add([]byte("bridges: {name: br0}\n"), "")
	f.Add([]byte("plugins:\n  - {name: t, path: t, sha256: "+strings.Repeat("a", 64)+", jobs: [{name: c, type: ticker, config: {every_ms: 5}}, {name: c, type: x}]}\n"), "")
	f.Add([]byte("bridges:\n  - name: br0\n  - name: br0\n"), "")
	f.Fuzz(func(t *testing.T, data []byte, env string) {
		var envList []string
		if env != "" {
			envList = strings.Split(env, "\x00")
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		alloc := ms.TotalAlloc
		c, err := Load(context.Background(), Options{File: "fuzz.yaml", Data: data, Env: envList})
		runtime.ReadMemStats(&ms)
		size := len(data) + len(env)
		// Loose: catches a file that makes Load allocate without bound (an alias bomb, say).
		if grew, limit := ms.TotalAlloc-alloc, uint64(256<<20+4096*size); grew > limit {
			t.Errorf("%d bytes allocated for a %d-byte input (limit %d)", grew, size, limit)
		}
		if (c == nil) == (err == nil) {
			t.Fatalf("config %v and error %v", c, err)
		}
		if err == nil {
			if verr := c.Validate(); verr != nil {
				t.Fatalf("Load returned an invalid config: %v", verr)
			}
			return
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "fuzz.yaml: ") || !strings.Contains(msg, " problem(s):\n") {
			t.Fatalf("error does not name the file and count its problems: %q", msg)
		}
		problems := desired.Flatten(errors.Unwrap(err))
		if len(problems) == 0 {
			t.Fatalf("rejected without a problem: %q", msg)
		}
		if limit := 2*size + 16; len(problems) > limit {
			t.Fatalf("%d problems for a %d-byte input", len(problems), size)
		}
		for _, p := range problems {
			if !problemStart.MatchString(p.Error()) {
				t.Fatalf("problem does not name a key, variable or line: %q", p.Error())
			}
		}
	})
}
