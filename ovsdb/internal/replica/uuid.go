package replica

// UUID is a row uuid in binary form.
type UUID [16]byte

const hexDigits = "0123456789abcdef"

// parseUUID parses the canonical lower-case text form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx,
// the only one ovsdb-server sends (upper-case is refused so that a uuid formats back to the
// text it came from).
func parseUUID(b []byte) (UUID, bool) {
	var u UUID
	if len(b) != 36 {
		return u, false
	}
	j := 0
	for i := 0; i < 36; i++ {
		switch i {
		case 8, 13, 18, 23:
			if b[i] != '-' {
				return u, false
			}
			continue
		}
		hi, ok1 := unhex(b[i])
		lo, ok2 := unhex(b[i+1])
		if !ok1 || !ok2 {
			return u, false
		}
		u[j] = hi<<4 | lo
		j++
		i++
	}
	return u, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// ParseUUID parses a uuid in canonical lower-case text form.
func ParseUUID(s string) (UUID, bool) { return parseUUID([]byte(s)) }

// String formats u in canonical lower-case text form.
func (u UUID) String() string {
	var b [36]byte
	j := 0
	for i := 0; i < 16; i++ {
		switch i {
		case 4, 6, 8, 10:
			b[j] = '-'
			j++
		}
		b[j], b[j+1] = hexDigits[u[i]>>4], hexDigits[u[i]&15]
		j += 2
	}
	return string(b[:])
}

func compareUUID(a, b UUID) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}
