package limits

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kind is the kind of a named object.
type Kind string

// The kinds of named objects.
const (
	Bridge    Kind = "bridge"
	Port      Kind = "port"
	Interface Kind = "interface"
)

// Object returns the usual description of a named object in messages: `port "p1"` (the name
// quoted with Go escapes, so NUL and invisible characters show).
func Object(kind Kind, name string) string { return fmt.Sprintf("%s %q", kind, name) }

// CheckName checks the name of an object of the given kind and returns an *Error (nil when
// the name is acceptable). It refuses what OVS, ovs-vswitchd or the kernel refuse or mangle —
// "", ".", "..", '/', ':', white space, NUL, control characters, invalid UTF-8, names longer
// than MaxKernelNameBytes (bridges) or MaxNameBytes (ports, interfaces) — and names that look
// like another name: invisible characters (format characters such as U+200B ZERO WIDTH SPACE
// and the bidirectional controls, default-ignorable code points, variation selectors),
// separators other than ASCII space, private-use and unassigned code points, U+FFFD, and a
// leading combining mark. Interfaces of kernel-backed types must also satisfy
// MaxKernelNameBytes: see CheckInterfaceName.
func CheckName(kind Kind, name string) error {
	bad := func(k error, reason, fix string) error {
		return &Error{Object: Object(kind, name), Field: "name", Reason: reason, Fix: fix, Kind: k}
	}
	max := MaxNameBytes
	if kind == Bridge {
		max = MaxKernelNameBytes
	}
	switch {
	case name == "":
		return bad(ErrBadName, "empty", "give it a name")
	case name == "." || name == "..":
		return bad(ErrBadName, "\".\" and \"..\" are not device names (the kernel and ovs-vswitchd refuse them)", "choose another name")
	case len(name) > max:
		return bad(ErrTooLarge, fmt.Sprintf("%d bytes, more than %d (limits.%s)", len(name), max, maxName(kind)), "use a shorter name")
	}
	if err := textProblem(name); err != "" {
		return bad(ErrBadText, err, "use printable UTF-8")
	}
	for i, r := range name {
		switch {
		case r == '/' || r == ':':
			return bad(ErrBadName, fmt.Sprintf("contains %q at byte %d (the kernel and ovs-vswitchd refuse it in a device name)", r, i), "use letters, digits, '-', '_' or '.'")
		case unicode.IsSpace(r):
			return bad(ErrBadName, fmt.Sprintf("contains white space %U at byte %d", r, i), "use letters, digits, '-', '_' or '.'")
		}
		if why := invisible(r, i == 0); why != "" {
			return bad(ErrBadText, fmt.Sprintf("contains %U (%s) at byte %d: it looks like another name", r, why, i), "remove it; use visible characters only")
		}
	}
	return nil
}

func maxName(kind Kind) string {
	if kind == Bridge {
		return "MaxKernelNameBytes"
	}
	return "MaxNameBytes"
}

// KernelTypes are the interface types backed by a Linux network device of the interface's name.
var kernelTypes = [...]string{"", "system", "internal", "tap"}

// IsKernelType reports whether interfaces of type typ are Linux network devices of their name
// (types "", system, internal, tap), whose names are bounded by MaxKernelNameBytes.
func IsKernelType(typ string) bool {
	for _, k := range kernelTypes {
		if typ == k {
			return true
		}
	}
	return false
}

// CheckInterfaceName is CheckName for an interface of type typ: an interface of a kernel type
// (IsKernelType) must also have at most MaxKernelNameBytes bytes.
func CheckInterfaceName(name, typ string) error {
	if err := CheckName(Interface, name); err != nil {
		return err
	}
	if len(name) > MaxKernelNameBytes && IsKernelType(typ) {
		return &Error{Object: Object(Interface, name), Field: "name",
			Reason: fmt.Sprintf("%d bytes, more than %d (limits.MaxKernelNameBytes), the limit for a kernel device of type %q", len(name), MaxKernelNameBytes, typ),
			Fix:    "use a shorter name", Kind: ErrTooLarge}
	}
	return nil
}

