package endpoint_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/stripe/endpoint"
)

func sampleMsgs() []endpoint.Msg {
	return []endpoint.Msg{
		{Type: endpoint.TypeRegister, Tag: 7, Name: "app-é", Service: 3, LocalPort: 1000, PeerNode: 2, PeerPort: 2000, Rate: 12345},
		{Type: endpoint.TypeRegistered, Tag: 7, App: 9},
		{Type: endpoint.TypeSend, Tag: 8, App: 9, Payload: []byte("hello")},
		{Type: endpoint.TypeSend, Tag: 8, App: 9, Payload: []byte{}},
		{Type: endpoint.TypeDeliver, App: 9, Payload: []byte("world")},
		{Type: endpoint.TypeDeregister, Tag: 10, App: 9},
		{Type: endpoint.TypeOK, Tag: 10},
		{Type: endpoint.TypeError, Tag: 11, Code: endpoint.CodeUnknownApp, Text: "no such app"},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, m := range sampleMsgs() {
		b, err := endpoint.Append(nil, m)
		if err != nil {
			t.Fatalf("%+v: %v", m, err)
		}
		if n, err := endpoint.Frame(append(b, 0xff), endpoint.MaxWire); err != nil || n != len(b) {
			t.Fatalf("%v: Frame = %d, %v; want %d", m.Type, n, err, len(b))
		}
		got, err := endpoint.Decode(b)
		if err != nil {
			t.Fatalf("%v: %v", m.Type, err)
		}
		if got.Payload == nil && m.Payload != nil {
			got.Payload = []byte{}
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("decode(encode(%+v)) = %+v", m, got)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	reg, _ := endpoint.Append(nil, sampleMsgs()[0])
	for name, b := range map[string][]byte{
		"empty":             {},
		"prefix only":       {0, 0, 0, 1},
		"length too long":   {0, 0, 0, 9, 6, 0, 0, 0, 1},
		"length too short":  {0, 0, 0, 1, 6, 0, 0, 0, 1},
		"unknown type":      {0, 0, 0, 1, 99},
		"truncated ok":      {0, 0, 0, 3, 6, 0, 0},
		"trailing ok":       {0, 0, 0, 6, 6, 0, 0, 0, 1, 0},
		"truncated reg":     reg[:len(reg)-1],
		"name length lies":  append(append([]byte{}, reg...), 'x'),
		"register no name":  func() []byte { b := append([]byte{}, reg[:4+1+22]...); b[3] = 24; return append(b, 0) }(),
		"control char name": bytes.Replace(reg, []byte("app"), []byte("a\nb"), 1),
	} {
		if name == "trailing ok" || name == "name length lies" {
			// fix the prefix so only the body is wrong
			b[3] = byte(len(b) - 4)
		}
		if _, err := endpoint.Decode(b); !errors.Is(err, endpoint.ErrMalformed) {
			t.Errorf("%s: Decode(%x) = %v, want ErrMalformed", name, b, err)
		}
	}
	if _, err := endpoint.Append(nil, endpoint.Msg{Type: endpoint.TypeRegister, Name: strings.Repeat("x", endpoint.MaxName+1)}); err == nil {
		t.Error("Append took a name beyond MaxName")
	}
	if _, err := endpoint.Frame([]byte{0xff, 0, 0, 0}, endpoint.MaxWire); !errors.Is(err, endpoint.ErrMalformed) {
		t.Errorf("Frame took a 4 GiB prefix: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, m := range sampleMsgs() {
		b, err := endpoint.Append(nil, m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0, 0, 0, 1, 99})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := endpoint.Decode(b)
		if err != nil {
			if !errors.Is(err, endpoint.ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		again, err := endpoint.Append(nil, m)
		if err != nil {
			t.Fatalf("accepted %+v does not encode: %v", m, err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("re-encoding %x gave %x", b, again)
		}
	})
}
