//go:build linux

package overlaybed

import (
	"strings"
	"testing"
	"time"
)

func TestSpecDefaultsAndRefusals(t *testing.T) {
	s, err := Spec{}.normalize()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Sites) != len(DefaultSites()) || s.IntraDelay != 5*time.Millisecond || s.CrossDelay != 130*time.Millisecond ||
		s.SuperDelay != 5*time.Millisecond || len(s.Ports) != 2 {
		t.Errorf("defaults: %+v", s)
	}
	var ordinary, supers int
	for _, site := range DefaultSites() {
		if site.Super {
			supers++
		} else {
			ordinary++
		}
	}
	if ordinary < 5 || supers < 1 {
		t.Errorf("DefaultSites(): %d ordinary sites and %d supers, the issue asks for five or more and a super", ordinary, supers)
	}
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{Spec{Sites: ShortSites()[:2]}, "2 sites"},
		{Spec{Sites: []SiteSpec{{Name: "A1", Carriers: []string{"A"}}, ShortSites()[1], ShortSites()[2]}}, `name "A1"`},
		{Spec{Sites: []SiteSpec{ShortSites()[0], ShortSites()[0], ShortSites()[2]}}, "used twice"},
		{Spec{Sites: []SiteSpec{{Name: "x", Carriers: []string{"A", "B"}}, ShortSites()[1], ShortSites()[2]}}, "exactly one"},
		{Spec{Sites: ShortSites(), CrossDelay: -time.Second}, "delay -1s"},
		{Spec{Sites: ShortSites(), Ports: []uint16{4789, 4789}}, "repeated"},
	} {
		if _, err := c.spec.normalize(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("spec %+v: error %v, want one mentioning %q", c.spec, err, c.want)
		}
	}
}
