package ovsproc

import (
	"errors"
	"strings"
	"testing"
)

func TestParseMeminfo(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Hugepages
		wantErr string
	}{
		{name: "2 MiB pages", in: "MemTotal:       24000000 kB\nHugePages_Total:    1024\nHugePages_Free:      768\n" +
			"HugePages_Rsvd:        0\nHugepagesize:       2048 kB\nHugetlb:         2097152 kB\n",
			want: Hugepages{Total: 1024, Free: 768, PageBytes: 2 << 20}},
		{name: "1 GiB pages", in: "HugePages_Total: 4\nHugePages_Free: 2\nHugepagesize: 1048576 kB\n",
			want: Hugepages{Total: 4, Free: 2, PageBytes: 1 << 30}},
		{name: "no hugetlbfs", in: "MemTotal: 1000 kB\nMemFree: 10 kB\n"},
		{name: "bad count", in: "HugePages_Free: many\n", wantErr: "HugePages_Free"},
		{name: "bad unit", in: "Hugepagesize: 2 MB\n", wantErr: "Hugepagesize"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMeminfo(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseMeminfo = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	if got := (Hugepages{Free: 768, PageBytes: 2 << 20}).FreeMB(); got != 1536 {
		t.Errorf("FreeMB = %d, want 1536", got)
	}
}

func TestSocketMemMB(t *testing.T) {
	for in, want := range map[string]int64{"512": 512, "1024,1024": 2048, "1024,": 1024, " 256 , 0": 256, "": 0} {
		if got, err := SocketMemMB(in); err != nil || got != want {
			t.Errorf("SocketMemMB(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"1G", "-1", "512,x"} {
		if _, err := SocketMemMB(in); err == nil {
			t.Errorf("SocketMemMB(%q) succeeded, want an error", in)
		}
	}
}

func TestDPDKHostMissing(t *testing.T) {
	plenty := Hugepages{Total: 1024, Free: 1024, PageBytes: 2 << 20} // 2048 MiB free
	ok := DPDKHost{Binary: "/x/ovs-vswitchd-dpdk", BinaryOK: true, Root: true, Hugepages: plenty, SocketMemMB: 512}
	with := func(f func(*DPDKHost)) DPDKHost { h := ok; f(&h); return h }
	tests := []struct {
		name string
		host DPDKHost
		want string
	}{
		{"all there", ok, ""},
		{"exactly enough", with(func(h *DPDKHost) { h.SocketMemMB = 2048 }), ""},
		{"too few hugepages", with(func(h *DPDKHost) { h.SocketMemMB = 4096 }), "2048 MiB of hugepages free"},
		{"no binary", with(func(h *DPDKHost) { h.BinaryOK = false }), "/x/ovs-vswitchd-dpdk is not installed"},
		{"not root", with(func(h *DPDKHost) { h.Root = false }), "DPDK needs root"},
		{"meminfo unreadable", with(func(h *DPDKHost) { h.HugeErr = errors.New("boom") }), "cannot read free hugepages: boom"},
	}
	for _, tt := range tests {
		got := tt.host.Missing()
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: Missing() = %q, want …%q…", tt.name, got, tt.want)
		}
	}
}
