package vsctldiff

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// Session is a named list of command lines, each the argv that follows the program name.
type Session struct {
	Name  string
	Lines [][]string
}

// ParseSession reads a session file (see the package documentation). Errors name the line.
func ParseSession(name string, r io.Reader) (Session, error) {
	s := Session{Name: name}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		words, err := SplitWords(line)
		if err != nil {
			return Session{}, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		s.Lines = append(s.Lines, words)
	}
	if err := sc.Err(); err != nil {
		return Session{}, fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

// SplitWords splits a command line into words like a POSIX shell without expansions: runs of
// blanks separate words; '…' keeps everything literally; "…" keeps everything but \" \\ \$ \`
// escapes; a backslash outside quotes escapes the next character.
func SplitWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\\':
			if i+1 >= len(line) {
				return nil, fmt.Errorf("trailing backslash")
			}
			i++
			cur.WriteByte(line[i])
			inWord = true
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unterminated single quote")
			}
			cur.WriteString(line[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			j := i + 1
			for ; j < len(line) && line[j] != '"'; j++ {
				if line[j] == '\\' && j+1 < len(line) && strings.IndexByte("\"\\$`", line[j+1]) >= 0 {
					j++
				}
				cur.WriteByte(line[j])
			}
			if j >= len(line) {
				return nil, fmt.Errorf("unterminated double quote")
			}
			i = j
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
