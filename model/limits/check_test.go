package limits

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		kind   Kind
		name   string
		sent   error  // nil: accepted
		reason string // in the message
	}{
		{Port, "vhu1", nil, ""},
		{Port, "eth0.100", nil, ""},
		{Port, "vhost-user_1", nil, ""},
		{Port, "портA", nil, ""},
		{Port, "café", nil, ""},              // precomposed
		{Port, "cafe\u0301", nil, ""},        // combining acute after a letter
		{Bridge, "br-int", nil, ""},          // 6 bytes
		{Bridge, "br-0123456789ab", nil, ""}, // 15 bytes
		{Bridge, "br-0123456789abc", ErrTooLarge, "16 bytes, more than 15"},
		{Port, strings.Repeat("p", 64), nil, ""},
		{Port, strings.Repeat("p", 65), ErrTooLarge, "65 bytes, more than 64"},
		{Port, "", ErrBadName, "empty"},
		{Port, ".", ErrBadName, `"." and ".."`},
		{Port, "..", ErrBadName, `"." and ".."`},
		{Port, "a:b", ErrBadName, `':'`},
		{Interface, "a/b", ErrBadName, `'/'`},
		{Interface, "a b", ErrBadName, "white space"},
		{Interface, "a\tb", ErrBadText, "control character U+0009"},
		{Port, "a\x00b", ErrBadText, "NUL"},
		{Port, "a\xffb", ErrBadText, "invalid UTF-8 at byte 1"},
		{Bridge, "br\u200b0", ErrBadText, "U+200B"},
		{Port, "p\u200d1", ErrBadText, "U+200D"},
		{Port, "p\u202e1", ErrBadText, "U+202E"}, // right-to-left override
		{Port, "p\u00ad1", ErrBadText, "U+00AD"}, // soft hyphen
		{Port, "p\ufe0f1", ErrBadText, "U+FE0F"}, // variation selector
		{Port, "p\u3164", ErrBadText, "U+3164"},  // Hangul filler
		{Port, "p\u00a01", ErrBadName, "white space"},
		{Port, "\u0301p", ErrBadText, "combining mark"},
		{Port, "p\ue000", ErrBadText, "private-use"},
		{Port, "p\ufffd", ErrBadText, "replacement character"},
	} {
		t.Run(fmt.Sprintf("%s/%q", tc.kind, tc.name), func(t *testing.T) {
			err := CheckName(tc.kind, tc.name)
			if tc.sent == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var le *Error
			if !errors.Is(err, tc.sent) || !errors.As(err, &le) {
				t.Fatalf("got %v, want an *Error matching %v", err, tc.sent)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.reason) || !strings.HasPrefix(msg, Object(tc.kind, tc.name)+": name: ") || le.Fix == "" {
				t.Fatalf("message %q: want the object, %q and a fix", msg, tc.reason)
			}
		})
	}
}

func TestCheckInterfaceName(t *testing.T) {
	if err := CheckInterfaceName("dpdk-port-000001", "dpdk"); err != nil {
		t.Fatalf("a 16-byte dpdk interface name refused: %v", err)
	}
	if err := CheckInterfaceName("dpdk:1", "dpdk"); !errors.Is(err, ErrBadName) {
		t.Fatalf("got %v", err)
	}
	err := CheckInterfaceName("tap-port-0000001", "tap")
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), `type "tap"`) {
		t.Fatalf("got %v", err)
	}
}

