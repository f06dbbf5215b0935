package testkit_test

import (
	"os"
	"testing"

	"github.com/ovsplane/ovsplane/internal/testkit"
)

// TestUpdateDocSection: the section is appended once, then replaced in place; unmatched
// markers are refused and leave the file alone.
func TestUpdateDocSection(t *testing.T) {
	const heading, begin, end = "## bench", "<!-- b:begin -->", "<!-- b:end -->"
	path := t.TempDir() + "/doc.md"
	if err := os.WriteFile(path, []byte("# B\n\ntext\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"one\n", "two"} {
		if err := testkit.UpdateDocSection(path, heading, begin, end, g); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "# B\n\ntext\n\n" + heading + "\n\n" + begin + "\ntwo\n" + end + "\n"; string(got) != want {
		t.Errorf("doc after two updates:\n%s\nwant:\n%s", got, want)
	}
	for _, bad := range []string{end + begin, begin + " only", end + " only"} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := testkit.UpdateDocSection(path, heading, begin, end, "x"); err == nil {
			t.Errorf("markers %q: accepted", bad)
		}
		if got, _ := os.ReadFile(path); string(got) != bad {
			t.Errorf("markers %q: the file changed to %q", bad, got)
		}
	}
}
