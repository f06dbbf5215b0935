package testkit

import (
	"fmt"
	"os"
	"strings"
)

// UpdateDocSection writes a benchmark's generated text into the markdown file at path: it
// replaces what lies between the begin and end markers (the markers stay), or, when the file
// has neither, appends heading and the marked block at its end. One marker without the other,
// or end before begin, is an error and the file is left as it was.
func UpdateDocSection(path, heading, begin, end, generated string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("update %s: %w", path, err)
	}
	doc := string(b)
	block := begin + "\n" + strings.TrimRight(generated, "\n") + "\n" + end
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	switch {
	case i >= 0 && j > i:
		doc = doc[:i] + block + doc[j+len(end):]
	case i < 0 && j < 0:
		doc = strings.TrimRight(doc, "\n") + "\n\n" + heading + "\n\n" + block + "\n"
	default:
		return fmt.Errorf("update %s: unmatched markers %q and %q", path, begin, end)
	}
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		return fmt.Errorf("update %s: %w", path, err)
	}
	return nil
}
