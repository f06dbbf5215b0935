// Package snippets_test keeps the code of docs/plugins.md true: every Go block there preceded by
// a `<!-- snippet: docs/snippets/DIR/FILE.go -->` line is the file, byte for byte, and the files
// are packages whose tests CI runs like any other. Run `go test ./docs/snippets -update` after
// editing a snippet to rewrite the blocks from the files.
package snippets_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the snippet blocks of the guides from docs/snippets")

// guides are the documents with snippet blocks, relative to the repository root.
var guides = []string{"docs/plugins.md"}

// block matches a marker line and the fenced Go block after it (group 1 the path, group 2 the
// block's content, up to and including its last newline).
var block = regexp.MustCompile("(?s)<!-- snippet: ([^ ]+) -->\n```go\n(.*?)```\n")

func TestGuidesEmbedTheSnippetsVerbatim(t *testing.T) {
	root := filepath.Join("..", "..")
	embedded := map[string]bool{}
	for _, guide := range guides {
		path := filepath.Join(root, guide)
		doc, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var failed bool
		out := block.ReplaceAllFunc(doc, func(m []byte) []byte {
			sub := block.FindSubmatch(m)
			file := string(sub[1])
			embedded[file] = true
			want, err := os.ReadFile(filepath.Join(root, file))
			if err != nil {
				t.Errorf("%s: snippet %s: %v", guide, file, err)
				failed = true
				return m
			}
			if !bytes.Equal(sub[2], want) && !*update {
				t.Errorf("%s: the block of %s differs from the file; run go test ./docs/snippets -update", guide, file)
			}
			return []byte("<!-- snippet: " + file + " -->\n```go\n" + string(want) + "```\n")
		})
		if *update && !failed && !bytes.Equal(out, doc) {
			if err := os.WriteFile(path, out, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("rewrote the snippet blocks of %s", guide)
		}
	}
	// Every snippet's code (its tests aside) is shown somewhere.
	files, err := filepath.Glob("*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no snippet files")
	}
	for _, f := range files {
		rel := filepath.ToSlash(filepath.Join("docs", "snippets", f))
		if !embedded[rel] && !isTest(f) {
			t.Errorf("%s is embedded in no guide: add a `<!-- snippet: %s -->` block", rel, rel)
		}
	}
}

func isTest(name string) bool {
	ok, _ := filepath.Match("*_test.go", filepath.Base(name))
	return ok
}
