package dsa

import (
	"errors"
	"strings"
	"testing"
)

// stockCommands are a few of Debian 12's ovs-vswitchd-dpdk 3.1 commands: no vhost async.
var stockCommands = []string{"dpdk/get-version", "dpif-netdev/pmd-rxq-show", "list-commands", "netdev-dpdk/get-mempool-info", "version"}

func TestProbeOVSStock(t *testing.T) {
	c := ProbeOVS(stockCommands, map[string]string{"dpdk-init": "true"}, "3.1.0", "DPDK 22.11.1")
	want := "ovs-vswitchd 3.1.0 with DPDK 22.11.1 has no vhost async DMA support: upstream OVS never merged it; the DSA work queues are prepared but unused (fix: run an ovs-vswitchd built with vhost async, e.g. Intel's dpdk-dma-tracking branch"
	if c.VhostAsync || c.ThreshCommand != "" || c.AsyncSupportKey != "" || !strings.HasPrefix(c.Reason, want) {
		t.Errorf("ProbeOVS(stock) = %+v\nwant Reason starting %q", c, want)
	}
	// The key set on a build that ignores it: still not capable, and the reason says so.
	c = ProbeOVS(stockCommands, map[string]string{VhostAsyncSupportKey: "true"}, "3.1.0", "DPDK 22.11.1")
	if c.VhostAsync || c.AsyncSupportKey != "true" || !strings.HasSuffix(c.Reason, "other_config:vhost-async-support=true is set but this build ignores it") {
		t.Errorf("ProbeOVS(stock, key set) = %+v", c)
	}
	c = ProbeOVS(stockCommands, nil, "3.1.0", "")
	if c.VhostAsync || !strings.HasPrefix(c.Reason, "ovs-vswitchd 3.1.0 without DPDK has no vhost async") {
		t.Errorf("ProbeOVS(no DPDK) = %+v", c)
	}
	c = ProbeOVS(nil, nil, "3.1.0", "DPDK 22.11.1")
	if c.VhostAsync || !strings.Contains(c.Reason, "list-commands could not be read") {
		t.Errorf("ProbeOVS(no commands) = %+v", c)
	}
	// Untrusted version text is not rendered.
	c = ProbeOVS(stockCommands, nil, "3.1.0\n; rm -rf", strings.Repeat("9", 100))
	if strings.Contains(c.Reason, "rm -rf") || strings.Contains(c.Reason, "999") || !strings.HasPrefix(c.Reason, "ovs-vswitchd (version unreadable) with DPDK (version unreadable) has no") {
		t.Errorf("ProbeOVS(odd versions).Reason = %q", c.Reason)
	}
}

func TestProbeOVSCapable(t *testing.T) {
	cmds := append([]string{VhostAsyncThreshCommand, VhostAsyncThreshGetCommand}, stockCommands...)
	c := ProbeOVS(cmds, map[string]string{VhostAsyncSupportKey: "true"}, "3.1.90", "DPDK 22.11.0")
	if !c.VhostAsync || c.ThreshCommand != VhostAsyncThreshCommand || c.AsyncSupportKey != "true" ||
		c.Reason != "ovs-vswitchd 3.1.90 with DPDK 22.11.0 has vhost async DMA support (it offers netdev-dpdk/set-vhost-async-thresh)" {
		t.Errorf("ProbeOVS(capable, on) = %+v", c)
	}
	c = ProbeOVS(cmds, nil, "3.1.90", "DPDK 22.11.0")
	if !c.VhostAsync || !strings.HasSuffix(c.Reason, "it stays off until other_config:vhost-async-support=true is set and ovs-vswitchd restarts") {
		t.Errorf("ProbeOVS(capable, off) = %+v", c)
	}
}

