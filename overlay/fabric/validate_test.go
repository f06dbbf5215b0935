package fabric_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/overlay/fabric"
)

func TestNodeSpecValidate(t *testing.T) {
	good := fabric.NodeSpec{Name: "site-1.a_b", Kind: fabric.KindSuper, Carriers: []string{"wan0"},
		Underlay: []string{"192.0.2.1", "[2001:db8::1]:4789"}}
	if err := good.Validate(); err != nil {
		t.Fatalf("valid spec refused: %v", err)
	}
	many := make([]string, fabric.MaxSetSize+1)
	for i := range many {
		many[i] = "c"
	}
	for name, mutate := range map[string]func(*fabric.NodeSpec){
		"empty name":     func(s *fabric.NodeSpec) { s.Name = "" },
		"long name":      func(s *fabric.NodeSpec) { s.Name = strings.Repeat("n", fabric.MaxNameLen+1) },
		"name with /":    func(s *fabric.NodeSpec) { s.Name = "a/b" },
		"unknown kind":   func(s *fabric.NodeSpec) { s.Kind = "relay" },
		"too many":       func(s *fabric.NodeSpec) { s.Carriers = many },
		"bad carrier":    func(s *fabric.NodeSpec) { s.Carriers = []string{"wan 0"} },
		"bad underlay":   func(s *fabric.NodeSpec) { s.Underlay = []string{"example.org"} },
		"underlay route": func(s *fabric.NodeSpec) { s.Underlay = []string{"192.0.2.0/24"} },
	} {
		s := good
		mutate(&s)
		err := s.Validate()
		if !errors.Is(err, fabric.ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
}

func TestLinkReportValidate(t *testing.T) {
	good := fabric.LinkReport{A: "a", B: "b", BandwidthKbps: fabric.MaxBandwidthKbps, LatencyUs: 0, LossPPM: fabric.MaxLossPPM}
	if err := good.Validate(); err != nil {
		t.Fatalf("valid link refused: %v", err)
	}
	for name, mutate := range map[string]func(*fabric.LinkReport){
		"same ends":      func(l *fabric.LinkReport) { l.B = "a" },
		"bad end":        func(l *fabric.LinkReport) { l.A = "" },
		"bandwidth high": func(l *fabric.LinkReport) { l.BandwidthKbps = fabric.MaxBandwidthKbps + 1 },
		"latency high":   func(l *fabric.LinkReport) { l.LatencyUs = fabric.MaxLatencyUs + 1 },
		"loss negative":  func(l *fabric.LinkReport) { l.LossPPM = -1 },
	} {
		l := good
		mutate(&l)
		if err := l.Validate(); !errors.Is(err, fabric.ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
}

func TestTablesValidate(t *testing.T) {
	if err := (fabric.Tables{"a": {"b": "via-c"}}).Validate(); err != nil {
		t.Fatalf("valid tables refused: %v", err)
	}
	big := map[string]string{}
	for i := range fabric.MaxRoutesPerNode + 1 {
		big[fmt.Sprintf("d%d", i)] = "h"
	}
	for name, tb := range map[string]fabric.Tables{
		"bad node":      {"a b": {"x": "y"}},
		"empty dst":     {"a": {"": "y"}},
		"long next hop": {"a": {"x": strings.Repeat("h", fabric.MaxNextHopLen+1)}},
		"too many":      {"a": big},
	} {
		if err := tb.Validate(); !errors.Is(err, fabric.ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
}

func TestOpenRefusesBadConfig(t *testing.T) {
	for name, cfg := range map[string]fabric.Config{
		"no endpoints":   {},
		"too many":       {Endpoints: make([]string, fabric.MaxEndpoints+1)},
		"bad scheme":     {Endpoints: []string{"http://x"}},
		"no path":        {Endpoints: []string{"unix:"}},
		"negative tries": {Endpoints: []string{"unix:/x"}, MaxAttempts: -1},
	} {
		if _, err := fabric.Open(t.Context(), cfg); !errors.Is(err, fabric.ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
}
