package embedded

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/lab"
)

// textProbe is one transact message with strings written byte for byte.
type textProbe struct {
	name  string
	value string // raw JSON text of the external_ids value, quotes included
	key   string // raw JSON text of the key; `"k"` when empty
}

func (p textProbe) message(id int) []byte {
	key := p.key
	if key == "" {
		key = `"k"`
	}
	return fmt.Appendf(nil, `{"id":%d,"method":"transact","params":["Open_vSwitch",`+
		`{"op":"insert","table":"Bridge","row":{"name":"ok%d"}},`+
		`{"op":"insert","table":"Bridge","row":{"name":"t%d","external_ids":["map",[[%s,%s]]]}}]}`,
		id, id, id, key, p.value)
}

// answer sends msg on a fresh connection and returns what the server did: "dropped" when it
// closed the session without answering, else the summary of the results with the details of
// errors.
func answer(t *testing.T, endpoint string, msg []byte) string {
	t.Helper()
	nc, err := net.Dial("unix", strings.TrimPrefix(endpoint, "unix:"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// A safety net against a hanging server, not a timing assertion.
	_ = nc.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := nc.Write(msg); err != nil {
		t.Fatal(err)
	}
	var m rawMsg
	if err := json.NewDecoder(nc).Decode(&m); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return "dropped"
		}
		t.Fatalf("reading the answer: %v", err)
	}
	var res []json.RawMessage
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatalf("result %s error %s", m.Result, m.Error)
	}
	out := summary(res)
	for i, r := range res {
		var v struct{ Details string }
		if json.Unmarshal(r, &v) == nil && v.Details != "" {
			out[i] += ": " + v.Details
		}
	}
	return strings.Join(out, ", ")
}

// TestTextLikeOVSDBServer (issue 12 item 3): strings ovsdb-server cannot take get the same
// answer from the embedded database as from a real ovsdb-server 3.1 — a NUL (raw or escaped),
// a raw control character or a broken surrogate pair drops the session without an answer, and
// nothing of the transaction is written (its valid first operation included); invalid UTF-8
// fails the transaction with "constraint violation" naming the byte; escaped control
// characters and zero-width characters are stored. At the end both hold the same bridges.
func TestTextLikeOVSDBServer(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	probes := []textProbe{
		{name: "plain", value: `"v"`},
		{name: "escaped NUL", value: `"a\u0000b"`},
		{name: "raw NUL", value: "\"a\x00b\""},
		{name: "NUL in key", key: `"k\u0000"`, value: `"v"`},
		{name: "raw control", value: "\"a\x01b\""},
		{name: "escaped control", value: `"a\u0001b"`},
		{name: "escaped newline", value: `"a\nb"`},
		{name: "lone high surrogate", value: `"a\ud800b"`},
		{name: "lone low surrogate", value: `"a\udc00b"`},
		{name: "surrogate pair", value: `"a\ud83d\ude00b"`},
		{name: "invalid UTF-8", value: "\"a\xffb\""},
		{name: "overlong NUL", value: "\"a\xc0\x80b\""},
		{name: "invalid UTF-8 key", key: "\"k\xfe\"", value: `"v"`},
		{name: "zero width space", value: `"a\u200bb"`},
		{name: "UTF-8", value: `"café ✓"`},
	}
	db := open(t, shortDir(t), Options{})
	o := lab.StartOVSDB(t)
	eps := map[string]string{"embedded": db.Endpoint(), "ovsdb-server": o.Endpoint}
	for i, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			msg := p.message(i + 1)
			emb, real := answer(t, eps["embedded"], msg), answer(t, eps["ovsdb-server"], msg)
			if emb != real {
				t.Fatalf("embedded: %s\novsdb-server: %s", emb, real)
			}
			t.Logf("both: %s", emb)
		})
	}
	// Spot checks of the expectations the comparison relies on, so that a change of
	// ovsdb-server's behaviour shows here.
	for i, want := range map[int]string{1: "dropped", 10: "ok, constraint violation: not a valid UTF-8 string: invalid UTF-8 sequence 0xff"} {
		if got := answer(t, eps["embedded"], probes[i].message(100+i)); got != want {
			t.Errorf("%s: %s, want %s", probes[i].name, got, want)
		}
	}
	names := map[string][]string{}
	for name, ep := range eps {
		res := rawDial(t, ep).transact(`[{"op":"select","table":"Bridge","where":[],"columns":["name","external_ids"]}]`)
		var sel struct {
			Rows []struct {
				Name        string
				ExternalIDs json.RawMessage `json:"external_ids"`
			}
		}
		if err := json.Unmarshal(res[0], &sel); err != nil {
			t.Fatal(err)
		}
		for _, r := range sel.Rows {
			names[name] = append(names[name], r.Name+"="+string(r.ExternalIDs))
		}
		slices.Sort(names[name])
	}
	if !slices.Equal(names["embedded"], names["ovsdb-server"]) {
		t.Fatalf("bridges differ:\nembedded:     %q\novsdb-server: %q", names["embedded"], names["ovsdb-server"])
	}
	for _, n := range names["embedded"] {
		if strings.Contains(n, `\u0000`) {
			t.Errorf("stored a NUL: %s", n)
		}
	}
}
