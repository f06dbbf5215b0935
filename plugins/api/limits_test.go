package api

import (
	"fmt"
	"strings"
	"testing"
)

// TestAnswersWithinLimits (issue 12 items 2 and 3): a plugin's attachment, global config or
// interface changes are refused, naming the field, the object and the fix, when they carry
// what an operator could not write: names OVS refuses or that hide invisible characters, NUL
// bytes, invalid UTF-8, oversized values, too many interfaces.
func TestAnswersWithinLimits(t *testing.T) {
	req := PortRequest{Bridge: "br0", Name: "v0", Type: "veth"}
	port := func(mut func(*OVSPort)) Attachment {
		p := OVSPort{Name: "v0", Interfaces: []OVSInterface{{Name: "v0"}}}
		mut(&p)
		return Attachment{Ports: []OVSPort{p}}
	}
	if err := ValidateAttachment(HostFacts{}, req, port(func(*OVSPort) {})); err != nil {
		t.Fatalf("good attachment refused: %v", err)
	}
	many := make([]OVSInterface, 100000)
	for i := range many {
		many[i].Name = fmt.Sprint("m", i)
	}
	for _, tc := range []struct {
		name string
		a    Attachment
		want string
	}{
		{"colon", port(func(p *OVSPort) { p.Name = "a:b" }), `ports[0].name: port "a:b": name: contains ':'`},
		{"dotdot interface", port(func(p *OVSPort) { p.Interfaces[0].Name = ".." }), `ports[0].interfaces[0].name: interface "..": name:`},
		{"zero width", port(func(p *OVSPort) { p.Interfaces[0].Name = "v\u200b0" }), `U+200B`},
		{"kernel name", port(func(p *OVSPort) { p.Interfaces[0].Name = "veth-0123456789ab" }), `limits.MaxKernelNameBytes`},
		{"NUL option", port(func(p *OVSPort) { p.Interfaces[0].Options = map[string]string{"peer": "x\x00"} }),
			`ports[0].interfaces[0].options: interface "v0": options key "peer": value: NUL byte at byte 1`},
		{"invalid UTF-8", port(func(p *OVSPort) { p.ExternalIDs = map[string]string{"k": "\xff"} }), `invalid UTF-8 at byte 0`},
		{"big value", port(func(p *OVSPort) { p.OtherConfig = map[string]string{"k": strings.Repeat("v", 5000)} }), `limits.MaxValueBytes`},
		{"too many interfaces", port(func(p *OVSPort) { p.Interfaces = many[:65] }), `65 interfaces, more than 64`},
		{"port bytes", port(func(p *OVSPort) {
			p.Interfaces = many[:20:20]
			for i := range p.Interfaces {
				p.Interfaces[i].ExternalIDs = map[string]string{"a": strings.Repeat("v", 4000)}
			}
		}), `ports[0]: port "v0": size:`},
		{"100,000 interfaces", port(func(p *OVSPort) { p.Interfaces = many }), `more than 4096 (limits.MaxObjectsPerBatch)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateAttachment(HostFacts{}, req, tc.a)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "attachment of port br0/v0: ") {
				t.Fatalf("got %.400v\nwant %q", err, tc.want)
			}
		})
	}
	if err := ValidateGlobalConfig(GlobalConfig{OtherConfig: map[string]string{"vhost-async-support": "true"}, DPDKExtra: []string{"--log-level=8"}}); err != nil {
		t.Fatalf("good contribution refused: %v", err)
	}
	for _, g := range []GlobalConfig{
		{OtherConfig: map[string]string{"k\u200b": "v"}},
		{OtherConfig: map[string]string{"k": "a\nb"}},
		{DPDKExtra: []string{"--x\x00"}},
	} {
		if err := ValidateGlobalConfig(g); err == nil || !strings.Contains(err.Error(), "Open_vSwitch: other_config key") {
			t.Errorf("%+v: got %v", g, err)
		}
	}
	batch := PortEventBatch{Events: []PortEvent{{Interface: "v0", Kind: EventAdded}}}
	if err := ValidateChanges(batch, []InterfaceChange{{Interface: "v0", Set: map[string]string{"k": "a\x00"}}}); err == nil ||
		!strings.Contains(err.Error(), `changes[0].set: interface "v0": other_config key "k": value: NUL byte`) {
		t.Errorf("changes: got %v", err)
	}
}