// CheckText checks that s can travel to OVSDB and be stored as sent: valid UTF-8 without NUL.
// ovsdb-server drops the whole session on a NUL (escaped or not) and refuses invalid UTF-8
// ("constraint violation"), and Go's JSON encoder silently replaces invalid UTF-8 with U+FFFD.
// object and field name the place of s in the error.
func CheckText(object, field, s string) error {
	if !utf8.ValidString(s) {
		return &Error{Object: object, Field: field, Reason: fmt.Sprintf("invalid UTF-8 at byte %d", invalidAt(s)),
			Fix: "send UTF-8 text", Kind: ErrBadText}
	}
	if i := strings.IndexByte(s, 0); i >= 0 {
		return &Error{Object: object, Field: field, Reason: fmt.Sprintf("NUL byte at byte %d (ovsdb-server drops the session on it)", i),
			Fix: "remove it", Kind: ErrBadText}
	}
	return nil
}

// CheckKey checks one key of a map column: not empty, at most MaxKeyBytes, UTF-8 without NUL,
// control or invisible characters (a key "dpdk-init\u200b" would look like dpdk-init and be
// ignored by ovs-vswitchd).
func CheckKey(object, column, key string) error {
	field := func() string { return fmt.Sprintf("%s key %q", column, key) } // on errors only
	switch {
	case key == "":
		return &Error{Object: object, Field: column, Reason: "empty key", Fix: "name the key", Kind: ErrBadText}
	case len(key) > MaxKeyBytes:
		return &Error{Object: object, Field: fmt.Sprintf("%s key %.32q…", column, key),
			Reason: fmt.Sprintf("key is %d bytes, more than %d (limits.MaxKeyBytes)", len(key), MaxKeyBytes),
			Fix:    "use a shorter key", Kind: ErrTooLarge}
	}
	if why := textProblem(key); why != "" {
		return &Error{Object: object, Field: field(), Reason: why, Fix: "use printable UTF-8", Kind: ErrBadText}
	}
	for i, r := range key {
		if why := invisible(r, i == 0); why != "" {
			return &Error{Object: object, Field: field(), Reason: fmt.Sprintf("contains %U (%s) at byte %d: it looks like another key", r, why, i),
				Fix: "remove it; use visible characters only", Kind: ErrBadText}
		}
	}
	return nil
}

// CheckValue checks the value of key in a map column: at most MaxValueBytes, UTF-8 without NUL
// or control characters (tab and newline included: OVS's keys take single-line values).
func CheckValue(object, column, key, value string) error {
	field := func() string { return fmt.Sprintf("%s key %q", column, key) } // on errors only
	if len(value) > MaxValueBytes {
		return &Error{Object: object, Field: field(),
			Reason: fmt.Sprintf("value is %d bytes, more than %d (limits.MaxValueBytes)", len(value), MaxValueBytes),
			Fix:    "shorten it or keep the data outside OVSDB", Kind: ErrTooLarge}
	}
	if why := textProblem(value); why != "" {
		return &Error{Object: object, Field: field(), Reason: "value: " + why, Fix: "use printable UTF-8 on one line", Kind: ErrBadText}
	}
	return nil
}

// CheckMap checks a map column of an object: at most MaxMapEntries entries and MaxMapBytes
// bytes, every key (CheckKey) and value (CheckValue). It returns every problem, in key order,
// at most MaxReportedProblems of them listed (see Problems).
func CheckMap(object, column string, m map[string]string) error {
	var p Problems
	CheckMapInto(&p, object, column, m)
	return p.Err()
}

