package veth

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestDefaultPeerName(t *testing.T) {
	for _, tc := range []struct{ port, want string }{
		{"v1", "v1-p"},
		{"abcdefghijklm", "abcdefghijklm-p"}, // 13 + 2 = 15
	} {
		if got := DefaultPeerName(tc.port); got != tc.want {
			t.Errorf("DefaultPeerName(%q) = %q, want %q", tc.port, got, tc.want)
		}
	}
	a, b := DefaultPeerName("abcdefghijklmn"), DefaultPeerName("abcdefghijklmo")
	if len(a) != MaxNameLen || len(b) != MaxNameLen || a == b || !strings.HasPrefix(a, "abcdefgh-") {
		t.Errorf("long names: %q and %q: want distinct 15-character names starting abcdefgh-", a, b)
	}
}

func TestSpecValidate(t *testing.T) {
	pfx := netip.MustParsePrefix
	for _, tc := range []struct {
		name   string
		spec   Spec
		fields []string // fields with errors, in order
	}{
		{"minimal", Spec{Port: "v1"}, nil},
		{"full", Spec{Port: "v1", Peer: "eth0", Netns: "red", CreateNetns: true, Address: pfx("10.0.0.1/24"), MTU: 9000}, nil},
		{"same name in another namespace", Spec{Port: "v1", Peer: "v1", Netns: "red"}, nil},
		{"ipv6", Spec{Port: "v1", Address: pfx("fd00::1/64")}, nil},
		{"no port", Spec{}, []string{"port", "peer"}},
		{"long port, derived peer fine", Spec{Port: "abcdefghijklmnop"}, []string{"port"}},
		{"bad peer", Spec{Port: "v1", Peer: "a/b"}, []string{"peer"}},
		{"same name same namespace", Spec{Port: "v1", Peer: "v1"}, []string{"peer"}},
		{"bad netns", Spec{Port: "v1", Netns: "../etc"}, []string{"netns"}},
		{"create without name", Spec{Port: "v1", CreateNetns: true}, []string{"netns"}},
		{"unspecified address", Spec{Port: "v1", Address: pfx("0.0.0.0/0")}, []string{"address"}},
		{"bridge with space", Spec{Port: "v1", Bridge: "br 0"}, []string{"bridge"}},
		{"mtu low", Spec{Port: "v1", MTU: 10}, []string{"mtu"}},
		{"mtu high", Spec{Port: "v1", MTU: 70000}, []string{"mtu"}},
		{"everything wrong", Spec{Port: "a b", Peer: ".", Netns: "x/y", MTU: -1}, []string{"port", "peer", "netns", "mtu"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.spec.Validate()
			var got []string
			for _, e := range Problems(err) {
				var fe *FieldError
				if !errors.As(e, &fe) || !errors.Is(e, ErrInvalid) {
					t.Fatalf("error %v is not a *FieldError wrapping ErrInvalid", e)
				}
				got = append(got, fe.Field)
			}
			if strings.Join(got, ",") != strings.Join(tc.fields, ",") {
				t.Errorf("Validate() = %v: fields %v, want %v", err, got, tc.fields)
			}
		})
	}
}

func TestMarks(t *testing.T) {
	s := Spec{Port: "v1", Peer: "v1-p", Netns: "red", Bridge: "br0"}
	m, ok := parseMark(hostMark("me", s))
	if !ok || m.owner != "me" {
		t.Fatalf("parseMark(hostMark) = %+v, %v", m, ok)
	}
	if got, ok := m.hostSpec(); !ok || got != s {
		t.Errorf("hostSpec() = %+v, %v; want %+v", got, ok, s)
	}
	s.Netns, s.Bridge = "", ""
	m, _ = parseMark(hostMark("me", s))
	if got, ok := m.hostSpec(); !ok || got != s {
		t.Errorf("hostSpec() without netns = %+v, %v; want %+v", got, ok, s)
	}
	m, _ = parseMark(peerMark("me", s))
	if _, ok := m.hostSpec(); ok {
		t.Error("a peer mark parsed as a host mark")
	}
	for _, alias := range []string{"", "uplink to rack 3", "ovsplane/", "ovsplane/x"} {
		if m, ok := parseMark(alias); ok {
			if _, ok := m.hostSpec(); ok {
				t.Errorf("alias %q parsed as a host mark", alias)
			}
		}
	}
}
