package embedded

import "testing"

func TestScreen(t *testing.T) {
	for _, tc := range []struct{ in, out, why string }{
		{`{"a":"b"}`, `{"a":"b"}`, ""},
		{`{"a":"\\u0000"}`, `{"a":"\\u0000"}`, ""}, // an escaped backslash, then "u0000"
		{`{"a":"\u0000"}`, "", "null bytes not supported in quoted strings"},
		{"{\"a\":\"x\xffy\"}", `{"a":"x\u0000ff\u0000y"}`, ""},
		{`{"a":"\udc00"}`, `{"a":"\u0000edb0\u0000"}`, ""},
		{`{"a":"\ud83d\ude00"}`, `{"a":"\ud83d\ude00"}`, ""},
		{`{"a":"\ud83d"}`, "", "malformed escaped surrogate pair"},
	} {
		out, why := screen([]byte(tc.in))
		if why != tc.why || (why == "" && string(out) != tc.out) {
			t.Errorf("%s: got %q %q, want %q %q", tc.in, out, why, tc.out, tc.why)
		}
	}
}
