package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/ovsplane/ovsplane"

// The floors of the house, lowest first (docs/architecture.md, "The house: floors and rules").
// A package may import packages on its own floor or below, never above.
const (
	side      = 0 // test support: may import anything; product code must not import it
	libs      = 1 // leaf libraries: the standard library and outside modules only
	model     = 2 // the domain vocabulary
	services  = 3 // OVSDB, the API contract and client, the plugin contract, SDK and host, vdpa
	core      = 4 // the daemon core, and the cores of the other programs (vsctl, plugins)
	programs  = 5 // main packages and generators
	floorless = -1
)

var floorNames = map[int]string{side: "test support", libs: "libs", model: "model", services: "services",
	core: "core", programs: "programs"}

// floors places every package of the module, by its path below the module: "x/..." is x and
// everything below it, the longest matching pattern wins. A package that matches nothing fails the
// test: place it when you add it. Packages whose path contains "test" or "fake" are test support
// without being listed.
var floors = map[string]int{
	"cmd/...":                               programs,
	"plugins/vdpa":                          programs,
	"plugins/dsa":                           programs,
	"plugins/stripe":                        programs,
	"plugins/overlay":                       programs,
	"plugins/flowmon":                       programs,
	"examples/plugin-sample":                programs,
	"examples/veth-reference":               programs,
	"internal/cli/vsctl/internal/genschema": programs,

	"vswitchd/...":                         core,
	"internal/cli/...":                     core,
	"plugins/vdpa/internal/...":            core,
	"plugins/dsa/internal/...":             core,
	"plugins/stripe/internal/...":          core,
	"plugins/overlay/internal/...":         core,
	"plugins/flowmon/internal/...":         core,
	"examples/veth-reference/internal/...": core,

	"ovsdb/...":             services,
	"api/...":               services,
	"plugins/...":           services,
	"plugins/internal/wire": services, // go-plugin and gRPC glue of plugins/api, for plugins/sdk and plugins/host only
	"vdpa/...":              services,
	"dsa/...":               services,
	"stripe/...":            services, // the stripe plugin's pure building blocks (issue 16)
	"overlay/...":           services, // the overlay plugin's building blocks (issue 17): route, ethudp
	"flowmon/...":           services, // the flowmon plugin's building blocks (issue 18): flow, collect, store, gen

	"internal/desired":      services,
	"internal/apitransport": services, // the API's HTTP/2 transport, shared by api/client and vsctl // the desired-state file format, shared by the daemon and vsctl

	"model/...": model,

	"internal/oftarget/...": libs,
	"internal/ovsproc/...":  libs,
	"internal/sysfs":        libs, // rooted /sys, /dev, /proc access for the hardware libraries (vdpa, dsa)
	"ovsdb/datum/...":       libs,

	"test/...":        side,
	"bench/...":       side,
	"examples":        side, // documentation only
	"docs/...":        side, // the guides' code snippets, compiled and run by their tests
	"examples/vdpa":   side, // the fixture capture script's test
	"dsa/dpdksmoke":   side, // test only: DPDK's idxd bus on a simulated DSA tree
	"internal/layers": side,
}

// daemonCore is what cmd/vsctl must not link: the daemon's packages.
func daemonCore(rel string) bool {
	return rel == "vswitchd" || strings.HasPrefix(rel, "vswitchd/")
}

// heavyForVsctl are the outside modules a command run once per change must not link.
var heavyForVsctl = []string{
	"github.com/spf13/viper",
	"github.com/prometheus/",
	"github.com/hashicorp/go-plugin",
	"github.com/ovn-kubernetes/libovsdb",
	// The protobuf runtime and the generated API initialise at every start (docs/decisions/0002):
	// vsctl's daemon commands use their own thin client (internal/cli/daemoncmd/apiclient.go).
	"google.golang.org/protobuf",
	"google.golang.org/grpc",
	"connectrpc.com/connect",
}

// The rules, by the name violations carry.
var rules = map[string]string{
	"floor":         "a package may import only packages on its own floor or below",
	"test-support":  `product code must not import test support (a path containing "test" or "fake", or a package the floors put to the side)`,
	"model-leaf":    "model/... may import only the standard library and model/...",
	"datum-leaf":    "ovsdb/datum may import only the standard library",
	"vsctl-closure": "cmd/vsctl must not link the daemon core (vswitchd/...), api/... (generated protobuf), viper, prometheus, go-plugin, libovsdb, protobuf, gRPC or connect",
}

