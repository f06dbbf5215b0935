package config

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// ovsdb.apply_timeout loads from the file, the environment and flags, and is refused out of
// [1s, 1h] or written as 0, naming the key and the range.
func TestApplyTimeout(t *testing.T) {
	if c := mustLoad(t, "", nil); c.OVSDB.ApplyTimeout != 0 {
		t.Fatalf("default: %v, want 0 (the daemon's default)", c.OVSDB.ApplyTimeout)
	}
	for _, tc := range []struct {
		doc  string
		env  []string
		args []string
		want time.Duration
	}{
		{doc: "ovsdb:\n  apply_timeout: 10m\n", want: 10 * time.Minute},
		{doc: "ovsdb:\n  apply_timeout: 1s\n", want: MinApplyTimeout},
		{doc: "ovsdb:\n  apply_timeout: 1h\n", want: MaxApplyTimeout},
		{env: []string{"OVSPLANE_OVSDB_APPLY_TIMEOUT=5m"}, want: 5 * time.Minute},
		{doc: "ovsdb:\n  apply_timeout: 10m\n", env: []string{"OVSPLANE_OVSDB_APPLY_TIMEOUT=5m"},
			args: []string{"--ovsdb-apply-timeout", "3m"}, want: 3 * time.Minute},
	} {
		c := mustLoad(t, tc.doc, tc.env, tc.args...)
		if got := time.Duration(c.OVSDB.ApplyTimeout); got != tc.want {
			t.Errorf("%q %q %q: apply_timeout %v, want %v", tc.doc, tc.env, tc.args, got, tc.want)
		}
	}
	for _, tc := range []struct{ value, want string }{
		{"999ms", `ovsdb.apply_timeout: 999ms out of range: write a duration from 1s to 1h0m0s`},
		{"1h0m0.001s", `ovsdb.apply_timeout: 1h0m0.001s out of range`},
		{"-2m", `ovsdb.apply_timeout: -2m0s out of range`},
		{"0s", `ovsdb.apply_timeout: 0s out of range`},
		{"120", `"120" is not a duration`},
	} {
		_, err := load(t, "ovsdb:\n  apply_timeout: "+tc.value+"\n", nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "ovsdb.apply_timeout") {
			t.Errorf("apply_timeout %s: error %v, want %q and the key", tc.value, err, tc.want)
		}
	}
	if _, err := load(t, "", []string{"OVSPLANE_OVSDB_APPLY_TIMEOUT=2h"}); err == nil || !strings.Contains(err.Error(), "ovsdb.apply_timeout: 2h0m0s out of range") {
		t.Errorf("2h from the environment: %v", err)
	}
}

func TestReconnectWait(t *testing.T) {
	// Unset: 0, which the daemon reads as its default.
	if c := mustLoad(t, "", nil); c.OVSDB.ReconnectWait != 0 {
		t.Fatalf("default: %v, want 0 (the daemon's default)", c.OVSDB.ReconnectWait)
	}
	for _, tc := range []struct {
		doc  string
		env  []string
		args []string
		want time.Duration
	}{
		{doc: "ovsdb:\n  reconnect_wait: 30s\n", want: 30 * time.Second},
		{doc: "ovsdb:\n  reconnect_wait: 1m30s\n", want: 90 * time.Second},
		{doc: "ovsdb:\n  reconnect_wait: 1ns\n", want: time.Nanosecond},
		{doc: "ovsdb:\n  reconnect_wait: 10m\n", want: MaxReconnectWait},
		{env: []string{"OVSPLANE_OVSDB_RECONNECT_WAIT=250ms"}, want: 250 * time.Millisecond},
		// Flags override the environment, which overrides the file.
		{doc: "ovsdb:\n  reconnect_wait: 30s\n", env: []string{"OVSPLANE_OVSDB_RECONNECT_WAIT=20s"},
			args: []string{"--ovsdb-reconnect-wait", "2s"}, want: 2 * time.Second},
		{doc: "ovsdb:\n  reconnect_wait: 30s\n", env: []string{"OVSPLANE_OVSDB_RECONNECT_WAIT=20s"}, want: 20 * time.Second},
	} {
		c := mustLoad(t, tc.doc, tc.env, tc.args...)
		if got := time.Duration(c.OVSDB.ReconnectWait); got != tc.want {
			t.Errorf("%q %q %q: reconnect_wait %v, want %v", tc.doc, tc.env, tc.args, got, tc.want)
		}
	}

	for _, tc := range []struct{ value, want string }{
		{"-5s", `ovsdb.reconnect_wait: -5s out of range: write a duration above 0 and at most 10m0s`},
		{"10m0.000000001s", `ovsdb.reconnect_wait: 10m0.000000001s out of range`},
		{"1000h", `ovsdb.reconnect_wait: 1000h0m0s out of range`},
		{"0s", `ovsdb.reconnect_wait: 0s out of range`},
		{"0", `ovsdb.reconnect_wait: 0s out of range`},
		{"5", `"5" is not a duration: write a number with a unit, like "5s"`},
		{"soon", `"soon" is not a duration`},
		{"[5s]", `ovsdb.reconnect_wait: must be a single value, not a list`},
		{"{s: 5}", `ovsdb.reconnect_wait: must be a single value, not a mapping`},
	} {
		_, err := load(t, "ovsdb:\n  reconnect_wait: "+tc.value+"\n", nil)
		if err == nil {
			t.Errorf("reconnect_wait %s: loaded", tc.value)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "ovsdb.reconnect_wait") {
			t.Errorf("reconnect_wait %s: error %q lacks %q or the key", tc.value, err, tc.want)
		}
	}
	// The same checks hold for the environment and flags.
	if _, err := load(t, "", []string{"OVSPLANE_OVSDB_RECONNECT_WAIT=-1s"}); err == nil || !strings.Contains(err.Error(), "ovsdb.reconnect_wait: -1s out of range") {
		t.Errorf("negative from the environment: %v", err)
	}
	if _, err := load(t, "", nil, "--ovsdb-reconnect-wait", "11m"); err == nil || !strings.Contains(err.Error(), "ovsdb.reconnect_wait: 11m0s out of range") {
		t.Errorf("too long from a flag: %v", err)
	}
}

// Validate, for a Config built by hand: 0 is unset (the default), the rest as Load.
func TestValidateReconnectWait(t *testing.T) {
	for _, tc := range []struct {
		w  Duration
		ok bool
	}{{0, true}, {Duration(time.Second), true}, {Duration(MaxReconnectWait), true}, {-1, false}, {Duration(MaxReconnectWait + 1), false}} {
		c := &Config{DataDir: "/var/lib/ovsplane", OVSDB: OVSDB{ReconnectWait: tc.w}}
		c.applyDefaults()
		err := c.Validate()
		if (err == nil) != tc.ok || (err != nil && !strings.HasPrefix(err.Error(), "ovsdb.reconnect_wait: ")) {
			t.Errorf("ReconnectWait %v: Validate = %v, want ok=%v", tc.w, err, tc.ok)
		}
	}
}

// A marshalled Duration is its text, which loads back as the same value.
func TestReconnectWaitRoundTrip(t *testing.T) {
	c := mustLoad(t, "ovsdb:\n  reconnect_wait: 1m30s\n", nil)
	out, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "reconnect_wait: 1m30s") {
		t.Fatalf("marshalled:\n%s", out)
	}
	if again := mustLoad(t, string(out), nil); again.OVSDB.ReconnectWait != c.OVSDB.ReconnectWait {
		t.Fatalf("round trip: %v, want %v", again.OVSDB.ReconnectWait, c.OVSDB.ReconnectWait)
	}
}
