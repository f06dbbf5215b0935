package cli

import "math"

// Unlimited is the MaxArgs of a command that accepts any number of trailing arguments.
const Unlimited = math.MaxInt32

// CommandSpec describes one command for the parser and for --commands.
type CommandSpec struct {
	// Name is the command name, matched exactly (case-sensitive, no abbreviations).
	Name string
	// Options lists the command's options in ovs-vsctl's notation: "--may-exist" takes no
	// value, "--id=" requires one.
	Options []string
	// Syntax is the argument synopsis --commands prints: "!X" required, "?X" optional,
	// "*X" zero or more, "+X" one or more. It is documentation only; MinArgs and MaxArgs are
	// what the parser enforces (they do not always agree: set-controller's syntax says
	// "!BRIDGE +TARGET" but one argument is accepted).
	Syntax string
	// MinArgs and MaxArgs bound the number of arguments after the name; MaxArgs may be
	// Unlimited.
	MinArgs, MaxArgs int
}

// VSwitchCommands returns the commands of ovs-vsctl 3.1 in registration order (the generic
// database commands first). Every call returns a fresh slice the caller may change. The
// options, syntax strings and argument bounds were read from the 3.1 binary (--commands, and
// probing each command with too few and too many arguments).
func VSwitchCommands() []CommandSpec {
	const u = Unlimited
	return []CommandSpec{
		// Generic database commands.
		{"comment", nil, "*ARG", 0, u},
		{"get", []string{"--if-exists", "--id="}, "!TABLE !RECORD *COLUMN?:KEY", 2, u},
		{"list", []string{"--if-exists", "--columns="}, "!TABLE *RECORD", 1, u},
		{"find", []string{"--columns="}, "!TABLE *COLUMN?:KEY=VALUE", 1, u},
		{"set", []string{"--if-exists"}, "!TABLE !RECORD +COLUMN?:KEY=VALUE", 3, u},
		{"add", []string{"--if-exists"}, "!TABLE !RECORD !COLUMN +?KEY=VALUE", 4, u},
		{"remove", []string{"--if-exists"}, "!TABLE !RECORD !COLUMN +KEY|VALUE|KEY=VALUE", 4, u},
		{"clear", []string{"--if-exists"}, "!TABLE !RECORD +COLUMN", 3, u},
		{"create", []string{"--id="}, "!TABLE +COLUMN?:KEY=VALUE", 2, u},
		{"destroy", []string{"--if-exists", "--all"}, "!TABLE *RECORD", 1, u},
		{"wait-until", nil, "!TABLE !RECORD *COLUMN?:KEY=VALUE", 2, u},
		// Open vSwitch commands.
		{"init", nil, "", 0, 0},
		{"show", nil, "", 0, 0},
		// Bridge commands.
		{"add-br", []string{"--may-exist"}, "!NEW-BRIDGE ?PARENT ?NEW-VLAN", 1, 3},
		{"del-br", []string{"--if-exists"}, "!BRIDGE", 1, 1},
		{"list-br", []string{"--real", "--fake"}, "", 0, 0},
		{"br-exists", nil, "!BRIDGE", 1, 1},
		{"br-to-vlan", nil, "!BRIDGE", 1, 1},
		{"br-to-parent", nil, "!BRIDGE", 1, 1},
		{"br-set-external-id", nil, "!BRIDGE !KEY ?VALUE", 2, 3},
		{"br-get-external-id", nil, "!BRIDGE ?KEY", 1, 2},
		// Port commands.
		{"list-ports", nil, "!BRIDGE", 1, 1},
		{"add-port", []string{"--may-exist"}, "!BRIDGE !NEW-PORT *COLUMN?:KEY=VALUE", 2, u},
		{"add-bond", []string{"--may-exist", "--fake-iface"}, "!BRIDGE !BOND +IFACE *COLUMN?:KEY=VALUE", 4, u},
		{"add-bond-iface", []string{"--may-exist"}, "!BOND !IFACE", 2, 2},
		{"del-bond-iface", []string{"--if-exists"}, "?BOND !IFACE", 1, 2},
		{"del-port", []string{"--if-exists", "--with-iface"}, "?BRIDGE !PORT|IFACE", 1, 2},
		{"port-to-br", nil, "!PORT", 1, 1},
		// Interface commands.
		{"list-ifaces", nil, "!BRIDGE", 1, 1},
		{"iface-to-br", nil, "!IFACE", 1, 1},
		// Controller and fail-mode commands.
		{"get-controller", nil, "!BRIDGE", 1, 1},
		{"del-controller", nil, "!BRIDGE", 1, 1},
		{"set-controller", []string{"--inactivity-probe="}, "!BRIDGE +TARGET", 1, u},
		{"get-fail-mode", nil, "!BRIDGE", 1, 1},
		{"del-fail-mode", nil, "!BRIDGE", 1, 1},
		{"set-fail-mode", nil, "!BRIDGE !MODE", 2, 2},
		// Manager commands.
		{"get-manager", nil, "", 0, 0},
		{"del-manager", nil, "", 0, 0},
		{"set-manager", []string{"--inactivity-probe="}, "+TARGET", 1, u},
		// SSL commands.
		{"get-ssl", nil, "", 0, 0},
		{"del-ssl", nil, "", 0, 0},
		{"set-ssl", []string{"--bootstrap"}, "!PRIVATE-KEY !CERTIFICATE !CA-CERT", 3, 3},
		// Auto Attach commands.
		{"add-aa-mapping", nil, "!BRIDGE !ARG !ARG", 3, 3},
		{"del-aa-mapping", nil, "!BRIDGE !ARG !ARG", 3, 3},
		{"get-aa-mapping", nil, "!BRIDGE", 1, 1},
		// Switch commands.
		{"emer-reset", nil, "", 0, 0},
		// Conntrack zone and datapath commands. 3.1 prints no syntax for them; the man page
		// gives "DATAPATH zone=ZONE_ID POLICY...", "DATAPATH zone=ZONE_ID" and "DATAPATH".
		{"add-zone-tp", []string{"--may-exist"}, "", 3, u},
		{"del-zone-tp", []string{"--if-exists"}, "", 2, 2},
		{"list-zone-tp", nil, "", 1, 1},
		{"list-dp-cap", nil, "", 1, 1},
	}
}
