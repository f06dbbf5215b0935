package testkit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
)

// LogBuffer is a bytes.Buffer that goroutines may write to while a test reads it: the output
// of a logger, a child process or a plugin host. The zero value is ready to use.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Tail returns the last n bytes written so far, see Tail.
func (l *LogBuffer) Tail(n int) string { return Tail(l.String(), n) }

// Records decodes the lines written so far as JSON objects (slog's JSON handler writes one a
// line). A line that is not a JSON object is skipped; err names the first such line, so that
// a test that wants only JSON can fail on it and one that does not can ignore it.
func (l *LogBuffer) Records() (recs []map[string]any, err error) {
	l.mu.Lock()
	data := bytes.Clone(l.b.Bytes())
	l.mu.Unlock()
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r map[string]any
		if jerr := json.Unmarshal(sc.Bytes(), &r); jerr != nil {
			if err == nil {
				err = fmt.Errorf("log line %q is not JSON: %w", sc.Text(), jerr)
			}
			continue
		}
		recs = append(recs, r)
	}
	if serr := sc.Err(); serr != nil && err == nil {
		err = serr
	}
	return recs, err
}

// Tail returns the last n bytes of s, marked with a leading "…" when it cut anything: the end
// of a long log, for a failure message.
func Tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