// knownViolations are the edges that still break a rule on this branch, each with the issue-13
// work that removes it (edge numbers are those of the house review, docs/review/house.md §1). The
// test fails on a violation not listed here and on a listed one that no longer occurs, so this
// list can only shrink: delete an entry when its edge goes.
var knownViolations = map[violation]string{}

// violation is one import that breaks a rule: from imports to. Paths of the module's packages
// are relative to the module.
type violation struct {
	rule, from, to string
}

func (v violation) String() string {
	s := fmt.Sprintf("%s imports %s: breaks %q (%s)", v.from, v.to, v.rule, rules[v.rule])
	if v.rule == "floor" {
		s += fmt.Sprintf(": %s is on floor %d (%s), %s on floor %d (%s)", v.from, floorOf(v.from), floorNames[floorOf(v.from)],
			v.to, floorOf(v.to), floorNames[floorOf(v.to)])
	}
	return s
}

// pkg is what `go list -json` says about a package that this test needs.
type pkg struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Error      *struct{ Err string }
}

func TestLayers(t *testing.T) {
	pkgs := loadGraph(t)
	got, unplaced := check(pkgs)
	for _, p := range unplaced {
		t.Errorf("package %s is on no floor: add it to floors in internal/layers/layers_test.go and to the drawing in docs/architecture.md", p)
	}
	for _, v := range got {
		if _, ok := knownViolations[v]; !ok {
			t.Errorf("%v", v)
		}
	}
	for v, fix := range knownViolations {
		if !slices.Contains(got, v) {
			t.Errorf("known violation %q %s -> %s no longer occurs (%s): delete it from knownViolations", v.rule, v.from, v.to, fix)
		}
	}
}

// loadGraph runs `go list -deps -json ./...` at the module root: every package of the module and
// everything they import (non-test imports; test files may import anything).
func loadGraph(t *testing.T) map[string]*pkg {
	t.Helper()
	goCmd, err := exec.LookPath("go") // go test puts its own GOROOT/bin first in PATH
	if err != nil {
		t.Fatalf("no go command: %v", err)
	}
	root, err := exec.Command(goCmd, "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	cmd := exec.Command(goCmd, "list", "-deps", "-json=ImportPath,Standard,Imports,Error", "./...")
	cmd.Dir = strings.TrimSpace(string(root))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps -json ./...: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]*pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		pkgs[p.ImportPath] = &p
	}
	if pkgs[module+"/cmd/vsctl"] == nil {
		t.Fatalf("go list did not list %s/cmd/vsctl", module)
	}
	return pkgs
}

// check returns every rule violation in pkgs, sorted, and the module's packages on no floor.
func check(pkgs map[string]*pkg) (found []violation, unplaced []string) {
	add := func(rule, from, to string) {
		v := violation{rule, rel(from), rel(to)}
		if !slices.Contains(found, v) {
			found = append(found, v)
		}
	}
	for path, p := range pkgs {
		if !inModule(path) {
			continue
		}
		f := floorOf(rel(path))
		if f == floorless {
			unplaced = append(unplaced, path)
			continue
		}
		if f == side {
			continue
		}
		r := rel(path)
		for _, imp := range p.Imports {
			std := imp == "C" || pkgs[imp] != nil && pkgs[imp].Standard
			switch {
			case inModule(imp):
				if g := floorOf(rel(imp)); g == side {
					add("test-support", path, imp)
				} else if g > f {
					add("floor", path, imp)
				}
			case testish(imp):
				add("test-support", path, imp)
			}
			if under(r, "model") && !std && !under(rel(imp), "model") {
				add("model-leaf", path, imp)
			}
			if under(r, "ovsdb/datum") && !std {
				add("datum-leaf", path, imp)
			}
		}
	}
	// vsctl: walk its imports without entering a forbidden package; each import of one is named.
	seen := map[string]bool{}
	queue := []string{module + "/cmd/vsctl"}
	for len(queue) > 0 {
		path := queue[0]
		queue = queue[1:]
		if seen[path] {
			continue
		}
		seen[path] = true
		p := pkgs[path]
		if p == nil || p.Standard {
			continue
		}
		for _, imp := range p.Imports {
			if forbiddenForVsctl(imp) {
				add("vsctl-closure", path, imp)
				continue
			}
			queue = append(queue, imp)
		}
	}
	slices.SortFunc(found, func(a, b violation) int { return strings.Compare(a.String(), b.String()) })
	slices.Sort(unplaced)
	return found, unplaced
}