// CheckMapInto is CheckMap adding its problems to p.
func CheckMapInto(p *Problems, object, column string, m map[string]string) {
	if len(m) > MaxMapEntries {
		p.Add(&Error{Object: object, Field: column,
			Reason: fmt.Sprintf("%d entries, more than %d (limits.MaxMapEntries)", len(m), MaxMapEntries),
			Fix:    "keep fewer keys; store bulk data outside OVSDB", Kind: ErrTooLarge})
		return // checking 100,000 entries one by one says nothing more
	}
	keys := make([]string, 0, len(m))
	size := 0
	for k, v := range m {
		keys = append(keys, k)
		size += len(k) + len(v)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p.Add(CheckKey(object, column, k))
		p.Add(CheckValue(object, column, k, m[k]))
	}
	if size > MaxMapBytes {
		p.Add(&Error{Object: object, Field: column,
			Reason: fmt.Sprintf("keys and values total %d bytes, more than %d (limits.MaxMapBytes)", size, MaxMapBytes),
			Fix:    "keep less data in it; store bulk data outside OVSDB", Kind: ErrTooLarge})
	}
}

// CheckInterfaces checks the number of interfaces of a port: at most MaxInterfacesPerPort.
func CheckInterfaces(object string, n int) error {
	if n <= MaxInterfacesPerPort {
		return nil
	}
	return &Error{Object: object, Field: "interfaces",
		Reason: fmt.Sprintf("%d interfaces, more than %d (limits.MaxInterfacesPerPort)", n, MaxInterfacesPerPort),
		Fix:    "split them over several ports", Kind: ErrTooLarge}
}

// CheckPortBytes checks the summed bytes of the names, keys and values of a port and its
// interfaces (computed by the caller, who knows the port's type): at most MaxPortBytes.
func CheckPortBytes(object string, n int) error {
	if n <= MaxPortBytes {
		return nil
	}
	return &Error{Object: object, Field: "size",
		Reason: fmt.Sprintf("names, keys and values of the port and its interfaces total %d bytes, more than %d (limits.MaxPortBytes)", n, MaxPortBytes),
		Fix:    "keep bulk data outside OVSDB; split a bond over several ports", Kind: ErrTooLarge}
}

// MapBytes returns the bytes of the keys and values of m.
func MapBytes(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	return n
}

// CheckObjects checks the number of objects (bridges, ports, interfaces) of one request: at
// most MaxObjectsPerRequest.
func CheckObjects(object string, n int) error {
	if n <= MaxObjectsPerRequest {
		return nil
	}
	return &Error{Object: object, Field: "objects",
		Reason: fmt.Sprintf("%d bridges, ports and interfaces, more than %d (limits.MaxObjectsPerRequest)", n, MaxObjectsPerRequest),
		Fix:    "split the request", Kind: ErrTooLarge}
}

// textProblem describes why s is not printable UTF-8 text ("" when it is).
func textProblem(s string) string {
	if !utf8.ValidString(s) {
		return fmt.Sprintf("invalid UTF-8 at byte %d", invalidAt(s))
	}
	for i, r := range s {
		switch {
		case r == 0:
			return fmt.Sprintf("NUL byte at byte %d (ovsdb-server drops the session on it)", i)
		case unicode.IsControl(r):
			return fmt.Sprintf("control character %U at byte %d", r, i)
		}
	}
	return ""
}

func invalidAt(s string) int {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(s)
}

// invisible says why r would make a name or key look like another one ("" when it would not).
// first is true for the first rune.
func invisible(r rune, first bool) string {
	switch {
	case r < utf8.RuneSelf: // ASCII: control characters are textProblem's
		return ""
	case r == utf8.RuneError:
		return "the replacement character, a sign of mangled text"
	case unicode.Is(unicode.Cf, r):
		return "an invisible format character"
	case unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r), unicode.Is(unicode.Variation_Selector, r),
		r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0, r == 0x2800:
		return "an invisible character"
	case unicode.In(r, unicode.Zs, unicode.Zl, unicode.Zp):
		return "a space or separator other than ' '"
	case unicode.Is(unicode.Co, r):
		return "a private-use character"
	case !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.C):
		return "an unassigned code point"
	case first && unicode.In(r, unicode.Mn, unicode.Me):
		return "a combining mark with nothing to combine with"
	}
	return ""
}
