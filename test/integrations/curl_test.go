//go:build linux

package integrations

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/vsctldiff"
)

// recipe is one curl command line of docs/api.md with the response documented after it.
type recipe struct {
	line     string // as in the document, continuation lines joined
	call     string // the SwitchService method, or the overlay path
	response string // the documented JSON response, "" when none is shown
}

// fence matches a fenced block: its language and content.
var fence = regexp.MustCompile("(?ms)^```(\\w*)\n(.*?)^```\n")

// callRE finds the call a recipe makes.
var callRE = regexp.MustCompile(`\$U/(\w+)|http://ovsplaned(/overlay/[\w/]*)`)

// recipes extracts every curl line that talks to the daemon ($S) from the sh blocks of doc, and
// pairs a block's lines with the JSON values of the json block right after it when there are
// as many values as lines.
func recipes(t *testing.T, doc string) []recipe {
	t.Helper()
	var out []recipe
	blocks := fence.FindAllStringSubmatchIndex(doc, -1)
	for i, b := range blocks {
		if doc[b[2]:b[3]] != "sh" {
			continue
		}
		text := strings.ReplaceAll(doc[b[4]:b[5]], "\\\n", " ")
		var rs []recipe
		for _, l := range strings.Split(text, "\n") {
			if !strings.Contains(l, "curl ") || !strings.Contains(l, "$S") {
				continue
			}
			m := callRE.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("docs/api.md: a curl recipe that names no call: %s", l)
			}
			rs = append(rs, recipe{line: l, call: m[1] + m[2]})
		}
		if len(rs) == 0 {
			continue
		}
		if i+1 < len(blocks) && doc[blocks[i+1][2]:blocks[i+1][3]] == "json" && blocks[i+1][0] == b[1] {
			var vals []string
			dec := json.NewDecoder(strings.NewReader(doc[blocks[i+1][4]:blocks[i+1][5]]))
			for {
				var v json.RawMessage
				if err := dec.Decode(&v); err == io.EOF {
					break
				} else if err != nil {
					vals = nil
					break
				}
				vals = append(vals, string(v))
			}
			if len(vals) == len(rs) {
				for j := range rs {
					rs[j].response = vals[j]
				}
			}
		}
		out = append(out, rs...)
	}
	return out
}

// withoutComment cuts a trailing shell comment (a # after a blank, outside quotes).
func withoutComment(l string) string {
	var q byte
	for i := 0; i < len(l); i++ {
		switch c := l[i]; {
		case q != 0:
			if c == q {
				q = 0
			}
		case c == '\'' || c == '"':
			q = c
		case c == '\\':
			i++
		case c == '#' && i > 0 && (l[i-1] == ' ' || l[i-1] == '\t'):
			return l[:i]
		}
	}
	return l
}

// notHere are the recipes this daemon cannot answer as the document shows, because they need
// something it is not configured with; each must then fail with exactly this code (which proves
// the request was well-formed and reached the call's logic).
var notHere = map[string]struct{ code, why string }{
	"PluginStats":        {"not_found", "needs a plugin named tick in the configuration"},
	"ApplyPort veth":     {"invalid_argument", "needs the veth-reference plugin configured"},
	"/overlay/v1/lookup": {"failed_precondition", "needs overlay.fabric_remotes"},
}

// keysOnly are calls whose documented answer depends on the host (daemon mode, OVSDB endpoint,
// which plugins are configured): only the documented top-level fields' presence is compared.
var keysOnly = map[string]bool{"Health": true, "ListPlugins": true}

// order runs the recipes so that each finds what it needs: creations, reads, waits and the
// stream, host-wide calls, then deletions (DeleteBridge last). Recipes not listed fail the test:
// a new recipe must be placed.
var order = map[string]int{
	"ApplyBridge": 0, "ApplyPort": 1,
	"GetBridge": 2, "ListBridges": 2, "GetPort": 2, "ListPorts": 2, "ListStatus": 2,
	"WaitReady": 3, "Watch": 4,
	"Health": 5, "ListPlugins": 5, "PluginStats": 5, "Reload": 5, "/overlay/v1/lookup": 5,
	"DeletePort": 6, "DeleteBridge": 7,
}

