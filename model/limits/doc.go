// Package limits holds the documented bounds every door of ovsplane enforces: the sizes and
// counts a plugin's answer, an API request or a configuration file may reach before it is
// refused with an error that names the bound. Each bound is an exported constant with a doc
// comment stating what it bounds and why; the code that enforces it refers to the constant,
// never to a copy of its value.
//
// Besides sizes and counts, the check functions (CheckName, CheckInterfaceName, CheckKey,
// CheckValue, CheckMap, CheckText) refuse the bytes OVS cannot take — NUL, on which
// ovsdb-server drops the whole session, and invalid UTF-8 — control characters, names the
// kernel or ovs-vswitchd refuse (".", "..", "a:b", "a/b") and names or keys with invisible
// characters that would look like another one. Their errors are *Error values (matching
// ErrTooLarge, ErrBadText or ErrBadName) naming the object, the field, the reason and the fix.
package limits
