package testkit

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOnlyTestsImportTestkit: no package of the module imports testkit from its non-test
// files, except test-support packages (a path ending in "test", or below test/).
func TestOnlyTestsImportTestkit(t *testing.T) {
	if testing.Short() {
		t.Skip("lists every package of the module")
	}
	const self = "github.com/ovsplane/ovsplane/internal/testkit"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "github.com/ovsplane/ovsplane/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		if !strings.Contains(" "+imports+" ", " "+self+" ") {
			continue
		}
		if strings.HasSuffix(pkg, "test") || strings.HasPrefix(pkg, "github.com/ovsplane/ovsplane/test/") {
			continue
		}
		t.Errorf("%s imports %s outside its tests: product code must not depend on test support", pkg, self)
	}
}
