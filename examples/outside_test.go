package examples_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goModOfRecipe finds the go.mod that plugin-sample/README.md tells an author to write (the
// heredoc between `cat > go.mod <<'MOD'` and `MOD`) and its replace target.
var goModOfRecipe = regexp.MustCompile(`(?s)cat > go\.mod <<'MOD'\n(.*?)\nMOD\n`)

// TestTemplateOutsideTheRepository follows the recipe of examples/plugin-sample/README.md for an
// author outside this repository: the template copied to a directory outside the module, the
// README's go.mod (a replace pointing at this checkout), `go mod tidy` with GOFLAGS=-mod=mod and
// the environment's GOPROXY, then `go test ./...`: the copied template's own tests, its fake-host
// test and the built plugin started by ovsplane's plugin host (the go-plugin handshake, the
// trust checks, a call). It needs the module proxy only for what the module cache lacks.
func TestTemplateOutsideTheRepository(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("plugin-sample", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := goModOfRecipe.FindSubmatch(readme)
	if m == nil {
		t.Fatal("plugin-sample/README.md has no `cat > go.mod <<'MOD'` recipe")
	}
	const checkout = "=> ../ovsplane"
	if !strings.Contains(string(m[1]), checkout) {
		t.Fatalf("the README's go.mod does not replace the module %s:\n%s", checkout, m[1])
	}
	// docs/plugins.md's walk-through gives the same go.mod, for its own module name.
	guide, err := os.ReadFile(filepath.Join("..", "docs", "plugins.md"))
	if err != nil {
		t.Fatal(err)
	}
	moduleLine := regexp.MustCompile(`(?m)^module .*$`)
	if g := goModOfRecipe.FindSubmatch(guide); g == nil ||
		!bytes.Equal(moduleLine.ReplaceAll(g[1], nil), moduleLine.ReplaceAll(m[1], nil)) {
		t.Fatalf("docs/plugins.md's go.mod recipe differs from plugin-sample/README.md's (module line aside)")
	}
	goMod := strings.Replace(string(m[1]), checkout, "=> "+root, 1) + "\n"

	dir := filepath.Join(t.TempDir(), "ovsplane-myplugin") // outside the repository's module
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("plugin-sample", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("plugin-sample: %v %v", files, err)
	}
	for _, f := range append(files, "") {
		data, name := []byte(goMod), "go.mod"
		if f != "" {
			if data, err = os.ReadFile(f); err != nil {
				t.Fatal(err)
			}
			name = filepath.Base(f)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	for _, args := range [][]string{{"mod", "tidy"}, {"vet", "./..."}, {"test", "-count=1", "./..."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s in %s: %v\n%s\ngo.mod:\n%s", strings.Join(args, " "), dir, err, out, goMod)
		}
		t.Logf("go %s: %s", strings.Join(args, " "), strings.TrimSpace(string(out)))
	}
}
