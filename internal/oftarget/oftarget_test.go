package oftarget

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, ok := range []string{"tcp:127.0.0.1:6653", "tcp:127.0.0.1", "tcp:[::1]:6653", "tcp:ctl.example.com:6653",
		"ssl:192.0.2.1:6653", "unix:/var/run/ctl.sock", "ptcp:6653", "ptcp:6653:127.0.0.1", "ptcp:", "ptcp:0",
		"pssl:6653:[::1]", "punix:/run/br0.ctl"} {
		if err := Validate(ok); err != nil {
			t.Errorf("Validate(%q) = %v, want nil", ok, err)
		}
	}
	for target, why := range map[string]string{
		"":                                  "connection method",
		"127.0.0.1:6653":                    "connection method",
		"http://x":                          "connection method",
		"tcp:":                              "no valid host",
		"tcp:127.0.0.1:":                    "port",
		"tcp:127.0.0.1:70000":               "port outside 1-65535",
		"tcp:127.0.0.1:0":                   "port outside 1-65535",
		"tcp:::1:6653":                      "IPv6 address not in brackets",
		"tcp:bad_host:6653":                 "no valid host",
		"tcp:127.0.0.1:6653\n":              "control characters",
		"tcp:127.0.0.1 :6653":               "white space",
		"unix:\x00":                         "control characters",
		"unix:":                             "no socket path",
		"ptcp:99999":                        "port outside 0-65535",
		"ptcp:6653:not-an-ip":               "listening address",
		"unix:/" + strings.Repeat("a", 300): "longer than 256 bytes",
	} {
		err := Validate(target)
		if err == nil || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), "accepted: tcp:IP[:PORT]") {
			t.Errorf("Validate(%q) = %v, want an error saying %q and what is accepted", target, err, why)
		}
	}
}
