// Package oftarget checks OpenFlow controller targets (Bridge.controller's Controller.target)
// the way ovs-vswitchd parses them. It is a leaf package: the configuration and package ovsdb
// share its rules and messages.
package oftarget

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// MaxLen bounds the length of a target.
const MaxLen = 256

// Prefixes are the connection methods a target may use (ovs-vswitchd.conf.db(5),
// Controller.target).
var Prefixes = []string{"tcp:", "ssl:", "unix:", "ptcp:", "pssl:", "punix:"}

// Accepted describes the accepted forms, for messages.
const Accepted = "tcp:IP[:PORT], ssl:IP[:PORT], unix:PATH, ptcp:[PORT][:IP], pssl:[PORT][:IP], punix:PATH"

// Validate checks a controller target: tcp:HOST[:PORT] or ssl:HOST[:PORT] (an IP address, an
// IPv6 address in brackets, or a host name), unix:PATH, ptcp:[PORT][:IP], pssl:[PORT][:IP] or
// punix:PATH; at most MaxLen bytes, no white space or control characters. The error quotes the
// target (shortened) and says what is wrong and what is accepted. ssl: and pssl: also need the
// Open_vSwitch SSL settings, which this does not check.
func Validate(target string) error {
	bad := func(why string) error {
		return fmt.Errorf("controller target %q %s (accepted: %s)", clip(target), why, Accepted)
	}
	if len(target) > MaxLen {
		return bad(fmt.Sprintf("is longer than %d bytes", MaxLen))
	}
	if strings.IndexFunc(target, func(r rune) bool { return r <= ' ' || r == 0x7f || r == 0xfffd }) >= 0 {
		return bad("contains white space, control characters or invalid UTF-8")
	}
	i := slices.IndexFunc(Prefixes, func(p string) bool { return strings.HasPrefix(target, p) })
	if i < 0 {
		return bad("does not start with a connection method")
	}
	method, rest := strings.TrimSuffix(Prefixes[i], ":"), strings.TrimPrefix(target, Prefixes[i])
	switch method {
	case "unix", "punix":
		if rest == "" {
			return bad("has no socket path")
		}
	case "tcp", "ssl":
		host, port, hasPort := rest, "", false
		switch {
		case strings.HasPrefix(rest, "[") && strings.HasSuffix(rest, "]"):
			host = rest[1 : len(rest)-1]
		case strings.HasPrefix(rest, "["):
			h, p, err := net.SplitHostPort(rest)
			if err != nil {
				return bad("has an invalid [IPv6]:PORT")
			}
			host, port, hasPort = h, p, true
		case strings.Count(rest, ":") > 1:
			return bad("has an IPv6 address not in brackets")
		default:
			host, port, hasPort = strings.Cut(rest, ":")
		}
		if !validHost(host) {
			return bad("has no valid host (an IP address or a host name)")
		}
		if hasPort && !validPort(port, 1) {
			return bad("has a port outside 1-65535")
		}
	case "ptcp", "pssl":
		port, ip, _ := strings.Cut(rest, ":")
		if port != "" && !validPort(port, 0) {
			return bad("has a port outside 0-65535")
		}
		if ip != "" && net.ParseIP(strings.Trim(ip, "[]")) == nil {
			return bad("has an invalid listening address")
		}
	}
	return nil
}

func validPort(s string, lowest int) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= lowest && n <= 65535 && strconv.Itoa(n) == s
}

func validHost(h string) bool {
	if h == "" {
		return false
	}
	if net.ParseIP(h) != nil {
		return true
	}
	if len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// clip shortens a value quoted in a message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
