package embedded

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// What ovsdb-server 3.1 does with strings it cannot take (lib/json.c, lib/ovsdb-data.c), and
// the embedded server with it:
//   - a NUL, raw or escaped ("\u0000"), a raw control character or a malformed escaped
//     surrogate pair anywhere in a message is a JSON parse error: ovsdb-server logs "error
//     parsing stream" and drops the session ("Protocol error") without answering, so every
//     request on that session fails. screen reports these and the connection is closed.
//     (Go's decoder refuses the raw bytes itself and would decode the escapes.)
//   - invalid UTF-8 in a string atom fails the transaction at that operation with
//     "constraint violation", details "not a valid UTF-8 string: invalid UTF-8 sequence
//     0xff"; nothing is written. Go's decoder would silently replace the bytes with U+FFFD,
//     so screen replaces every invalid byte inside a string by a marker — the bytes
//     ovsdb-server would report, in hex between two NULs — which cannot otherwise survive
//     screen, and invalidUTF8 finds it in the operations. A lone low surrogate escape
//     ("\udc00") is such a sequence too: ovsdb-server decodes it to bytes ED B0 80.

// invalidMark starts the marker of an invalid UTF-8 byte in a decoded string.
const invalidMark = "\x00"

// screen checks one JSON-RPC message as ovsdb-server's parser would. It returns why
// ovsdb-server would drop the session ("" when it would not) and the message with invalid
// UTF-8 bytes inside strings replaced by markers (msg itself when there are none).
func screen(msg []byte) ([]byte, string) {
	var out []byte // allocated at the first invalid byte
	inString := false
	for i := 0; i < len(msg); {
		c := msg[i]
		switch {
		case !inString:
			if c == '"' {
				inString = true
			}
			i++
			if out != nil {
				out = append(out, c)
			}
			continue
		case c == '"':
			inString = false
		case c == '\\' && i+1 < len(msg):
			n := 2
			if msg[i+1] == 'u' {
				code, ok := hex4(msg[i+2:])
				switch {
				case !ok:
					return nil, "malformed \\u escape"
				case code == 0:
					return nil, "null bytes not supported in quoted strings"
				case code >= 0xDC00 && code <= 0xDFFF:
					// ovsdb-server decodes a lone low surrogate to its three bytes,
					// which are invalid UTF-8.
					if out == nil {
						out = append(make([]byte, 0, len(msg)+16), msg[:i]...)
					}
					out = appendMark(out, []byte{byte(0xE0 | code>>12), byte(0x80 | (code>>6)&0x3F), byte(0x80 | code&0x3F)})
					i += 6
					continue
				case code >= 0xD800 && code <= 0xDBFF:
					low, ok := hex4(msg[min(i+8, len(msg)):])
					if i+7 >= len(msg) || msg[i+6] != '\\' || msg[i+7] != 'u' || !ok || low < 0xDC00 || low > 0xDFFF {
						return nil, "malformed escaped surrogate pair"
					}
					n = 12
				default:
					n = 6
				}
			}
			if out != nil {
				out = append(out, msg[i:min(i+n, len(msg))]...)
			}
			i += n
			continue
		case c < 0x20:
			return nil, fmt.Sprintf("U+%04X must be escaped in quoted string", c)
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(msg[i:])
			if r == utf8.RuneError && size <= 1 {
				if out == nil {
					out = append(make([]byte, 0, len(msg)+16), msg[:i]...)
				}
				out = appendMark(out, msg[i:])
				i++
				continue
			}
			if out != nil {
				out = append(out, msg[i:i+size]...)
			}
			i += size
			continue
		}
		if out != nil {
			out = append(out, c)
		}
		i++
	}
	if out == nil {
		return msg, ""
	}
	return out, ""
}

// appendMark appends the marker of the invalid UTF-8 sequence starting b: a NUL, the bytes
// ovsdb-server reports (the sequence up to and including its first bad byte) in hex, a NUL.
func appendMark(out, b []byte) []byte {
	out = append(out, `\u0000`...)
	for _, c := range b[:badSequence(b)] {
		out = fmt.Appendf(out, "%02x", c)
	}
	return append(out, `\u0000`...)
}

// badSequence returns the length of the invalid UTF-8 sequence at the start of b as
// ovsdb-server's validator reports it: a byte that cannot start a sequence alone, else the
// lead byte and its continuation bytes up to the first one out of range.
func badSequence(b []byte) int {
	c := b[0]
	need := 0
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c >= 0xE0 && c <= 0xEF:
		need = 2
	case c >= 0xF0 && c <= 0xF4:
		need = 3
	default:
		return 1
	}
	for j := 1; j <= need; j++ {
		if j >= len(b) {
			return j
		}
		lo, hi := byte(0x80), byte(0xBF)
		if j == 1 {
			switch c {
			case 0xE0:
				lo = 0xA0
			case 0xED:
				hi = 0x9F
			case 0xF0:
				lo = 0x90
			case 0xF4:
				hi = 0x8F
			}
		}
		if b[j] < lo || b[j] > hi {
			return j + 1
		}
	}
	return need + 1
}

// hex4 parses four hexadecimal digits at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// invalidUTF8 returns ovsdb-server's details for the first string in v (a decoded operation)
// that held invalid UTF-8 (marked by screen), or "" when there is none.
func invalidUTF8(v any) string {
	switch x := v.(type) {
	case string:
		i := strings.Index(x, invalidMark)
		if i < 0 {
			return ""
		}
		hexBytes, _, _ := strings.Cut(x[i+1:], invalidMark)
		var seq []string
		for j := 0; j+2 <= len(hexBytes); j += 2 {
			seq = append(seq, "0x"+hexBytes[j:j+2])
		}
		return "not a valid UTF-8 string: invalid UTF-8 sequence " + strings.Join(seq, " ")
	case []any:
		for _, e := range x {
			if d := invalidUTF8(e); d != "" {
				return d
			}
		}
	case map[string]any:
		for k, e := range x {
			if d := invalidUTF8(k); d != "" {
				return d
			}
			if d := invalidUTF8(e); d != "" {
				return d
			}
		}
	}
	return ""
}