func TestCheckMap(t *testing.T) {
	obj := Object(Port, "p1")
	if err := CheckMap(obj, "external_ids", map[string]string{"a": "1", "dpdk-extra": "-a 0000:01:00.0 --log-level=8"}); err != nil {
		t.Fatalf("good map refused: %v", err)
	}
	for _, tc := range []struct {
		name   string
		m      map[string]string
		sent   error
		reason string
	}{
		{"NUL in value", map[string]string{"k": "a\x00b"}, ErrBadText, `port "p1": external_ids key "k": value: NUL byte at byte 1`},
		{"NUL in key", map[string]string{"k\x00": "v"}, ErrBadText, `external_ids key "k\x00": NUL byte`},
		{"newline in value", map[string]string{"k": "a\nb"}, ErrBadText, "control character U+000A"},
		{"invalid UTF-8", map[string]string{"k": "\xc0\x80"}, ErrBadText, "invalid UTF-8 at byte 0"},
		{"empty key", map[string]string{"": "v"}, ErrBadText, "empty key"},
		{"zero width key", map[string]string{"dpdk-init\u200b": "true"}, ErrBadText, "U+200B"},
		{"long key", map[string]string{strings.Repeat("k", MaxKeyBytes+1): "v"}, ErrTooLarge, "257 bytes, more than 256"},
		{"long value", map[string]string{"k": strings.Repeat("v", MaxValueBytes+1)}, ErrTooLarge, "4097 bytes, more than 4096"},
		{"too many", manyEntries(MaxMapEntries + 1), ErrTooLarge, "257 entries, more than 256"},
		{"too big", bigMap(), ErrTooLarge, "more than 16384 (limits.MaxMapBytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckMap(obj, "external_ids", tc.m)
			if !errors.Is(err, tc.sent) || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("got %v, want %v with %q", err, tc.sent, tc.reason)
			}
		})
	}
}

func manyEntries(n int) map[string]string {
	m := make(map[string]string, n)
	for i := range n {
		m[fmt.Sprint("k", i)] = "v"
	}
	return m
}

func bigMap() map[string]string {
	m := map[string]string{}
	for i := range 5 {
		m[fmt.Sprint("k", i)] = strings.Repeat("v", MaxValueBytes)
	}
	return m
}

// TestProblemsCapped: a map with thousands of bad entries gets an error listing
// MaxReportedProblems of them and counting the rest, not one line per entry.
func TestProblemsCapped(t *testing.T) {
	var p Problems
	for i := range 250 {
		p.Add(CheckKey("port \"p\"", "external_ids", fmt.Sprint("k\x00", i)))
	}
	err := p.Err()
	if !errors.Is(err, ErrBadText) {
		t.Fatalf("got %v", err)
	}
	if lines := strings.Count(err.Error(), "\n") + 1; lines != MaxReportedProblems+1 || !strings.Contains(err.Error(), "and 240 more") {
		t.Fatalf("%d lines:\n%v", lines, err)
	}
}

func TestCheckCounts(t *testing.T) {
	if err := CheckInterfaces("port \"b\"", MaxInterfacesPerPort); err != nil {
		t.Fatal(err)
	}
	if err := CheckInterfaces("port \"b\"", 100000); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "100000 interfaces, more than 64") {
		t.Fatalf("got %v", err)
	}
	if err := CheckPortBytes(`port "b"`, MaxPortBytes+1); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "limits.MaxPortBytes") {
		t.Fatalf("got %v", err)
	}
	if n := MapBytes(map[string]string{"ab": "cde", "f": ""}); n != 6 {
		t.Fatalf("MapBytes: %d", n)
	}
	if err := CheckObjects("configuration", MaxObjectsPerRequest+1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v", err)
	}
}

func TestCheckText(t *testing.T) {
	if err := CheckText("o", "f", "tab\tand\nnewline are fine here"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"a\x00", "\xff"} {
		if err := CheckText("o", "f", s); !errors.Is(err, ErrBadText) {
			t.Fatalf("%q: got %v", s, err)
		}
	}
}

// BenchmarkCheckMap: a full map of short valid entries, the common case at every door.
func BenchmarkCheckMap(b *testing.B) {
	m := manyEntries(MaxMapEntries)
	b.ReportAllocs()
	for b.Loop() {
		if err := CheckMap(`port "p"`, "external_ids", m); err != nil {
			b.Fatal(err)
		}
	}
}