// TestCurlRecipes extracts the curl recipes of docs/api.md and runs each, as written but for $S
// and $U, against a live daemon: a recipe must succeed, or fail with the code the document
// shows; the answer must be the documented one exactly (field order and spacing aside), or, for
// host-dependent calls, have the documented fields. The Watch recipe must deliver its snapshot.
func TestCurlRecipes(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatalf("curl is required (Debian package curl): %v", err)
	}
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	rs := recipes(t, string(doc))
	if len(rs) < 15 {
		t.Fatalf("found %d curl recipes in docs/api.md; the extraction is broken", len(rs))
	}
	for _, r := range rs {
		if _, ok := order[r.call]; !ok {
			t.Fatalf("docs/api.md recipe for %s is not placed in the test's order: %s", r.call, r.line)
		}
	}
	slices.SortStableFunc(rs, func(a, b recipe) int { return order[a.call] - order[b.call] })
	d := startDaemon(t)
	vars := map[string]string{"$S": d.Sock, "$U": "http://localhost/ovsplane.v1.SwitchService"}
	for _, r := range rs {
		name := r.call
		if r.call == "ApplyPort" && strings.Contains(r.line, `"veth"`) {
			name = "ApplyPort veth"
		}
		t.Run(name, func(t *testing.T) {
			words, err := vsctldiff.SplitWords(withoutComment(r.line))
			if err != nil {
				t.Fatalf("%s: %v", r.line, err)
			}
			for i, w := range words {
				for k, v := range vars {
					w = strings.ReplaceAll(w, k, v)
				}
				words[i] = w
			}
			if r.call == "Watch" {
				checkWatch(t, words)
				return
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			if words[0] != "curl" {
				t.Fatalf("recipe does not start with curl: %s", r.line)
			}
			out, err := exec.CommandContext(ctx, "curl", append([]string{"-sS"}, words[1:]...)...).Output()
			if err != nil {
				t.Fatalf("%s: %v\n%s", r.line, err, out)
			}
			var got map[string]any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%s: answer is not a JSON object: %v\n%s", r.line, err, out)
			}
			code, _ := got["code"].(string)
			want := ""
			if nh, ok := notHere[name]; ok {
				if code != nh.code {
					t.Fatalf("%s (%s): answer %s, want the code %s", r.line, nh.why, out, nh.code)
				}
				return
			}
			if r.response != "" {
				var doc map[string]any
				if err := json.Unmarshal([]byte(r.response), &doc); err != nil {
					t.Fatal(err)
				}
				want, _ = doc["code"].(string)
				switch {
				case keysOnly[name]:
					for k := range doc {
						if _, ok := got[k]; !ok && !(name == "ListPlugins" && k == "plugins") {
							t.Errorf("%s: answer %s lacks the documented field %q", r.line, out, k)
						}
					}
				case want != "":
					if code != want || got["message"] != doc["message"] {
						t.Errorf("%s:\nanswer     %s\ndocumented %s", r.line, out, r.response)
					}
				case !reflect.DeepEqual(got, doc):
					t.Errorf("%s:\nanswer     %s\ndocumented %s", r.line, out, r.response)
				}
			}
			if want == "" && code != "" {
				t.Errorf("%s: failed: %s", r.line, out)
			}
		})
	}
}

// checkWatch runs the Watch recipe (printf … | curl … --data-binary @- …) as a pipeline of the
// two programs (no shell) and checks the stream's first message: a data message holding the
// snapshot of the objects the earlier recipes created.
func checkWatch(t *testing.T, words []string) {
	t.Helper()
	bar := slices.Index(words, "|")
	if bar < 0 || words[0] != "printf" || words[bar+1] != "curl" {
		t.Fatalf("the Watch recipe is not `printf … | curl …`: %q", words)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	input, err := exec.CommandContext(ctx, "printf", words[1:bar]...).Output()
	if err != nil {
		t.Fatalf("printf %q: %v", words[1:bar], err)
	}
	curl := exec.CommandContext(ctx, "curl", words[bar+2:]...)
	curl.Stdin = bytes.NewReader(input)
	stdout, err := curl.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := curl.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = curl.Wait()
	}()
	r := bufio.NewReader(stdout)
	var head [5]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		t.Fatalf("Watch: no message header: %v", err)
	}
	size := binary.BigEndian.Uint32(head[1:])
	if head[0] != 0 || size > 1<<20 {
		t.Fatalf("Watch: first header % x: want a data message (flags 0) of at most 1 MiB", head)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(r, body); err != nil {
		t.Fatalf("Watch: message cut: %v", err)
	}
	var msg struct {
		Snapshot bool
		Statuses []struct{ Key string }
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatalf("Watch: %v\n%s", err, body)
	}
	keys := fmt.Sprint(msg.Statuses)
	if !msg.Snapshot || !strings.Contains(keys, "bridge/br0") || !strings.Contains(keys, "port/vhu1") {
		t.Errorf("Watch: first message %s: want the snapshot with bridge/br0 and port/vhu1", body)
	}
}
