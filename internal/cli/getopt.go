package cli

import (
	"fmt"
	"strings"
)

// This file reproduces how ovs-vsctl's global options are split by the C library's
// getopt_long (glibc 2.36, Debian 12) with an option string that starts with "+": scanning
// stops at the first argument that is not an option ("-" alone counts as a non-option) or
// just after "--"; long options may be abbreviated to any unambiguous prefix; short options
// may be clustered ("-vt5" is -v with argument "t5", since -v's argument is optional and
// attached; "-Vt5" is -V then -t 5); a required argument is the rest of the cluster, the text
// after "=", or else the next argument whatever it looks like.

// optionEvent is one option getopt recognised.
type optionEvent struct {
	opt    *longOption
	arg    string
	hasArg bool
}

// getopt walks args. For each recognised option it calls handle, which may stop the scan by
// returning stop=true or an error. It returns the index of the first argument after the
// options (past a "--" that ended them).
func getopt(args []string, long []longOption,
	handle func(ev optionEvent) (stop bool, err *ParseError)) (int, *ParseError) {
	i := 0
	for i < len(args) {
		a := args[i]
		if a == "--" {
			return i + 1, nil
		}
		if len(a) < 2 || a[0] != '-' {
			return i, nil
		}
		var evs []optionEvent
		var err *ParseError
		if a[1] == '-' {
			var ev optionEvent
			ev, i, err = scanLong(args, i, long)
			if err == nil {
				evs = []optionEvent{ev}
			}
		} else {
			evs, i, err = scanShort(args, i, long)
		}
		for _, ev := range evs {
			if stop, herr := handle(ev); stop || herr != nil {
				return i, herr
			}
		}
		if err != nil {
			return i, err
		}
	}
	return i, nil
}

// scanLong parses the long option args[i] ("--name", "--name=value", or an abbreviation) and
// returns it with the index of the next unread argument.
func scanLong(args []string, i int, long []longOption) (optionEvent, int, *ParseError) {
	text := args[i][2:]
	name, value, hasEq := strings.Cut(text, "=")
	o, perr := matchLong(name, text, long)
	if perr != nil {
		return optionEvent{}, i + 1, perr
	}
	ev := optionEvent{opt: o}
	switch {
	case hasEq && o.kind == noArg:
		return ev, i + 1, getoptError("option '--%s' doesn't allow an argument", o.name)
	case hasEq:
		ev.arg, ev.hasArg = value, true
	case o.kind == requiredArg:
		if i+1 >= len(args) {
			return ev, i + 1, getoptError("option '--%s' requires an argument", o.name)
		}
		ev.arg, ev.hasArg = args[i+1], true
		return ev, i + 2, nil
	}
	return ev, i + 1, nil
}

// matchLong finds the long option called name or abbreviated by it. An exact name wins.
// Otherwise every option starting with name is a candidate; the first candidate is chosen
// unless a later one differs from it in argument kind or meaning, in which case the
// abbreviation is ambiguous and getopt lists the first candidate and every differing one.
// (So "--fa" picks --fake although --fake-iface also matches: both are command options
// without an argument.) text is the whole argument after "--", used in messages.
func matchLong(name, text string, long []longOption) (*longOption, *ParseError) {
	for k := range long {
		if long[k].name == name {
			return &long[k], nil
		}
	}
	first := -1
	var ambiguous []int
	for k := range long {
		if !strings.HasPrefix(long[k].name, name) {
			continue
		}
		switch {
		case first < 0:
			first = k
		case long[k].kind != long[first].kind || long[k].id != long[first].id:
			if ambiguous == nil {
				ambiguous = []int{first}
			}
			ambiguous = append(ambiguous, k)
		}
	}
	if ambiguous != nil {
		var b strings.Builder
		for _, k := range ambiguous {
			b.WriteString(" '--" + long[k].name + "'")
		}
		return nil, getoptError("option '--%s' is ambiguous; possibilities:%s", text, b.String())
	}
	if first < 0 {
		return nil, getoptError("unrecognized option '--%s'", text)
	}
	return &long[first], nil
}

// scanShort parses the cluster of short options in args[i]. It returns the options recognised
// before any error, the error, and the index of the next unread argument.
func scanShort(args []string, i int, long []longOption) ([]optionEvent, int, *ParseError) {
	a := args[i]
	var evs []optionEvent
	for j := 1; j < len(a); j++ {
		c := a[j]
		o := findShort(c, long)
		if o == nil {
			return evs, i + 1, getoptError("invalid option -- '%s'", string([]byte{c}))
		}
		ev := optionEvent{opt: o}
		switch {
		case o.kind == noArg:
			evs = append(evs, ev)
			continue
		case j+1 < len(a):
			ev.arg, ev.hasArg = a[j+1:], true
		case o.kind == requiredArg && i+1 < len(args):
			ev.arg, ev.hasArg = args[i+1], true
			return append(evs, ev), i + 2, nil
		case o.kind == requiredArg:
			return evs, i + 1, getoptError("option requires an argument -- '%s'", string([]byte{c}))
		}
		return append(evs, ev), i + 1, nil
	}
	return evs, i + 1, nil
}

// findShort returns the option whose short alias is c, or nil.
func findShort(c byte, long []longOption) *longOption {
	for k := range long {
		if long[k].short != 0 && long[k].short == c {
			return &long[k]
		}
	}
	return nil
}

// CutOption removes every copy of the long option --name (written "--name=VALUE" or "--name
// VALUE", the name in full: no abbreviation) from the global options at the front of an
// ovs-vsctl command line (args excludes the program name) and returns the last value, whether
// it was there, and the rest of the line. The global options end where getopt_long stops
// (the first non-option, or "--"); an option of the line that the command table does not know
// ends the scan too, leaving the line for Parse to report. name must not be one of
// ovs-vsctl's options or an abbreviation of one: vsctl adds its own options this way
// (--daemon) without changing how ovs-vsctl's abbreviations resolve. A copy without a value
// is an error.
func CutOption(args []string, name string) (value string, found bool, rest []string, err error) {
	long := DefaultTable().long
	rest = make([]string, 0, len(args))
	i := 0
	for i < len(args) {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			break
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			value, found = v, true
			i++
			continue
		}
		if a == "--"+name {
			if i+1 >= len(args) {
				return "", false, nil, fmt.Errorf("option '--%s' requires an argument", name)
			}
			value, found = args[i+1], true
			i += 2
			continue
		}
		var next int
		var perr *ParseError
		if a[1] == '-' {
			_, next, perr = scanLong(args, i, long)
		} else {
			_, next, perr = scanShort(args, i, long)
		}
		if perr != nil {
			break
		}
		rest = append(rest, args[i:next]...)
		i = next
	}
	return value, found, append(rest, args[i:]...), nil
}