// floorOf returns the floor of a module package given its path below the module.
func floorOf(rel string) int {
	if testish(rel) {
		return side
	}
	best, floor := -1, floorless
	for pattern, f := range floors {
		base, tree := strings.CutSuffix(pattern, "/...")
		if rel == base || tree && strings.HasPrefix(rel, base+"/") {
			if len(base) > best {
				best, floor = len(base), f
			}
		}
	}
	return floor
}

func forbiddenForVsctl(imp string) bool {
	if inModule(imp) {
		r := rel(imp)
		return daemonCore(r) || r == "api" || strings.HasPrefix(r, "api/")
	}
	for _, h := range heavyForVsctl {
		if imp == strings.TrimSuffix(h, "/") || strings.HasPrefix(imp, strings.TrimSuffix(h, "/")+"/") {
			return true
		}
	}
	return false
}

// testish reports whether an import path names test support: "test" or "fake" in it, as in
// testing, net/http/httptest, ovsdb/ovsdbtest, test/lab or a fake kernel.
func testish(path string) bool {
	return strings.Contains(path, "test") || strings.Contains(path, "fake")
}

func inModule(path string) bool { return path == module || strings.HasPrefix(path, module+"/") }

// rel is path below the module for the module's packages, path itself otherwise.
func rel(path string) string {
	if path == module {
		return "."
	}
	return strings.TrimPrefix(path, module+"/")
}

// under reports whether rel is dir or below it.
func under(rel, dir string) bool { return rel == dir || strings.HasPrefix(rel, dir+"/") }

// TestRulesCatch makes sure the checks fire: a made-up graph breaking every rule once.
func TestRulesCatch(t *testing.T) {
	m := func(rel string) string { return module + "/" + rel }
	std := func(path string) *pkg { return &pkg{ImportPath: path, Standard: true} }
	pkgs := map[string]*pkg{
		"fmt":                          std("fmt"),
		"testing":                      std("testing"),
		"github.com/spf13/viper":       {ImportPath: "github.com/spf13/viper"},
		m("cmd/vsctl"):                 {Imports: []string{m("internal/cli/vsctl")}},
		m("internal/cli/vsctl"):        {Imports: []string{m("api/client"), "github.com/spf13/viper"}},
		m("api/client"):                {Imports: []string{m("vswitchd/config")}},
		m("vswitchd/config"):           {Imports: []string{m("model")}},
		m("model"):                     {Imports: []string{"fmt", m("ovsdb/datum")}},
		m("ovsdb/datum"):               {Imports: []string{"fmt", m("model")}},
		m("ovsdb"):                     {Imports: []string{m("ovsdb/ovsdbtest"), "testing", m("vswitchd")}},
		m("vswitchd"):                  {},
		m("ovsdb/ovsdbtest"):           {Imports: []string{m("vswitchd")}},
		m("newthing"):                  {},
		m("internal/cli/vsctl/nested"): {Imports: []string{m("vswitchd/sandbox")}}, // sideways, not linked by vsctl
		m("vswitchd/sandbox"):          {},
	}
	for p, v := range pkgs {
		v.ImportPath = p
	}
	got, unplaced := check(pkgs)
	want := []violation{
		{"datum-leaf", "ovsdb/datum", "model"},
		{"floor", "api/client", "vswitchd/config"},
		{"floor", "ovsdb", "vswitchd"},
		{"floor", "ovsdb/datum", "model"},
		{"model-leaf", "model", "ovsdb/datum"},
		{"test-support", "ovsdb", "ovsdb/ovsdbtest"},
		{"test-support", "ovsdb", "testing"},
		{"vsctl-closure", "internal/cli/vsctl", "github.com/spf13/viper"},
		{"vsctl-closure", "internal/cli/vsctl", "api/client"},
	}
	slices.SortFunc(want, func(a, b violation) int { return strings.Compare(a.String(), b.String()) })
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n got %v\nwant %v", got, want)
	}
	if !slices.Equal(unplaced, []string{m("newthing")}) {
		t.Errorf("unplaced = %v, want [newthing]", unplaced)
	}
}
