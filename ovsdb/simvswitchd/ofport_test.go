package simvswitchd

import (
	"fmt"
	"testing"
)

func TestAssignOfports(t *testing.T) {
	t.Parallel()
	m := func(name string, current, request int) ofportMember {
		return ofportMember{uuid: name, name: name, current: current, request: request}
	}
	tests := []struct {
		name     string
		members  []ofportMember
		last     int
		want     map[string]int
		wantLast int
	}{
		{"local port and first allocations", []ofportMember{m("br0", 0, 0), m("a", 0, 0), m("b", 0, 0)}, 0,
			map[string]int{"br0": OFPPLocal, "a": 1, "b": 2}, 2},
		{"existing ofports are kept", []ofportMember{m("a", 5, 0), m("b", 0, 0)}, 5,
			map[string]int{"a": 5, "b": 6}, 6},
		{"freed numbers are not reused before wrapping", []ofportMember{m("c", 0, 0)}, 3,
			map[string]int{"c": 4}, 4},
		{"request honoured when free", []ofportMember{m("a", 0, 10), m("b", 0, 0)}, 0,
			map[string]int{"a": 10, "b": 1}, 1},
		{"holder keeps its number against a request", []ofportMember{m("a", 3, 0), m("b", 0, 3)}, 3,
			map[string]int{"a": 3, "b": 4}, 4},
		{"changed request moves the interface", []ofportMember{m("a", 3, 8)}, 3,
			map[string]int{"a": 8}, 3},
		{"invalid request ignored", []ofportMember{m("a", 0, 70000)}, 0,
			map[string]int{"a": 1}, 1},
		{"allocation wraps after OFPPMax", []ofportMember{m("a", 1, 0), m("b", 0, 0)}, OFPPMax,
			map[string]int{"a": 1, "b": 2}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, last := assignOfports("br0", tt.members, tt.last)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) || last != tt.wantLast {
				t.Fatalf("got %v last %d, want %v last %d", got, last, tt.want, tt.wantLast)
			}
		})
	}
}

func TestDevargsPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		devargs string
		want    bool
	}{
		{"0000:01:00.0", true},
		{"01:00.1", true},
		{"0000:af:00.7,representor=[0]", true},
		{"0000:01:00.8", false},
		{"0000:01:00", false},
		{"net_af_packet0,iface=eth0", true},
		{"net_tap0,iface=tap0", true},
		{"net_vhost0,iface=/tmp/sock", true},
		{"net_virtio_user0,path=/dev/vhost-net", true},
		{"net_bogus0", false},
		{"", false},
	}
	p := DefaultDevargsPolicy()
	for _, tt := range tests {
		t.Run(tt.devargs, func(t *testing.T) {
			if got := p.Accepts(tt.devargs); got != tt.want {
				t.Fatalf("Accepts(%q) = %v, want %v", tt.devargs, got, tt.want)
			}
		})
	}
}
