package cli

import (
	"math"
	"slices"
	"testing"
)

func TestParseCLong(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1", 1, true},
		{"+7", 7, true},
		{" \t\n5", 5, true},
		{"010", 10, true},
		{"-0", 0, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"99999999999999999999999999", 0, false},
		{"", 0, false},
		{"+", 0, false},
		{"1 ", 0, false},
		{"0x10", 0, false},
		{"1.5", 0, false},
		{"+-1", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := parseCLong(tt.in)
			if got != tt.want || ok != tt.ok {
				t.Errorf("parseCLong(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestAtoi(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"12", 12}, {"12x", 12}, {"abc", 0}, {"-5", -5}, {" 3", 3},
		{"4294967297", 1}, {"99999999999999999999", -1},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := atoi(tt.in); got != tt.want {
				t.Errorf("atoi(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestVlogSpec(t *testing.T) {
	tests := []struct {
		spec, want string
	}{
		{"", ""},
		{":,", ""},
		{"dbg", ""},
		{"VSCTL:Console:DBG", ""},
		{"any:any:dbg", ""},
		{"dbg\tconsole", ""},
		{"PATTERN:console:%d %m:x", ""},
		{"PATTERN,ANY", ""},
		{"FACILITY kern", ""},
		{"facility:LOCAL7", ""},
		{"dbg:info", "cannot specify multiple levels"},
		{"file:syslog", "cannot specify multiple destinations"},
		{"vsctl:util", "cannot specify multiple modules"},
		{"dbg\nconsole", `no destination, level, or module "dbg` + "\n" + `console"`},
		{"db-ctl-base", `no destination, level, or module "db-ctl-base"`},
		{"dbg:PATTERN", `no destination, level, or module "PATTERN"`},
		{"PATTERN", "missing destination"},
		{"PATTERN::", "missing destination"},
		{"PATTERN:nowhere", `unknown destination "nowhere"`},
		{"FACILITY", "invalid facility"},
		{"FACILITY::kern", "invalid facility"},
		{"FACILITY:kern:x", "invalid facility"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			if got := vlogSpecError(tt.spec); got != tt.want {
				t.Errorf("vlogSpecError(%q) = %q, want %q", tt.spec, got, tt.want)
			}
		})
	}
}

func TestHashOrder(t *testing.T) {
	// Orders observed on ovs-vsctl 3.1 through "'show' command has no '...' option" and the
	// --commands listing (see also TestListings).
	tests := []struct {
		keys      []string
		wantFirst string
	}{
		{[]string{"--c", "--b", "--a"}, "--c"},
		{[]string{"--q", "--p", "--x", "--a"}, "--x"},
		{[]string{"--zzz", "--aaa"}, "--zzz"},
		{[]string{"--aaa", "--zzz"}, "--aaa"},
		{[]string{"--with-iface", "--all", "--real", "--fake", "--may-exist", "--if-exists"}, "--if-exists"},
		{[]string{"--if-exists", "--may-exist", "--fake", "--real", "--all", "--with-iface"}, "--with-iface"},
	}
	for _, tt := range tests {
		t.Run(tt.wantFirst, func(t *testing.T) {
			order := hashOrder(tt.keys)
			sorted := slices.Clone(order)
			slices.Sort(sorted)
			if len(order) != len(tt.keys) || !slices.Equal(sorted, []int{0, 1, 2, 3, 4, 5}[:len(tt.keys)]) {
				t.Fatalf("hashOrder(%q) = %v is not a permutation", tt.keys, order)
			}
			if got := tt.keys[order[0]]; got != tt.wantFirst {
				t.Errorf("first of %q = %q, want %q", tt.keys, got, tt.wantFirst)
			}
		})
	}
}
