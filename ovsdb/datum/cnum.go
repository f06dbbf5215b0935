package datum

import "math"

// isCSpace reports whether c is white space for C's strtol in the C locale.
func isCSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// ScanCLong converts the longest prefix of s that C's strtoll(s, &end, 10) accepts: optional
// white space, an optional sign, decimal digits. It returns the value (clamped to the int64
// range on overflow, as strtoll does), how many bytes were consumed (0 when there are no
// digits), and whether the value overflowed.
func ScanCLong(s string) (v int64, n int, overflow bool) {
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	start := i
	// mag is the magnitude, saturated at sat (one above the largest negative magnitude).
	const limit = uint64(math.MaxInt64) + 1
	const sat = limit + 1
	var mag uint64
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		switch {
		case mag == sat:
		case mag > sat/10:
			mag = sat
		default:
			mag = min(mag*10+uint64(s[i]-'0'), sat)
		}
		i++
	}
	if i == start {
		return 0, 0, false
	}
	switch {
	case neg && mag > limit, !neg && mag > limit-1:
		overflow = true
		v = math.MaxInt64
		if neg {
			v = math.MinInt64
		}
	case neg:
		v = int64(-mag)
	default:
		v = int64(mag)
	}
	return v, i, overflow
}

// ParseCLong converts s the way OVS's str_to_llong does with base 10: the whole string must
// be a number strtoll accepts without overflow.
func ParseCLong(s string) (int64, bool) {
	v, n, overflow := ScanCLong(s)
	if n == 0 || n != len(s) || overflow {
		return 0, false
	}
	return v, true
}
