package ovsproc

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// listCommands3 is the start of ovs-vswitchd 3.1's list-commands reply, as it comes.
const listCommands3 = "The available commands are:\n  autoattach/show-isid    [bridge]\n  bond/list               \n" +
	"  dpif-netdev/pmd-rxq-show [-pmd core] [dp]\n  list-commands           \n  version                 \n"

func TestParseCommandList(t *testing.T) {
	got, err := ParseCommandList(listCommands3)
	if want := []string{"autoattach/show-isid", "bond/list", "dpif-netdev/pmd-rxq-show", "list-commands", "version"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("ParseCommandList = %q, %v; want %q", got, err, want)
	}
	if got, err := ParseCommandList("The available commands are:\n  exit  \n  exit  \n"); err != nil || !slices.Equal(got, []string{"exit"}) {
		t.Errorf("a command listed twice: %q, %v", got, err)
	}
	for _, tc := range []struct{ name, text, want string }{
		{"no heading", "  exit\n", "does not start with"},
		{"text after the heading", "The available commands are: exit\n", "unexpected text"},
		{"a name with a quote", "The available commands are:\n  ex'it  \n", `holds byte '\''`},
		{"a name too long", "The available commands are:\n  " + strings.Repeat("a", MaxAppctlCommandLen+1) + "\n", "at most 128"},
		{"too many", "The available commands are:\n" + strings.Repeat("  c\n", 1) + manyCommands(MaxAppctlCommands+1), "more than 4096"},
	} {
		if _, err := ParseCommandList(tc.text); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func manyCommands(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("  cmd/")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(string(rune('a' + i%26)))
		b.WriteString(strconv.Itoa(i))
		b.WriteString("  usage\n")
	}
	return b.String()
}

// FuzzParseCommandList: whatever the text, ParseCommandList does not panic, keeps its bounds,
// returns only well-formed distinct names, and parses its own rendering back to the same list.
func FuzzParseCommandList(f *testing.F) {
	f.Add(listCommands3)
	f.Add("The available commands are:\n")
	f.Add("The available commands are:\n  a\x00b\n")
	f.Add("The available commands are:\r\n  exit\r\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, text string) {
		names, err := ParseCommandList(text)
		if err != nil {
			return
		}
		if len(names) > MaxAppctlCommands {
			t.Fatalf("%d commands", len(names))
		}
		seen := map[string]bool{}
		var b strings.Builder
		b.WriteString(commandListHead + "\n")
		for _, n := range names {
			if n == "" || checkCommandName(n) != nil || seen[n] {
				t.Fatalf("bad or repeated name %q", n)
			}
			seen[n] = true
			b.WriteString("  " + n + "  usage\n")
		}
		again, err := ParseCommandList(b.String())
		if err != nil || !slices.Equal(again, names) {
			t.Fatalf("rendering %q parses to %q, %v", names, again, err)
		}
	})
}

// FuzzDecodeReply: any reply bytes give a result, a *UnixctlError or an error; never a panic.
func FuzzDecodeReply(f *testing.F) {
	f.Add([]byte(`{"id":7,"result":"ovs-vswitchd (Open vSwitch) 3.1.0\n","error":null}`))
	f.Add([]byte(`{"id":7,"error":"\"nosuch\" is not a valid command"}`))
	f.Add([]byte(`{"id":"7","result":1}`))
	f.Add([]byte(`{"id":7,"error":{"x":1}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		res, err := decodeReply(raw, "m", 7)
		var ue *UnixctlError
		if err == nil && len(res) > len(raw) {
			t.Fatalf("a result of %d bytes from %d bytes", len(res), len(raw))
		}
		if errors.As(err, &ue) && ue.Method != "m" {
			t.Fatalf("error for method %q", ue.Method)
		}
	})
}

// serve answers each connection to a unix socket in a temporary directory with reply(request).
func serve(t *testing.T, reply func(req []byte) []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ctl")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				n, _ := c.Read(buf)
				_, _ = c.Write(reply(buf[:n]))
			}()
		}
	}()
	return path
}

// TestUnixctlRefusesMisbehavingServers: a reply beyond MaxUnixctlReply, a reply to another
// request, a closed connection and a server that never answers end in errors naming the
// cause; the request carries the arguments as JSON strings.
func TestUnixctlRefusesMisbehavingServers(t *testing.T) {
	ctx := t.Context()
	var got []byte
	echo := serve(t, func(req []byte) []byte {
		got = append([]byte(nil), req...)
		id := strings.TrimSuffix(strings.SplitN(string(req), `"id":`, 2)[1], "}")
		return []byte(`{"id":` + id + `,"result":"ok","error":null}`)
	})
	if out, err := Unixctl(ctx, echo, "vlog/set", "a b;c", `"q"`); err != nil || out != "ok" {
		t.Fatalf("Unixctl = %q, %v", out, err)
	}
	if !strings.Contains(string(got), `"params":["a b;c","\"q\""]`) {
		t.Errorf("request %s", got)
	}
	huge := serve(t, func([]byte) []byte {
		return []byte(`{"id":1,"result":"` + strings.Repeat("x", MaxUnixctlReply) + `"}`)
	})
	if _, err := Unixctl(ctx, huge, "list-commands"); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("an oversized reply: %v", err)
	}
	other := serve(t, func([]byte) []byte { return []byte(`{"id":-5,"result":"x","error":null}`) })
	if _, err := Unixctl(ctx, other, "version"); err == nil || !strings.Contains(err.Error(), "reply to request") {
		t.Errorf("a reply to another request: %v", err)
	}
	closed := serve(t, func([]byte) []byte { return nil })
	if _, err := Unixctl(ctx, closed, "version"); err == nil || !strings.Contains(err.Error(), "closed before a reply") {
		t.Errorf("a connection closed without reply: %v", err)
	}
	path := filepath.Join(t.TempDir(), "mute")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // accepts and never answers
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := Unixctl(cctx, path, "version"); err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a server that never answers: %v", err)
	}
}
