package datum

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// unescapeJSONString decodes the inside of a JSON string literal as OVS does.
func unescapeJSONString(in string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(in); {
		c := in[i]
		if c == '"' {
			return "", errors.New(`quoted string may not include unescaped "`)
		}
		if c != '\\' {
			b.WriteByte(c)
			i++
			continue
		}
		i++
		if i >= len(in) {
			return "", errors.New("quoted string may not end with backslash")
		}
		e := in[i]
		i++
		switch e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			c0, err := lex4Hex(in[i:])
			if err != nil {
				return "", err
			}
			i += 4
			if c0 >= 0xd800 && c0 < 0xdc00 {
				if len(in)-i < 6 || in[i] != '\\' || in[i+1] != 'u' {
					return "", errors.New("malformed escaped surrogate pair")
				}
				c1, err := lex4Hex(in[i+2:])
				if err != nil {
					return "", err
				}
				if c1 < 0xdc00 || c1 >= 0xe000 {
					return "", errors.New("second half of escaped surrogate pair is not trailing surrogate")
				}
				i += 6
				c0 = 0x10000 + (c0-0xd800)<<10 + (c1 - 0xdc00)
			}
			b.WriteString(encodeRuneLoose(c0))
		default:
			return "", fmt.Errorf("bad escape \\%c", e)
		}
	}
	return b.String(), nil
}

func lex4Hex(s string) (rune, error) {
	if len(s) < 4 {
		return 0, errors.New(`quoted string ends within \u escape`)
	}
	v, err := strconv.ParseUint(s[:4], 16, 32)
	if err != nil || strings.ContainsAny(s[:4], "+-_") {
		return 0, errors.New(`malformed \u escape`)
	}
	if v == 0 {
		return 0, errors.New("null bytes not supported in quoted strings")
	}
	return rune(v), nil
}

// encodeRuneLoose encodes r as UTF-8, including lone surrogates (as C's encoder would).
func encodeRuneLoose(r rune) string {
	if r >= 0xd800 && r < 0xe000 {
		return string([]byte{byte(0xe0 | r>>12), byte(0x80 | (r>>6)&0x3f), byte(0x80 | r&0x3f)})
	}
	return string(r)
}

// invalidUTF8 returns "" when s is valid UTF-8 (RFC 3629), else the bytes of its first invalid
// sequence, from the lead byte through the first offending byte, each as " 0x%02x"; when s ends
// inside a sequence, the offending byte is 0x00, as OVS (reading s as a C string) reports it.
func invalidUTF8(s string) string {
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			i++
			continue
		}
		var n int
		lo, hi := byte(0x80), byte(0xbf)
		switch {
		case c >= 0xc2 && c <= 0xdf:
			n = 2
		case c == 0xe0:
			n, lo = 3, 0xa0
		case c == 0xed:
			n, hi = 3, 0x9f
		case c >= 0xe1 && c <= 0xef:
			n = 3
		case c == 0xf0:
			n, lo = 4, 0x90
		case c >= 0xf1 && c <= 0xf3:
			n = 4
		case c == 0xf4:
			n, hi = 4, 0x8f
		default:
			return fmt.Sprintf(" 0x%02x", c)
		}
		for k := 1; k < n; k++ {
			if i+k >= len(s) || s[i+k] < lo || s[i+k] > hi {
				var b strings.Builder
				for _, x := range []byte(s[i:min(i+k+1, len(s))]) {
					fmt.Fprintf(&b, " 0x%02x", x)
				}
				if i+k >= len(s) {
					// OVS reads C strings: a truncated sequence ends at the terminating NUL.
					b.WriteString(" 0x00")
				}
				return b.String()
			}
			lo, hi = 0x80, 0xbf
		}
		i += n
	}
	return ""
}

// utf8RuneCount counts the characters of valid UTF-8 s (its non-continuation bytes).
func utf8RuneCount(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i]&0xc0 != 0x80 {
			n++
		}
	}
	return n
}

// InvalidUTF8 returns "" when s is valid UTF-8 as OVS checks it (RFC 3629: no surrogates,
// overlong forms or code points past U+10FFFF), else the bytes of its first invalid sequence,
// from the lead byte through the first offending byte, each as " 0x%02x" — the tail of OVS's
// "invalid UTF-8 sequence" message.
func InvalidUTF8(s string) string { return invalidUTF8(s) }
