package cli

import "testing"

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
