package cli

import (
	"fmt"
	"slices"
	"strings"
)

// vlogModules returns the logging modules compiled into ovs-vsctl 3.1 (found by trying every
// candidate name in the binary with -v<name>). A -v word must name one of them, a destination
// or a level.
func vlogModules() []string {
	return []string{
		"backtrace", "bundle", "command_line", "conntrack", "conntrack_tp", "coverage", "ct_dpif",
		"db_ctl_base", "dns_resolve", "dpdk", "dpif", "dpif_lookup_autovalidator",
		"dpif_lookup_generic", "dpif_mfex_extract_study", "dpif_netdev", "dpif_netdev_extract",
		"dpif_netdev_impl", "dpif_netdev_lookup", "dpif_netlink", "dpif_netlink_rtnl", "entropy",
		"fatal_signal", "flow", "hmap", "ipf", "jsonrpc", "meta_flow", "native_tnl", "netdev",
		"netdev_afxdp", "netdev_linux", "netdev_offload", "netdev_offload_tc", "netdev_vport",
		"netlink", "netlink_conntrack", "netlink_notifier", "netlink_socket", "nx_match",
		"odp_execute", "odp_execute_impl", "odp_util", "ofp_actions", "ofp_bundle",
		"ofp_connection", "ofp_errors", "ofp_flow", "ofp_group", "ofp_match", "ofp_meter",
		"ofp_monitor", "ofp_msgs", "ofp_packet", "ofp_port", "ofp_protocol", "ofp_queue",
		"ofp_table", "ofp_util", "ovs_numa", "ovs_rcu", "ovs_replay", "ovs_router", "ovs_thread",
		"ovsdb_cs", "ovsdb_error", "ovsdb_idl", "ox_stat", "pmd_perf", "poll_loop", "process",
		"reconnect", "route_table", "sha1", "signals", "socket_util", "socket_util_unix",
		"stream", "stream_fd", "stream_replay", "stream_ssl", "stream_tcp", "stream_unix", "svec",
		"tc", "timeval", "unixctl", "userspace_tso", "util", "uuid", "vconn", "vconn_stream",
		"vlog", "vsctl",
	}
}

// vlogDestinations and vlogLevels are the other words a -v spec may contain.
func vlogDestinations() []string { return []string{"console", "syslog", "file"} }
func vlogLevels() []string       { return []string{"off", "emer", "err", "warn", "info", "dbg"} }

// vlogFacilities are the names FACILITY:<name> accepts.
func vlogFacilities() []string {
	return []string{
		"kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "clock",
		"ftp", "ntp", "audit", "alert", "clock2", "local0", "local1", "local2", "local3",
		"local4", "local5", "local6", "local7",
	}
}

// vlogDelims are the characters that separate the words of a -v spec.
const vlogDelims = " ,:\t"

// nextWord splits s like C's strtok: it skips leading delimiters and returns the word up to
// the next delimiter and the text after that one delimiter ("" when s ends).
func nextWord(s string) (word, rest string) {
	start := 0
	for start < len(s) && strings.IndexByte(vlogDelims, s[start]) >= 0 {
		start++
	}
	end := start
	for end < len(s) && strings.IndexByte(vlogDelims, s[end]) < 0 {
		end++
	}
	if end < len(s) {
		return s[start:end], s[end+1:]
	}
	return s[start:end], ""
}

// foldIn reports whether w equals one of names, ignoring ASCII case.
func foldIn(w string, names []string) bool {
	return slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(w, n) })
}

// vlogSpecError checks a -v/--verbose argument as ovs-vsctl 3.1 does and returns the reason it
// is rejected, or "" when it is accepted. The forms are "PATTERN:<destination>[:<pattern>]",
// "FACILITY:<facility>", or words naming at most one destination, one level and one module
// ("any" is accepted anywhere and ignored); case does not matter.
func vlogSpecError(spec string) string {
	first, rest := nextWord(spec)
	switch {
	case first == "":
		return ""
	case strings.EqualFold(first, "PATTERN"):
		dest, _ := nextWord(rest)
		if dest == "" {
			return "missing destination"
		}
		if !strings.EqualFold(dest, "any") && !foldIn(dest, vlogDestinations()) {
			return fmt.Sprintf("unknown destination \"%s\"", dest)
		}
		return ""
	case strings.EqualFold(first, "FACILITY"):
		if !foldIn(rest, vlogFacilities()) {
			return "invalid facility"
		}
		return ""
	}
	var dest, level, module bool
	for w, rest := first, rest; w != ""; w, rest = nextWord(rest) {
		switch {
		case strings.EqualFold(w, "any"):
		case foldIn(w, vlogDestinations()):
			if dest {
				return "cannot specify multiple destinations"
			}
			dest = true
		case foldIn(w, vlogLevels()):
			if level {
				return "cannot specify multiple levels"
			}
			level = true
		case foldIn(w, vlogModules()):
			if module {
				return "cannot specify multiple modules"
			}
			module = true
		default:
			return fmt.Sprintf("no destination, level, or module \"%s\"", w)
		}
	}
	return ""
}

// validSyslogMethod reports whether ovs-vsctl accepts m for --syslog-method.
func validSyslogMethod(m string) bool {
	return m == "libc" || m == "null" || strings.HasPrefix(m, "unix:") || strings.HasPrefix(m, "udp:")
}
