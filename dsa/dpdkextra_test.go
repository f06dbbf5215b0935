package dsa

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestFilePrefix(t *testing.T) {
	for _, tc := range []struct{ extra, want string }{
		{"", ""},
		{"--no-pci", ""},
		{"--no-pci --file-prefix ovs1", "ovs1"},
		{"--file-prefix=ovs1 -a wq0.0", "ovs1"},
		{"  --file-prefix\t'ovs-a'\n", "ovs-a"},
		{"--file-prefix=a --file-prefix b", "b"},
		{"'--file-prefix=x'", "x"},
		{`--file-prefix=a\_b`, "a_b"},
		{"--file-prefixes=x", ""},
		{"-a 0000:6a:01.0,max_queues=4", ""},
	} {
		got, err := FilePrefix(tc.extra)
		if err != nil || got != tc.want {
			t.Errorf("FilePrefix(%q) = %q, %v; want %q", tc.extra, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ extra, want string }{
		{"--file-prefix", "has no value"},
		{"--file-prefix=", "value of 0 bytes"},
		{`--file-prefix="o v"`, `holds byte ' '`},
		{"--file-prefix=../x", `holds byte '/'`},
		{"--file-prefix=" + strings.Repeat("p", MaxFilePrefixLen+1), "value of 65 bytes"},
		{`--no-pci \`, "ends in a backslash"},
		{`--file-prefix 'ovs`, "unclosed ' quote"},
		{strings.Repeat("x", MaxDPDKExtraLen+1), "at most 65536"},
		{strings.Repeat("x ", MaxDPDKExtraWords+1), "more than 4096 words"},
	} {
		if got, err := FilePrefix(tc.extra); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "dpdk-extra") {
			t.Errorf("FilePrefix(%.60q) = %q, %v; want an error naming dpdk-extra with %q", tc.extra, got, err, tc.want)
		}
	}
}

// TestSplitDPDKExtraLikeOVS: the quoting rules of OVS's svec_parse_words, quirks included.
func TestSplitDPDKExtraLikeOVS(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"a  b\tc", []string{"a", "b", "c"}},
		{`"a b" 'c d'`, []string{"a b", "c d"}},
		{`a\ b`, []string{"a b"}},
		{`"a\"b"`, []string{`a"b`}},
		{`'a\b'`, []string{`a\b`}},
		{`x"y z"w`, []string{"xy zw"}},
		{"", nil},
	} {
		got, err := splitDPDKExtra(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("split(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestSplitDPDKExtraQuoteSwitch: in OVS, ' opens a quote, " inside it switches the quote to ",
// the second " closes it, and the final ' opens a quote that never closes: refused here.
func TestSplitDPDKExtraQuoteSwitch(t *testing.T) {
	if got, err := splitDPDKExtra(`'a"b c"'`); err == nil || !strings.Contains(err.Error(), "unclosed ' quote") {
		t.Errorf("split = %q, %v; want the unclosed quote refused", got, err)
	}
}

func TestAllowArgs(t *testing.T) {
	got, err := AllowArgs("0000:6a:01.0", 4)
	if err != nil || got != "-a 0000:6a:01.0,max_queues=4" {
		t.Errorf("AllowArgs = %q, %v", got, err)
	}
	if got, err := AllowArgs("ffff:ff:1f.7", MaxIdxdQueues); err != nil || got != "-a ffff:ff:1f.7,max_queues=255" {
		t.Errorf("AllowArgs(highest) = %q, %v", got, err)
	}
	for _, tc := range []struct {
		bdf  string
		n    int
		want string
	}{
		{"6a:01.0", 1, "7 bytes"},
		{"0000:6A:01.0", 1, "lowercase hex"},
		{"0000:6a:01.0,x", 1, "14 bytes"},
		{"0000:6a:01.0 ", 1, "13 bytes"},
		{"0000-6a:01.0", 1, "separators"},
		{"0000:6a:20.0", 1, "above 1f"},
		{"0000:6a:01.8", 1, "above 7"},
		{"0000:6a:0g.0", 1, "'g'"},
		{"0000:6a:01.0", 0, "max_queues 0"},
		{"0000:6a:01.0", 256, "max_queues 256"},
		{"0000:6a:01.0", -1, "max_queues -1"},
	} {
		got, err := AllowArgs(tc.bdf, tc.n)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, CodeInvalidRequest) {
			t.Errorf("AllowArgs(%q, %d) = %q, %v; want INVALID_REQUEST with %q", tc.bdf, tc.n, got, err, tc.want)
		}
	}
}

// FuzzFilePrefix: whatever dpdk-extra holds, FilePrefix does not panic and returns either an
// error or a value that passes its own check and appears in the text.
func FuzzFilePrefix(f *testing.F) {
	f.Add("--no-pci --file-prefix=ovs1")
	f.Add(`--file-prefix "a"\ b`)
	f.Add("'")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := FilePrefix(s)
		if err != nil || p == "" {
			return
		}
		if checkFilePrefix(p) != nil {
			t.Fatalf("FilePrefix(%q) = %q, which fails its own check", s, p)
		}
	})
}
