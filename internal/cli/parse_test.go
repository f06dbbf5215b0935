package cli

import (
	"reflect"
	"testing"
)

// opts returns NewOptions changed by f.
func opts(f func(o *Options)) Options {
	o := NewOptions()
	f(&o)
	return o
}

// cmd builds the Command Parse should return.
func cmd(name string, options []CommandOption, args ...string) Command {
	spec, _ := DefaultTable().Lookup(name)
	return Command{Name: name, Spec: spec, Options: options, Args: args}
}

func TestParseInvocation(t *testing.T) {
	mayExist := []CommandOption{{Name: "--may-exist"}}
	tests := []struct {
		name string
		args []string
		want Invocation
	}{
		{"plain", []string{"show"},
			Invocation{Options: NewOptions(), Commands: []Command{cmd("show", nil)}}},
		{"globals", []string{"--db=tcp:1.2.3.4:6640", "--no-wait", "-t", "10", "--dry-run", "--oneline", "--retry",
			"--no-leader-only", "--no-shuffle-remotes", "--no-syslog", "list-br"},
			Invocation{Options: opts(func(o *Options) {
				o.DB, o.HasDB, o.NoWait, o.Timeout, o.DryRun, o.Oneline, o.Retry = "tcp:1.2.3.4:6640", true, true, 10, true, true, true
				o.LeaderOnly, o.ShuffleRemotes, o.NoSyslog = false, false, true
			}), Commands: []Command{cmd("list-br", nil)}}},
		{"abbreviations and clusters", []string{"--db=x", "--dr", "-t5", "-fjson", "--pre", "-vdbg", "-v", "--log", "--", "show"},
			Invocation{}},
		{"bare then format", []string{"--bare", "-f", "csv", "--max-column-width=12x", "list", "Bridge"},
			Invocation{Options: opts(func(o *Options) {
				o.Format, o.Data, o.NoHeadings, o.MaxColumnWidth, o.HasMaxColumnWidth = "csv", "bare", true, 12, true
			}), Commands: []Command{cmd("list", nil, "Bridge")}}},
		{"ssl", []string{"-p", "k", "-cc", "--ca-cert=none", "--bootstrap-ca-cert=b", "--peer-ca-cert=p",
			"--ssl-protocols=TLSv1.2", "--ssl-ciphers=HIGH", "--syslog-method=null", "--syslog-target=1.2.3.4:5", "show"},
			Invocation{Options: opts(func(o *Options) {
				o.PrivateKey, o.Certificate, o.CACert, o.BootstrapCACert, o.PeerCACert = "k", "c", "none", "b", "p"
				o.SSLProtocols, o.SSLCiphers, o.SyslogMethod, o.SyslogTarget = "TLSv1.2", "HIGH", "null", "1.2.3.4:5"
			}), Commands: []Command{cmd("show", nil)}}},
		{"command options, global and local", []string{"--may", "add-br", "br0", "--", "--if-exists", "--with-iface", "del-port", "p0",
			"--", "--id=@p", "get", "Port", "p0"},
			Invocation{Options: NewOptions(), Commands: []Command{
				cmd("add-br", mayExist, "br0"),
				cmd("del-port", []CommandOption{{Name: "--if-exists"}, {Name: "--with-iface"}}, "p0"),
				cmd("get", []CommandOption{{Name: "--id", Value: "@p", HasValue: true}}, "Port", "p0"),
			}}},
		{"global option after the command is an argument", []string{"comment", "--oneline"},
			Invocation{Options: NewOptions(), Commands: []Command{cmd("comment", nil, "--oneline")}}},
		{"empty commands skipped", []string{"--", "--", "init", "--", "--", "show", "--"},
			Invocation{Options: NewOptions(), Commands: []Command{cmd("init", nil), cmd("show", nil)}}},
		{"odd option spelling kept as typed", []string{"--", "-exist", "add-br", "br0"},
			Invocation{Options: NewOptions(), Commands: []Command{cmd("add-br", []CommandOption{{Name: "-exist"}}, "br0")}}},
		{"version stops reading", []string{"-t", "3", "-V", "--bogus"},
			Invocation{Action: ActionVersion, Options: opts(func(o *Options) { o.Timeout = 3 })}},
		{"help", []string{"-h"}, Invocation{Action: ActionHelp, Options: NewOptions()}},
		{"commands", []string{"--commands"}, Invocation{Action: ActionListCommands, Options: NewOptions()}},
		{"options", []string{"--opt"}, Invocation{Action: ActionListOptions, Options: NewOptions()}},
	}
	tests[2].want = Invocation{Options: opts(func(o *Options) {
		o.DB, o.HasDB, o.DryRun, o.Timeout, o.Format, o.Pretty = "x", true, true, 5, "json", true
		o.Verbose, o.HasLogFile = []string{"dbg", ""}, true
	}), Commands: []Command{cmd("show", nil)}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.args)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("Parse(%q)\n got %+v\nwant %+v", tt.args, *got, tt.want)
			}
		})
	}
}

