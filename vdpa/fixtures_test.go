package vdpa_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ovsplane/ovsplane/vdpa"
)

// TestDeriveSwitchdevFixture derives cx6dx-switchdev.fixture from the hand-written legacy one by
// doing what an operator does (2 VFs, switchdev the documented way), and checks the committed
// file still matches. The derived fixture is then the base of most tests.
func TestDeriveSwitchdevFixture(t *testing.T) {
	k, h := bootNamed(t, "cx6dx-legacy")
	if err := h.SetNumVFs(ctx, "0000:65:00.0", 2); err != nil {
		t.Fatal(err)
	}
	if err := h.SetSwitchdev(ctx, "0000:65:00.0"); err != nil {
		t.Fatal(err)
	}
	got := "# Derived from cx6dx-legacy.fixture by the fake kernel: 2 VFs on PF0 (0000:65:00.2, .3) bound\n" +
		"# to mlx5_core with their vnet auxiliary devices (mgmtdevs), eswitch switchdev with representors\n" +
		"# pf0vf0/pf0vf1. Regenerate: go test ./vdpa -run TestDeriveSwitchdevFixture -update\n" + dump(t, k)
	file := filepath.Join("testdata", "cx6dx-switchdev.fixture")
	if *update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != got {
		t.Errorf("%s is stale:\n%s", file, diffLines(string(want), got))
	}
	_ = vdpa.Codes
}
