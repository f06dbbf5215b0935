//go:build linux

package flowbed

import "testing"

func TestPortCounter(t *testing.T) {
	dump := `OFPST_PORT reply (xid=0x2): 3 ports
  port LOCAL: rx pkts=0, bytes=0, drop=0, errs=0, frame=0, over=0, crc=0
           tx pkts=0, bytes=0, drop=0, errs=0, coll=0
  port  1: rx pkts=34207, bytes=2189332, drop=0, errs=0, frame=?, over=?, crc=?
           tx pkts=0, bytes=0, drop=0, errs=0, coll=?
  port  2: rx pkts=4, bytes=340, drop=0, errs=0, frame=?, over=?, crc=?
           tx pkts=34206, bytes=2189332, drop=0, errs=0, coll=?`
	for _, c := range []struct {
		port, dir string
		want      uint64
	}{{"1", "rx", 34207}, {"2", "tx", 34206}, {"2", "rx", 4}, {"1", "tx", 0}} {
		if got, err := portCounter(dump, c.port, c.dir); err != nil || got != c.want {
			t.Errorf("port %s %s = %d, %v; want %d", c.port, c.dir, got, err, c.want)
		}
	}
	if _, err := portCounter(dump, "3", "rx"); err == nil {
		t.Error("port 3 found")
	}
}