func TestParseErrorDetails(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		getopt  bool
		line    string
		logFile string
	}{
		{"getopt error uses argv0", []string{"--bogus"}, true, "/usr/bin/ovs-vsctl: unrecognized option '--bogus'\n", ""},
		{"own error uses program", []string{"bogus"}, false, "ovs-vsctl: unknown command 'bogus'; use --help for help\n", ""},
		{"short option byte", []string{"-\xff"}, true, "/usr/bin/ovs-vsctl: invalid option -- '\xff'\n", ""},
		{"options before the failure", []string{"--log-file=/x/y", "-t", "0"}, false, "ovs-vsctl: value 0 on -t or --timeout is invalid\n", "/x/y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.args)
			pe, ok := AsParseError(err)
			if !ok {
				t.Fatalf("Parse: %v, want a *ParseError", err)
			}
			if pe.Getopt != tt.getopt || pe.Line("/usr/bin/ovs-vsctl", "ovs-vsctl") != tt.line {
				t.Errorf("got Getopt=%v line %q, want %v %q", pe.Getopt, pe.Line("/usr/bin/ovs-vsctl", "ovs-vsctl"), tt.getopt, tt.line)
			}
			if pe.Options.LogFile != tt.logFile || pe.Error() != pe.Msg || pe.Status != ExitUsage {
				t.Errorf("got LogFile %q Error %q Status %d", pe.Options.LogFile, pe.Error(), pe.Status)
			}
		})
	}
}

func TestCommandOptionLookup(t *testing.T) {
	c := cmd("get", []CommandOption{{Name: "--id", Value: "@x", HasValue: true}, {Name: "--if-exists"}})
	tests := []struct {
		name  string
		value string
		ok    bool
	}{
		{"--id", "@x", true},
		{"--if-exists", "", true},
		{"--columns", "", false},
		{"-id", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, ok := c.Option(tt.name)
			if v != tt.value || ok != tt.ok || c.Has(tt.name) != tt.ok {
				t.Errorf("Option(%q) = %q, %v; want %q, %v", tt.name, v, ok, tt.value, tt.ok)
			}
		})
	}
}

func TestEffectiveTimeout(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  string
		want uint32
	}{
		{"none", []string{"show"}, "", 0},
		{"env", []string{"show"}, "7", 7},
		{"env with blanks and sign", []string{"show"}, " +3", 3},
		{"env invalid is ignored", []string{"show"}, "1x", 0},
		{"env zero is ignored", []string{"show"}, "0", 0},
		{"option wins", []string{"-t", "2", "show"}, "9", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv, err := Parse(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if got := inv.Options.EffectiveTimeout(tt.env); got != tt.want {
				t.Errorf("EffectiveTimeout(%q) = %d, want %d", tt.env, got, tt.want)
			}
		})
	}
}
