package dsa_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ovsplane/ovsplane/dsa"
	"github.com/ovsplane/ovsplane/dsa/simidxd"
	"github.com/ovsplane/ovsplane/internal/sysfs"
)

// codeCase produces one catalogued code, as an error or as a warning, through the library's own
// paths (the simulated kernel's refusals included), and names words its message must hold.
type codeCase struct {
	name  string
	code  dsa.Code
	words []string
	run   func(t *testing.T) ([]dsa.Warning, error)
}

func applyOn(v simidxd.Variant, req dsa.Request, setup func(*recFS)) func(t *testing.T) ([]dsa.Warning, error) {
	return func(t *testing.T) ([]dsa.Warning, error) {
		_, f, h := simHost(t, v)
		if setup != nil {
			setup(f)
		}
		res, err := h.Apply(t.Context(), request(t, "", req))
		if res != nil && res.Plan != nil {
			return res.Plan.Warnings, err
		}
		return nil, err
	}
}

func normalize(r dsa.Request, filePrefix string) func(t *testing.T) ([]dsa.Warning, error) {
	return func(t *testing.T) ([]dsa.Warning, error) { return nil, r.Normalize(filePrefix) }
}

func dev(d dsa.DeviceRequest) dsa.Request { return dsa.Request{Devices: []dsa.DeviceRequest{d}} }

func codeCases() []codeCase {
	numa0 := 0
	return []codeCase{
		{"no dsa bus", dsa.CodeAbsent, []string{"modprobe idxd"}, func(t *testing.T) ([]dsa.Warning, error) {
			_, err := newHost(t, sysfs.New(t.TempDir())).Plan(t.Context(), request(t, "", dev(dsa.DeviceRequest{Device: "dsa0"})))
			return nil, err
		}},
		{"no such device", dsa.CodeAbsent, []string{"dsa5", "--detect"}, applyOn(simidxd.SPR, dev(dsa.DeviceRequest{Device: "dsa5"}), nil)},
		{"pasid off", dsa.CodeNoSVA, []string{"pasid_enabled=0", "intel_iommu=on,sm_on"}, applyOn(simidxd.NoPASID, twoWQs(), nil)},
		{"kernel refuses a user wq", dsa.CodeNoSVA, []string{"EOPNOTSUPP", "sm_on"}, applyOn(simidxd.SPR, twoWQs(), func(f *recFS) {
			f.fail = map[string]error{"drivers/user/bind": syscall.EOPNOTSUPP}
		})},
		{"clients", dsa.CodeBusy, []string{"2 clients", "cut them off"}, applyOn(simidxd.Busy, twoWQs(), nil)},
		{"size budget", dsa.CodeWQSize, []string{"max_work_queues_size=16"}, applyOn(simidxd.SmallWQBudget, dev(dsa.DeviceRequest{Device: "dsa0", WQs: dsa.WQRequest{Count: 2, Size: 16}}), nil)},
		{"too many queues", dsa.CodeWQSize, []string{"max_work_queues=8"}, applyOn(simidxd.SPR, dev(dsa.DeviceRequest{Device: "dsa0", WQs: dsa.WQRequest{Count: 9}}), nil)},
		{"kernel refuses a size", dsa.CodeWQSize, []string{"size=64"}, applyOn(simidxd.SPR, twoWQs(), func(f *recFS) {
			f.fail = map[string]error{"wq0.1/size": syscall.EINVAL}
		})},
		{"driver_name not user", dsa.CodeDriverName, []string{"ENODEV", "driver_name=user"}, applyOn(simidxd.SPR, twoWQs(), func(f *recFS) {
			f.swallow = map[string]bool{"/driver_name": true} // the bind then meets the kernel's rule
		})},
		{"driver_name refused", dsa.CodeDriverName, []string{"driver_name=user"}, applyOn(simidxd.SPR, twoWQs(), func(f *recFS) {
			f.fail = map[string]error{"/driver_name": syscall.EINVAL}
		})},
		{"name prefix", dsa.CodeNamePrefix, []string{"ignored", "dpdk_"}, normalize(dev(dsa.DeviceRequest{Device: "dsa0", WQs: dsa.WQRequest{NamePrefix: "ovs"}}), "")},
		{"chown refused", dsa.CodePerms, []string{"dev/dsa/wq0.0", "openvswitch"}, applyOn(simidxd.SPR, twoWQs(), func(f *recFS) {
			f.fail = map[string]error{"dev/dsa/wq0.0": syscall.EPERM}
		})},
		{"device on another node", dsa.CodeNUMA, []string{"NUMA node 1", "cross sockets"}, applyOn(simidxd.TwoNUMA, dev(dsa.DeviceRequest{Device: "dsa2", NUMA: &numa0}), nil)},
		{"pmd on another node", dsa.CodeNUMA, nil, func(*testing.T) ([]dsa.Warning, error) {
			a := dsa.AssignPMDs([]dsa.PMD{{Core: 2, NUMA: 1}}, []dsa.WQRef{{Name: "wq0.0", Device: "dsa0", NUMA: 0}})
			return a.Warnings, nil
		}},
		{"more pmds than wqs", dsa.CodeTooFewWQs, nil, func(*testing.T) ([]dsa.Warning, error) {
			a := dsa.AssignPMDs([]dsa.PMD{{Core: 2}, {Core: 3}}, []dsa.WQRef{{Name: "wq0.0", Device: "dsa0"}})
			return a.Warnings, nil
		}},
		{"stock ovs in mode require", dsa.CodeOVSNoVhostAsync, []string{"never merged"}, func(*testing.T) ([]dsa.Warning, error) {
			_, err := dsa.ProbeOVS([]string{"list-commands", "dpif-netdev/pmd-rxq-show"}, nil, "3.1.0", "DPDK 22.11.1").Check(dsa.AsyncRequire)
			return nil, err
		}},
		{"priority", dsa.CodeInvalidRequest, []string{"1..15"}, normalize(dev(dsa.DeviceRequest{Device: "dsa0", WQs: dsa.WQRequest{Priority: 16}}), "")},
		{"engines", dsa.CodeInvalidRequest, []string{"max_engines=4"}, applyOn(simidxd.SPR, dev(dsa.DeviceRequest{Device: "dsa0", Engines: 5}), nil)},
		{"device bind fails", dsa.CodeKernel, []string{"drivers/idxd/bind", "cmd_status=0x800d0000", "dmesg"}, applyOn(simidxd.SPR, twoWQs(), func(f *recFS) {
			// Work queues left out of every group: the kernel refuses to enable the device.
			f.swallow = map[string]bool{"wq0.0/group_id": true, "wq0.1/group_id": true}
		})},
		{"wq not enabled after bind", dsa.CodeKernel, []string{"wq0.0", "not enabled"}, applyOn(simidxd.SPR, twoWQs(), func(f *recFS) {
			f.swallow = map[string]bool{"drivers/user/bind": true}
		})},
	}
}

