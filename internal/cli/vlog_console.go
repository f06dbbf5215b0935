package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ConsoleLog is what the -v/--verbose options leave of OVS's console log: the level above
// which each module's messages are not printed, and the line pattern. The zero value is not
// usable; build it with NewConsoleLog.
type ConsoleLog struct {
	levels  map[string]int // by lower-case module name
	def     int
	pattern string
}

// DefaultConsolePattern is the console pattern of OVS programs.
const DefaultConsolePattern = "%D{%Y-%m-%dT%H:%M:%SZ}|%05N|%c%T|%p|%m"

// logLevel returns the rank of a level name: off 0, emer 1, err 2, warn 3, info 4, dbg 5.
func logLevel(name string) (int, bool) {
	for i, l := range vlogLevels() {
		if strings.EqualFold(l, name) {
			return i, true
		}
	}
	return 0, false
}

// NewConsoleLog applies specs (Options.Verbose, already validated) to the console defaults of
// ovs-vsctl: every module at "warn" and DefaultConsolePattern. A bare -v ("") sets every
// module to "dbg"; "PATTERN:console:P" (or "any") sets the pattern; other specs set the named
// module (or all) to the named level (default "dbg") when their destination is console or
// unnamed. Specs for other destinations and FACILITY: are ignored.
func NewConsoleLog(specs []string) *ConsoleLog {
	l := &ConsoleLog{levels: map[string]int{}, def: 3, pattern: DefaultConsolePattern}
	for _, spec := range specs {
		first, rest := nextWord(spec)
		switch {
		case first == "":
			l.def, l.levels = 5, map[string]int{}
			continue
		case strings.EqualFold(first, "PATTERN"):
			dest, pat := nextWord(rest)
			if strings.EqualFold(dest, "console") || strings.EqualFold(dest, "any") {
				l.pattern = pat
			}
			continue
		case strings.EqualFold(first, "FACILITY"):
			continue
		}
		dest, module, level := "", "", 5
		for w, r := first, rest; w != ""; w, r = nextWord(r) {
			switch {
			case strings.EqualFold(w, "any"):
			case foldIn(w, vlogDestinations()):
				dest = strings.ToLower(w)
			default:
				if n, ok := logLevel(w); ok {
					level = n
				} else {
					module = strings.ToLower(w)
				}
			}
		}
		if dest != "" && dest != "console" {
			continue
		}
		if module == "" {
			l.def, l.levels = level, map[string]int{}
		} else {
			l.levels[module] = level
		}
	}
	return l
}

// Enabled reports whether a message of module at level (EMER, ERR, WARN, INFO, DBG) is
// printed on the console.
func (l *ConsoleLog) Enabled(module, level string) bool {
	n, ok := logLevel(level)
	if !ok {
		switch strings.ToUpper(level) {
		case "WARN":
			n = 3
		default:
			return false
		}
	}
	max, ok := l.levels[strings.ToLower(module)]
	if !ok {
		max = l.def
	}
	return n > 0 && n <= max
}

// Line formats one console line (without the newline) the way OVS's vlog expands its
// pattern: %c module, %p level, %m message, %N sequence number, %A program, %P pid,
// %D{strftime} UTC time, %d{strftime} local time, %t thread ("main"), %T thread decoration
// (empty for the main thread), %r milliseconds since start, %n newline, %% a percent sign;
// each may carry a width ("%5N"), "-" to left-justify and "0" to zero-pad.
func (l *ConsoleLog) Line(program, module, level, msg string, seq int, pid int, now, start time.Time) string {
	p := l.pattern
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '%' || i+1 >= len(p) {
			b.WriteByte(p[i])
			continue
		}
		i++
		left, zero := false, false
		for i < len(p) && (p[i] == '-' || p[i] == '0') {
			if p[i] == '-' {
				left = true
			} else {
				zero = true
			}
			i++
		}
		width := 0
		for i < len(p) && p[i] >= '0' && p[i] <= '9' {
			width = width*10 + int(p[i]-'0')
			i++
		}
		if i >= len(p) {
			break
		}
		var s string
		switch c := p[i]; c {
		case 'c':
			s = module
		case 'p':
			s = strings.ToUpper(level)
		case 'm':
			s = msg
		case 'N':
			s = strconv.Itoa(seq)
		case 'A':
			s = program
		case 'P':
			s = strconv.Itoa(pid)
		case 't':
			s = "main"
		case 'T':
			s = ""
		case 'r':
			s = strconv.FormatInt(now.Sub(start).Milliseconds(), 10)
		case 'n':
			s = "\n"
		case '%':
			s = "%"
		case 'D', 'd':
			t := now.UTC()
			format := "%Y-%m-%d %H:%M:%S"
			if c == 'd' {
				t = now.Local()
			}
			if i+1 < len(p) && p[i+1] == '{' {
				if end := strings.IndexByte(p[i+1:], '}'); end >= 0 {
					format = p[i+2 : i+1+end]
					i += 1 + end
				}
			}
			s = strftime(format, t)
		default:
			s = "%" + string(c)
		}
		if pad := width - len(s); pad > 0 {
			switch {
			case left:
				s += strings.Repeat(" ", pad)
			case zero:
				s = strings.Repeat("0", pad) + s
			default:
				s = strings.Repeat(" ", pad) + s
			}
		}
		b.WriteString(s)
	}
	return b.String()
}

// strftime expands the conversions OVS log patterns use (%Y %m %d %H %M %S %y %j %Z %z %%,
// and "###" for milliseconds, an OVS extension).
func strftime(f string, t time.Time) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if strings.HasPrefix(f[i:], "###") {
			fmt.Fprintf(&b, "%03d", t.Nanosecond()/1e6)
			i += 2
			continue
		}
		if f[i] != '%' || i+1 >= len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		switch f[i] {
		case 'Y':
			fmt.Fprintf(&b, "%04d", t.Year())
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'Z':
			b.WriteString(t.Format("MST"))
		case 'z':
			b.WriteString(t.Format("-0700"))
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(f[i])
		}
	}
	return b.String()
}