func TestOVSCapabilityCheck(t *testing.T) {
	stock := ProbeOVS(stockCommands, nil, "3.1.0", "DPDK 22.11.1")
	capable := ProbeOVS([]string{VhostAsyncThreshCommand}, nil, "3.1.90", "DPDK 22.11.0")
	for _, mode := range []AsyncMode{AsyncOff, AsyncAuto, AsyncRequire, ""} {
		if w, err := capable.Check(mode); w != nil || err != nil {
			t.Errorf("capable.Check(%q) = %v, %v", mode, w, err)
		}
	}
	if w, err := stock.Check(AsyncOff); w != nil || err != nil {
		t.Errorf("stock.Check(off) = %v, %v", w, err)
	}
	for _, mode := range []AsyncMode{AsyncAuto, ""} {
		w, err := stock.Check(mode)
		if err != nil || w == nil || w.Code != CodeOVSNoVhostAsync || w.Object != "ovs-vswitchd" || w.Message != stock.Reason {
			t.Errorf("stock.Check(%q) = %+v, %v", mode, w, err)
		}
	}
	w, err := stock.Check(AsyncRequire)
	if w != nil || !errors.Is(err, CodeOVSNoVhostAsync) || !strings.Contains(err.Error(), "OVS_NO_VHOST_ASYNC: ovs-vswitchd: ovs.asyncMode is require, but ovs-vswitchd 3.1.0 with DPDK 22.11.1 has no vhost async DMA support") {
		t.Errorf("stock.Check(require) = %v, %v", w, err)
	}
	_, err = stock.Check("sometimes")
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeInvalidRequest || e.Field != "ovs.asyncMode" || !strings.Contains(e.Msg, "want off, auto or require") {
		t.Errorf("stock.Check(sometimes) = %v", err)
	}
}

// coverageShow is the shape of ovs-vswitchd's coverage/show with two vhost async counters,
// one hit.
const coverageShow = `Event coverage, avg rate over last: 5 seconds, last minute, last hour,  hash=1f3d1b6e:
bridge_reconfigure         0.0/sec     0.000/sec        0.0008/sec   total: 3
vhost_async_tx_submit    120.4/sec   100.000/sec       10.0000/sec   total: 123456
vhost_async_rx_poll        0.0/sec     0.000/sec        0.0000/sec   total: 0
netdev_get_stats           0.6/sec     0.600/sec        0.0100/sec   total: 40
120 events never hit
`

func TestParseVhostAsyncCoverage(t *testing.T) {
	cov, err := ParseVhostAsyncCoverage(coverageShow)
	if err != nil || !cov.Active || len(cov.Counters) != 2 || cov.Counters["vhost_async_tx_submit"] != 123456 {
		t.Errorf("ParseVhostAsyncCoverage = %+v, %v", cov, err)
	}
	idle := strings.Replace(coverageShow, "total: 123456", "total: 0", 1)
	if cov, err := ParseVhostAsyncCoverage(idle); err != nil || cov.Active || len(cov.Counters) != 2 {
		t.Errorf("idle counters: %+v, %v", cov, err)
	}
	none := "Event coverage, avg rate over last: 5 seconds, last minute, last hour,  hash=0:\n5 events never hit\n"
	if cov, err := ParseVhostAsyncCoverage(none); err != nil || cov.Active || len(cov.Counters) != 0 {
		t.Errorf("no counters: %+v, %v", cov, err)
	}
	for _, tc := range []struct{ text, want string }{
		{"", "does not start with"},
		{"Event coverage\nvhost_async_x 0.0/sec total: -1\n", `line 2: counter "vhost_async_x": total "-1" is not a number`},
		{"Event coverage\nvhost_async_" + strings.Repeat("x", 200) + " total: 1\n", "counter name of 212 bytes"},
		{"Event coverage\nvhost_async_a total: 1\nvhost_async_a total: 0\n", `line 3: counter "vhost_async_a" is listed twice`},
		{"Event coverage" + strings.Repeat("\n", MaxCoverageLines+1), "lines (at most 8192)"},
		{"Event coverage" + strings.Repeat(" ", MaxCoverageText), "bytes (at most 1048576)"},
	} {
		if _, err := ParseVhostAsyncCoverage(tc.text); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseVhostAsyncCoverage(%.40q): %v, want %q", tc.text, err, tc.want)
		}
	}
}

// FuzzParseVhostAsyncCoverage: whatever the text, the parser does not panic, returns only
// vhost_async_* counters within bounds, and Active is exactly "some counter is nonzero".
func FuzzParseVhostAsyncCoverage(f *testing.F) {
	f.Add(coverageShow)
	f.Add("Event coverage\nvhost_async_a total: 18446744073709551615\n")
	f.Add("Event coverage\nvhost_async_a total: 18446744073709551616\n")
	f.Fuzz(func(t *testing.T, text string) {
		cov, err := ParseVhostAsyncCoverage(text)
		if err != nil {
			return
		}
		active := false
		for name, v := range cov.Counters {
			if !strings.HasPrefix(name, VhostAsyncCounterPrefix) || len(name) > maxCounterName {
				t.Fatalf("counter %q", name)
			}
			active = active || v > 0
		}
		if active != cov.Active {
			t.Fatalf("Active = %v with counters %v", cov.Active, cov.Counters)
		}
	})
}
