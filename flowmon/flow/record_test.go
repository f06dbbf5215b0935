package flow

import "testing"

func TestProtocolNamesRoundTrip(t *testing.T) {
	for p := NetFlowV5; p <= SFlow; p++ {
		got, err := ParseProtocol(p.String())
		if err != nil || got != p {
			t.Errorf("ParseProtocol(%q) = %v, %v; want %v", p.String(), got, err, p)
		}
	}
	if _, err := ParseProtocol("netflow7"); err == nil {
		t.Error("ParseProtocol accepted netflow7")
	}
	if Unknown.String() != "unknown" {
		t.Errorf("Unknown.String() = %q", Unknown.String())
	}
}
