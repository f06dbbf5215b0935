package cli

import (
	"errors"
	"slices"
	"testing"
)

// commandsListing and optionsListing are what ovs-vsctl 3.1 prints for --commands and
// --options (also compared with the binary itself by TestDifferential).
const commandsListing = `,wait-until,!TABLE !RECORD *COLUMN?:KEY=VALUE
[--may-exist] ,add-zone-tp,
,comment,*ARG
[--if-exists] ,clear,!TABLE !RECORD +COLUMN
,init,
[--id=] ,create,!TABLE +COLUMN?:KEY=VALUE
,set-fail-mode,!BRIDGE !MODE
[--may-exist] ,add-port,!BRIDGE !NEW-PORT *COLUMN?:KEY=VALUE
[--if-exists] ,del-bond-iface,?BOND !IFACE
,del-ssl,
[--inactivity-probe=] ,set-controller,!BRIDGE +TARGET
[--real] [--fake] ,list-br,
,br-exists,!BRIDGE
,list-ports,!BRIDGE
,del-manager,
,list-dp-cap,
[--may-exist] ,add-bond-iface,!BOND !IFACE
,get-manager,
,get-controller,!BRIDGE
,br-set-external-id,!BRIDGE !KEY ?VALUE
,list-ifaces,!BRIDGE
,list-zone-tp,
,get-aa-mapping,!BRIDGE
[--if-exists] [--id=] ,get,!TABLE !RECORD *COLUMN?:KEY
,add-aa-mapping,!BRIDGE !ARG !ARG
,del-fail-mode,!BRIDGE
,br-get-external-id,!BRIDGE ?KEY
[--if-exists] ,del-zone-tp,
[--if-exists] [--with-iface] ,del-port,?BRIDGE !PORT|IFACE
,port-to-br,!PORT
,del-controller,!BRIDGE
[--columns=] ,find,!TABLE *COLUMN?:KEY=VALUE
[--if-exists] ,set,!TABLE !RECORD +COLUMN?:KEY=VALUE
,emer-reset,
[--bootstrap] ,set-ssl,!PRIVATE-KEY !CERTIFICATE !CA-CERT
,del-aa-mapping,!BRIDGE !ARG !ARG
[--may-exist] ,add-br,!NEW-BRIDGE ?PARENT ?NEW-VLAN
,br-to-parent,!BRIDGE
,iface-to-br,!IFACE
[--if-exists] [--columns=] ,list,!TABLE *RECORD
[--if-exists] ,add,!TABLE !RECORD !COLUMN +?KEY=VALUE
[--inactivity-probe=] ,set-manager,+TARGET
[--if-exists] ,del-br,!BRIDGE
[--if-exists] ,remove,!TABLE !RECORD !COLUMN +KEY|VALUE|KEY=VALUE
,get-ssl,
,get-fail-mode,!BRIDGE
[--if-exists] [--all] ,destroy,!TABLE *RECORD
,br-to-vlan,!BRIDGE
[--may-exist] [--fake-iface] ,add-bond,!BRIDGE !BOND +IFACE *COLUMN?:KEY=VALUE
,show,
`

const optionsListing = `--db=ARG
--no-syslog
--no-wait
--dry-run
--oneline
--timeout=ARG
-t ARG
--retry
--help
-h
--commands
--options
--leader-only
--no-leader-only
--shuffle-remotes
--no-shuffle-remotes
--version
-V
--verbose=ARG
-v ARG
--log-file=ARG
--syslog-method=ARG
--syslog-target=ARG
--format=ARG
-f ARG
--data=ARG
-d ARG
--no-headings
--pretty
--bare
--max-column-width=ARG
--private-key=ARG
-p ARG
--certificate=ARG
-c ARG
--ca-cert=ARG
-C ARG
--ssl-protocols=ARG
--ssl-ciphers=ARG
--bootstrap-ca-cert=ARG
--peer-ca-cert=ARG
`

func TestListings(t *testing.T) {
	tests := []struct {
		name      string
		got, want string
	}{
		{"--commands", DefaultTable().CommandsListing(), commandsListing},
		{"--options", OptionsListing(), optionsListing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("listing differs: %s", lineDiff(tt.got, tt.want))
			}
		})
	}
}

func TestNewTable(t *testing.T) {
	ok := CommandSpec{Name: "add-thing", Options: []string{"--may-exist", "--plugin="}, MinArgs: 1, MaxArgs: 2}
	tests := []struct {
		name  string
		specs []CommandSpec
		ok    bool
	}{
		{"ovs-vsctl's table", VSwitchCommands(), true},
		{"extended table", append(VSwitchCommands(), ok), true},
		{"empty name", []CommandSpec{{Name: ""}}, false},
		{"dash name", []CommandSpec{{Name: "-x"}}, false},
		{"duplicate", []CommandSpec{ok, ok}, false},
		{"min above max", []CommandSpec{{Name: "x", MinArgs: 2, MaxArgs: 1}}, false},
		{"negative min", []CommandSpec{{Name: "x", MinArgs: -1}}, false},
		{"option without dashes", []CommandSpec{{Name: "x", Options: []string{"may-exist"}}}, false},
		{"option with comma", []CommandSpec{{Name: "x", Options: []string{"--a,b"}}}, false},
		{"option named like a global", []CommandSpec{{Name: "x", Options: []string{"--db="}}}, false},
		{"bare dashes", []CommandSpec{{Name: "x", Options: []string{"--"}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab, err := NewTable(tt.specs)
			if (err == nil) != tt.ok {
				t.Fatalf("NewTable: err = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrBadSpec) {
				t.Errorf("error %v does not wrap ErrBadSpec", err)
			}
			if err == nil && len(tab.Commands()) != len(tt.specs) {
				t.Errorf("table has %d commands, want %d", len(tab.Commands()), len(tt.specs))
			}
		})
	}
}

func TestExtendedTableParses(t *testing.T) {
	tab, err := NewTable(append(VSwitchCommands(), CommandSpec{Name: "add-thing",
		Options: []string{"--plugin="}, Syntax: "!BRIDGE !NAME", MinArgs: 2, MaxArgs: 2}))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--plugin=dsa", "add-thing", "br0", "t0"}, ""},
		{[]string{"--pl", "dsa", "add-thing", "br0", "t0"}, ""},
		{[]string{"add-thing", "br0"}, "'add-thing' command requires at least 2 arguments"},
		{[]string{"--", "--plugin", "add-thing", "br0", "t0"}, "missing argument to '--plugin' option on 'add-thing' command"},
		{[]string{"--plugin=x", "show"}, "'show' command has no '--plugin' option"},
	}
	for _, tt := range tests {
		t.Run(caseName(tt.args), func(t *testing.T) {
			_, err := tab.Parse(tt.args)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Parse: %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTableCopies(t *testing.T) {
	tab := DefaultTable()
	spec, ok := tab.Lookup("get")
	if !ok {
		t.Fatal("get not found")
	}
	spec.Options[0] = "--changed"
	again, _ := tab.Lookup("get")
	if again.Options[0] != "--if-exists" {
		t.Errorf("Lookup result shares memory with the table")
	}
	if _, ok := tab.Lookup("GET"); ok {
		t.Errorf("Lookup is case-insensitive; ovs-vsctl's is not")
	}
	a, b := VSwitchCommands(), VSwitchCommands()
	a[0].Name = "x"
	if b[0].Name == "x" || !slices.ContainsFunc(DefaultTable().Commands(), func(s CommandSpec) bool { return s.Name == "comment" }) {
		t.Errorf("VSwitchCommands returns shared data")
	}
}
