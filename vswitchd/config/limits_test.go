package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/internal/desired"
	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/model/limits"
)

// TestValidateLimits: the configuration file refuses what package limits refuses, each problem
// at its key path, naming the object and the fix.
func TestValidateLimits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(c *Config)
		sent   error
		want   string
	}{
		{"dot port", func(c *Config) { c.Bridges[2].Ports[0].Name = "." },
			limits.ErrBadName, `bridges[2].ports[0].name: port ".": name: "." and ".." are not device names`},
		{"dotdot interface", func(c *Config) { iface(c).Name, iface(c).Type = "..", "dpdkvhostuser" },
			limits.ErrBadName, `bridges[2].ports[0].interfaces[0].name: interface "..": name:`},
		{"colon", func(c *Config) { c.Bridges[2].Ports[0].Name = "a:b" },
			limits.ErrBadName, `bridges[2].ports[0].name: port "a:b": name: contains ':' at byte 1`},
		{"zero width bridge", func(c *Config) { c.Bridges[0].Name = "br\u200b0" },
			limits.ErrBadText, `bridges[0].name: bridge "br\u200b0": name: contains U+200B (an invisible format character) at byte 2: it looks like another name; remove it`},
		{"NUL in external_ids", func(c *Config) { c.Bridges[2].Ports[0].ExternalIDs = map[string]string{"k": "a\x00b"} },
			limits.ErrBadText, `bridges[2].ports[0].external_ids: port "p2": external_ids key "k": value: NUL byte at byte 1`},
		{"invalid UTF-8 in options", func(c *Config) { iface(c).Options = map[string]string{"k": "\xff"} },
			limits.ErrBadText, `bridges[2].ports[0].interfaces[0].options: interface "p2": options key "k": value: invalid UTF-8 at byte 0`},
		{"long value", func(c *Config) { c.OtherConfig["dpdk-extra"] = strings.Repeat("x", limits.MaxValueBytes+1) },
			limits.ErrTooLarge, `other_config: Open_vSwitch: other_config key "dpdk-extra": value is 4097 bytes, more than 4096 (limits.MaxValueBytes); shorten it`},
		{"too many interfaces", func(c *Config) {
			p := &c.Bridges[2].Ports[0]
			p.BondMode = "balance-slb"
			for i := range 1000 {
				p.Interfaces = append(p.Interfaces, model.Interface{Name: fmt.Sprint("m", i), Type: "dpdk"})
			}
		}, limits.ErrTooLarge, `bridges[2].ports[0].interfaces: port "p2": interfaces: 1001 interfaces, more than 64 (limits.MaxInterfacesPerPort); split them over several ports`},
		{"port bytes", func(c *Config) {
			p := &c.Bridges[2].Ports[0]
			p.BondMode = "balance-slb"
			for i := range 20 {
				p.Interfaces = append(p.Interfaces, model.Interface{Name: fmt.Sprint("m", i), Type: "dpdkvhostuser",
					ExternalIDs: map[string]string{"a": strings.Repeat("v", 4000)}})
			}
		}, limits.ErrTooLarge, `bridges[2].ports[0]: port "p2": size: names, keys and values of the port and its interfaces total`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.break_(c)
			err := c.Validate()
			if !errors.Is(err, tc.sent) {
				t.Fatalf("got %v, want %v", err, tc.sent)
			}
			if got := lines(err); len(got) != 1 || !strings.HasPrefix(got[0], tc.want) {
				t.Fatalf("\n got %q\nwant one problem starting %q", got, tc.want)
			}
		})
	}
}

// TestValidatePortLimits: the API's check (also used for plugin shapes) returns the limits
// error itself, naming the port, not a key path.
func TestValidatePortLimits(t *testing.T) {
	p := model.Port{Name: "p1", ExternalIDs: map[string]string{"k": "a\x00b"}, Interfaces: []model.Interface{{Name: "p1", Type: "internal"}}}
	err := desired.ValidatePort("br0", p)
	var le *limits.Error
	if !errors.As(err, &le) || le.Object != `port "p1"` || !strings.HasPrefix(err.Error(), `port "p1": external_ids key "k": value: NUL byte`) {
		t.Fatalf("got %v", err)
	}
	big := model.Port{Name: "bond0", BondMode: "balance-slb"}
	for i := range 100000 {
		big.Interfaces = append(big.Interfaces, model.Interface{Name: fmt.Sprint("m", i), Type: "dpdk"})
	}
	err = desired.ValidatePort("br0", big)
	if !errors.Is(err, limits.ErrTooLarge) || strings.Count(err.Error(), "\n") != 0 || !strings.Contains(err.Error(), "limits.MaxInterfacesPerPort") {
		t.Fatalf("want one line for 100,000 interfaces, got %.300v", err)
	}
	if err := desired.ValidatePort("br0", model.Port{Name: "p\u200b1", Interfaces: []model.Interface{{Name: "p1", Type: "internal"}}}); !errors.Is(err, limits.ErrBadText) {
		t.Fatalf("zero-width port name: got %v", err)
	}
	if err := desired.ValidateBridge(model.Bridge{Name: "a:b"}); !errors.Is(err, limits.ErrBadName) || !strings.Contains(err.Error(), `bridge "a:b": name: contains ':'`) {
		t.Fatalf("bridge a:b: got %v", err)
	}
}

// TestValidateTooManyObjects: a configuration over limits.MaxObjectsPerRequest is refused in
// one line, before its objects are checked one by one.
func TestValidateTooManyObjects(t *testing.T) {
	c := valid()
	b := &c.Bridges[2]
	for i := range limits.MaxObjectsPerRequest / 2 {
		n := fmt.Sprint("q", i)
		b.Ports = append(b.Ports, model.Port{Name: n, Interfaces: []model.Interface{{Name: n}}})
	}
	err := c.Validate()
	if got := lines(err); !errors.Is(err, limits.ErrTooLarge) || len(got) != 1 || !strings.Contains(got[0], "limits.MaxObjectsPerRequest") {
		t.Fatalf("got %q", got)
	}
}

// lines returns the problems of a Validate error, one per line.
func lines(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}