func TestCodes(t *testing.T) {
	for _, c := range codeCases() {
		t.Run(string(c.code)+"/"+c.name, func(t *testing.T) {
			warnings, err := c.run(t)
			text := ""
			switch {
			case dsa.CodeOf(err) == c.code:
				text = err.Error()
			case err != nil:
				t.Fatalf("error %v, want %s", err, c.code)
			default:
				for _, w := range warnings {
					if w.Code == c.code {
						text = w.Message
					}
				}
				if text == "" {
					t.Fatalf("no %s: warnings %+v", c.code, warnings)
				}
			}
			for _, w := range c.words {
				if !strings.Contains(text, w) {
					t.Errorf("%q lacks %q", text, w)
				}
			}
		})
	}
}

// Every code of the catalogue has a case above: a code added without one fails here.
func TestEveryCodeHasACase(t *testing.T) {
	have := map[dsa.Code]bool{}
	for _, c := range codeCases() {
		have[c.code] = true
	}
	for _, code := range dsa.Codes {
		if !have[code] {
			t.Errorf("code %s has no case in codeCases", code)
		}
	}
	if len(have) != len(dsa.Codes) {
		t.Errorf("codeCases covers %d codes, the catalogue has %d", len(have), len(dsa.Codes))
	}
	// Codes is kept by hand: every Code constant of the package's source must be in it.
	declared := declaredCodes(t)
	if len(declared) == 0 {
		t.Fatal("no Code constant found in the package's source: the parse below is broken")
	}
	for name, code := range declared {
		if !slices.Contains(dsa.Codes, code) {
			t.Errorf("constant %s (%s) is not in dsa.Codes: add it there and give it a case in codeCases", name, code)
		}
	}
}

// declaredCodes parses the package's non-test Go files (errors.go and any other) and returns
// every constant declared with type Code (or as Code("…")), by name, with its value.
func declaredCodes(t *testing.T) map[string]dsa.Code {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]dsa.Code{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				typed := isIdent(vs.Type, "Code")
				for i, name := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					v := vs.Values[i]
					if call, ok := v.(*ast.CallExpr); ok && isIdent(call.Fun, "Code") && len(call.Args) == 1 {
						typed, v = true, call.Args[0]
					}
					if !typed {
						continue
					}
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Errorf("%s: Code constant %s is not a string literal; this test cannot check it", f, name.Name)
						continue
					}
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out[name.Name] = dsa.Code(s)
				}
			}
		}
	}
	return out
}

// isIdent reports whether e is the identifier name.
func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
