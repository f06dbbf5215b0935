package veth

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/ovsplane/ovsplane/internal/testkit"
	"github.com/ovsplane/ovsplane/test/lab"
)

// world is a throwaway host namespace (lab.NewNetns) and a Manager whose host ends live there,
// so the tests never touch the machine's own interfaces.
type world struct {
	host *lab.Netns
	m    *Manager
}

func newWorld(t *testing.T, owner string) *world {
	t.Helper()
	lab.Require(t, lab.NeedNetns)
	w := &world{host: lab.NewNetns(t)}
	w.m = newManager(t, w.host, owner)
	return w
}

func newManager(t *testing.T, host *lab.Netns, owner string) *Manager {
	t.Helper()
	m, err := New(Config{Owner: owner, HostNetns: filepath.Join(DefaultNetnsDir, host.Name),
		Logger: testkit.Logger(t, slog.LevelInfo)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// freshNetns returns a fresh namespace name that is deleted (if it exists) at cleanup.
func freshNetns(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "ovsvt" + hex.EncodeToString(b)
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join(DefaultNetnsDir, name)); err == nil {
			_ = exec.Command("ip", "netns", "del", name).Run()
		}
	})
	return name
}

// ipLink is the part of `ip -j link show` the tests read.
type ipLink struct {
	Name     string   `json:"ifname"`
	Index    int      `json:"ifindex"`
	MTU      int      `json:"mtu"`
	Flags    []string `json:"flags"`
	Alias    string   `json:"ifalias"`
	LinkKind string   `json:"link_type"`
	AddrInfo []struct {
		Local     string `json:"local"`
		PrefixLen int    `json:"prefixlen"`
		Scope     string `json:"scope"`
	} `json:"addr_info"`
}

// ipShow runs `ip -n ns -j addr show dev` and returns nil when the device does not exist.
func ipShow(t *testing.T, ns, dev string) *ipLink {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", "-n", ns, "-j", "-d", "addr", "show", "dev", dev).Output()
	if err != nil {
		return nil
	}
	var links []ipLink
	if err := json.Unmarshal(out, &links); err != nil || len(links) != 1 {
		t.Fatalf("ip -n %s -j -d addr show dev %s: %v: %s", ns, dev, err, out)
	}
	return &links[0]
}

func (l *ipLink) up() bool {
	for _, f := range l.Flags {
		if f == "UP" {
			return true
		}
	}
	return false
}

func (l *ipLink) globalAddrs() []string {
	var out []string
	for _, a := range l.AddrInfo {
		if a.Scope != "link" {
			out = append(out, a.Local+"/"+strconv.Itoa(a.PrefixLen))
		}
	}
	return out
}

func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func TestEnsureCreatesConvergesAndDeletes(t *testing.T) {
	w := newWorld(t, "test")
	ctx := t.Context()
	red := freshNetns(t)
	spec := Spec{Port: "v1", Netns: red, CreateNetns: true, Address: netip.MustParsePrefix("10.0.0.1/24"), MTU: 1400}

	st, err := w.m.Ensure(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if st.Spec.Peer != "v1-p" || st.Spec.Netns != red || !st.Spec.CreateNetns || st.Spec.MTU != 1400 ||
		st.Spec.Address != spec.Address || !st.HostUp || !st.PeerUp || st.HostIndex == 0 || st.PeerIndex == 0 {
		t.Fatalf("Ensure state = %+v", st)
	}
	host, peer := ipShow(t, w.host.Name, "v1"), ipShow(t, red, "v1-p")
	if host == nil || peer == nil {
		t.Fatalf("ip sees host end %v, peer %v", host, peer)
	}
	if !host.up() || !peer.up() || host.MTU != 1400 || peer.MTU != 1400 {
		t.Errorf("host %+v / peer %+v: want both up with MTU 1400", host, peer)
	}
	if got := peer.globalAddrs(); len(got) != 1 || got[0] != "10.0.0.1/24" {
		t.Errorf("peer addresses %v, want [10.0.0.1/24]", got)
	}
	if !strings.HasPrefix(host.Alias, "ovsplane/test veth end=host port=v1 peer=v1-p netns="+red+" bridge=-") ||
		!strings.HasPrefix(peer.Alias, "ovsplane/test veth end=peer") {
		t.Errorf("marks: host %q, peer %q", host.Alias, peer.Alias)
	}
	for _, e := range [][2]string{{w.host.Name, "v1"}, {red, "v1-p"}} {
		if got := offload(t, e[0], e[1], "tx-checksumming"); got != "off" {
			t.Errorf("%s in %s: tx-checksumming %s; want off", e[1], e[0], got)
		}
	}
	if lo := ipShow(t, red, "lo"); lo == nil || !lo.up() || lo.Alias != "ovsplane/test netns created" {
		t.Errorf("created namespace's lo: %+v; want up and marked", lo)
	}

	// Idempotent: the same spec changes nothing.
	st2, err := w.m.Ensure(ctx, spec)
	if err != nil || st2.HostIndex != st.HostIndex || st2.PeerIndex != st.PeerIndex {
		t.Fatalf("second Ensure: %+v, %v; want the same pair (%d/%d)", st2, err, st.HostIndex, st.PeerIndex)
	}

	// Converge: new MTU and address on the same pair.
	spec.MTU, spec.Address = 9000, netip.MustParsePrefix("10.0.1.1/24")
	st3, err := w.m.Ensure(ctx, spec)
	if err != nil || st3.HostIndex != st.HostIndex {
		t.Fatalf("converging Ensure: %+v, %v; want the same pair", st3, err)
	}
	peer = ipShow(t, red, "v1-p")
	if got := peer.globalAddrs(); peer.MTU != 9000 || len(got) != 1 || got[0] != "10.0.1.1/24" {
		t.Errorf("peer after converge: mtu %d addrs %v; want 9000 [10.0.1.1/24]", peer.MTU, got)
	}

	// A new peer name recreates the pair.
	spec.Peer = "eth0"
	st4, err := w.m.Ensure(ctx, spec)
	if err != nil || st4.Spec.Peer != "eth0" {
		t.Fatalf("Ensure with a new peer: %+v, %v", st4, err)
	}
	if ipShow(t, red, "v1-p") != nil || ipShow(t, red, "eth0") == nil {
		t.Error("old peer still there or new peer missing")
	}

	// A new bridge label only relabels.
	spec.Bridge = "br1"
	st5, err := w.m.Ensure(ctx, spec)
	if err != nil || st5.HostIndex != st4.HostIndex || st5.Spec.Bridge != "br1" {
		t.Fatalf("Ensure with a new bridge: %+v, %v; want the same pair relabelled", st5, err)
	}
	if got, err := w.m.Get("v1"); err != nil || got.Spec.Bridge != "br1" {
		t.Fatalf("Get after relabel: %+v, %v", got, err)
	}

	// A new namespace recreates the pair there and removes the old one this owner created.
	blue := freshNetns(t)
	spec.Netns = blue
	if _, err := w.m.Ensure(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(DefaultNetnsDir, red)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("old namespace %s still there after the pair moved: %v", red, err)
	}
	if ipShow(t, blue, "eth0") == nil {
		t.Errorf("peer not in %s", blue)
	}
	red = blue

	if err := w.m.Delete(ctx, "v1", ""); err != nil {
		t.Fatal(err)
	}
	if ipShow(t, w.host.Name, "v1") != nil {
		t.Error("host end still there after Delete")
	}
	if _, err := os.Stat(filepath.Join(DefaultNetnsDir, red)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("created namespace %s still there after its last pair was deleted: %v", red, err)
	}
	if err := w.m.Delete(ctx, "v1", red); err != nil {
		t.Errorf("second Delete: %v; want nil (idempotent)", err)
	}
}

func TestHostNamespacePeer(t *testing.T) {
	w := newWorld(t, "test")
	st, err := w.m.Ensure(t.Context(), Spec{Port: "v2", Address: netip.MustParsePrefix("fd00::2/64"), KeepOffloads: true})
	if err != nil {
		t.Fatal(err)
	}
	peer := ipShow(t, w.host.Name, "v2-p")
	if peer == nil || st.Spec.Netns != "" || st.Spec.CreateNetns {
		t.Fatalf("state %+v, peer %+v", st, peer)
	}
	if got := peer.globalAddrs(); len(got) != 1 || got[0] != "fd00::2/64" {
		t.Errorf("peer addresses %v", got)
	}
	if got := offload(t, w.host.Name, "v2-p", "tx-checksumming"); got != "on" {
		t.Errorf("KeepOffloads: tx-checksumming %s; want on", got)
	}
	if err := w.m.Delete(t.Context(), "v2", ""); err != nil {
		t.Fatal(err)
	}
	if ipShow(t, w.host.Name, "v2-p") != nil {
		t.Error("peer still there")
	}
}

func TestOwnership(t *testing.T) {
	w := newWorld(t, "test")
	ctx := t.Context()
	// Someone else's veth with a port's name, and an interface with a peer's name.
	run(t, "ip", "-n", w.host.Name, "link", "add", "theirs", "type", "veth", "peer", "name", "theirs-p")
	run(t, "ip", "-n", w.host.Name, "link", "add", "v3-p", "type", "veth", "peer", "name", "x3")

	if _, err := w.m.Ensure(ctx, Spec{Port: "theirs"}); !errors.Is(err, ErrConflict) {
		t.Errorf("Ensure over an unmarked veth: %v; want ErrConflict", err)
	}
	if err := w.m.Delete(ctx, "theirs", ""); !errors.Is(err, ErrNotOwned) {
		t.Errorf("Delete of an unmarked veth: %v; want ErrNotOwned", err)
	}
	if _, err := w.m.Ensure(ctx, Spec{Port: "v3"}); !errors.Is(err, ErrConflict) {
		t.Errorf("Ensure with a taken peer name: %v; want ErrConflict", err)
	}
	if ipShow(t, w.host.Name, "theirs") == nil || ipShow(t, w.host.Name, "v3-p") == nil || ipShow(t, w.host.Name, "v3") != nil {
		t.Error("the foreign interfaces must stay and no v3 be left behind")
	}

	// Another owner's pair is invisible and untouchable.
	other := newManager(t, w.host, "other")
	if _, err := other.Ensure(ctx, Spec{Port: "o1"}); err != nil {
		t.Fatal(err)
	}
	if err := w.m.Delete(ctx, "o1", ""); !errors.Is(err, ErrNotOwned) {
		t.Errorf("Delete of another owner's pair: %v; want ErrNotOwned", err)
	}
	if _, err := w.m.Get("o1"); !errors.Is(err, ErrNotOwned) {
		t.Errorf("Get of another owner's pair: %v; want ErrNotOwned", err)
	}
	if _, err := w.m.Get("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of a missing pair: %v; want ErrNotFound", err)
	}
	if l, err := w.m.List(); err != nil || len(l) != 0 {
		t.Errorf("List = %+v, %v; want nothing", l, err)
	}

	// A namespace someone else created is used but never deleted.
	blue := freshNetns(t)
	if _, err := w.m.Ensure(ctx, Spec{Port: "v4", Netns: blue}); !errors.Is(err, ErrNetnsNotFound) {
		t.Errorf("Ensure into a missing namespace without create: %v; want ErrNetnsNotFound", err)
	}
	run(t, "ip", "netns", "add", blue)
	if _, err := w.m.Ensure(ctx, Spec{Port: "v4", Netns: blue, CreateNetns: true}); err != nil {
		t.Fatal(err)
	}
	if err := w.m.Delete(ctx, "v4", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(DefaultNetnsDir, blue)); err != nil {
		t.Errorf("a namespace this owner did not create was removed: %v", err)
	}
}

func TestListAfterRestartAndSharedNetns(t *testing.T) {
	w := newWorld(t, "test")
	ctx := t.Context()
	green := freshNetns(t)
	for _, s := range []Spec{
		{Port: "a1", Netns: green, CreateNetns: true, Address: netip.MustParsePrefix("10.1.0.1/24")},
		{Port: "a2", Netns: green, CreateNetns: true, MTU: 1300},
		{Port: "a3"},
	} {
		if _, err := w.m.Ensure(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	// A new Manager (a restarted plugin) finds everything from the marks alone.
	list, err := newManager(t, w.host, "test").List()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range list {
		got = append(got, st.Spec.Port+"/"+st.Spec.Peer+"/"+st.Spec.Netns+"/"+st.Spec.Address.String())
		if !st.HostUp || !st.PeerUp || st.PeerIndex == 0 {
			t.Errorf("%s: %+v; want both ends up", st.Spec.Port, st)
		}
	}
	want := "a1/a1-p/" + green + "/10.1.0.1/24 a2/a2-p/" + green + "/invalid Prefix a3/a3-p//invalid Prefix"
	if strings.Join(got, " ") != want {
		t.Errorf("List = %v\nwant %v", got, want)
	}
	// The namespace stays until its last pair is gone.
	if err := w.m.Delete(ctx, "a1", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(DefaultNetnsDir, green)); err != nil {
		t.Fatalf("namespace removed while a2 still lives there: %v", err)
	}
	if err := w.m.Delete(ctx, "a2", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(DefaultNetnsDir, green)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("namespace still there after its last pair: %v", err)
	}
}

func TestCountersMove(t *testing.T) {
	w := newWorld(t, "test")
	ns := freshNetns(t)
	if _, err := w.m.Ensure(t.Context(), Spec{Port: "c1", Netns: ns, CreateNetns: true, Address: netip.MustParsePrefix("10.2.0.1/24")}); err != nil {
		t.Fatal(err)
	}
	// Pinging a neighbour that does not exist sends ARP requests out of the peer end.
	_ = exec.Command("ip", "netns", "exec", ns, "ping", "-c", "2", "-i", "0.2", "-W", "1", "10.2.0.2").Run()
	st, err := w.m.Get("c1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Peer.TxPackets == 0 || st.Host.RxPackets == 0 {
		t.Errorf("counters after traffic: host %+v peer %+v; want peer tx and host rx", st.Host, st.Peer)
	}
}

// offload returns the state ("on", "off") of a feature as `ethtool -k` shows it.
func offload(t *testing.T, ns, dev, feature string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "ip", "netns", "exec", ns, "ethtool", "-k", dev).Output()
	if err != nil {
		t.Fatalf("ethtool -k %s in %s: %v", dev, ns, err)
	}
	for line := range strings.Lines(string(out)) {
		if v, ok := strings.CutPrefix(line, feature+": "); ok {
			return strings.Fields(v)[0]
		}
	}
	t.Fatalf("ethtool -k %s: no %s in\n%s", dev, feature, out)
	return ""
}

// TestSweepCollectsInterruptedCreations: what a killed Ensure leaves — a marked namespace
// holding only lo or an unmarked pair, or the empty placeholder file of a creation interrupted
// before the mount — is removed by the next Manager's Sweep; a marked namespace holding a
// marked link, another owner's namespace and a placeholder younger than the Manager are kept.
func TestSweepCollectsInterruptedCreations(t *testing.T) {
	w := newWorld(t, "sweeper")
	empty, busy, half, foreign, old := freshNetns(t), freshNetns(t), freshNetns(t), freshNetns(t), freshNetns(t)
	for _, ns := range []string{empty, busy, half} {
		h, err := createNetns(DefaultNetnsDir, ns, "sweeper")
		if err != nil {
			t.Fatal(err)
		}
		if ns != empty {
			v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "d0"}, PeerName: "d1"}
			if err := h.nl.LinkAdd(v); err != nil {
				t.Fatal(err)
			}
			for _, end := range []string{"d0", "d1"} {
				if l, err := h.nl.LinkByName(end); err != nil || ns != busy {
					continue
				} else if err := h.nl.LinkSetAlias(l, "someone's"); err != nil {
					t.Fatal(err)
				}
			}
		}
		h.close()
	}
	h, err := createNetns(DefaultNetnsDir, foreign, "someone-else")
	if err != nil {
		t.Fatal(err)
	}
	h.close()
	if err := os.WriteFile(filepath.Join(DefaultNetnsDir, old), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Minute)
	if err := os.Chtimes(filepath.Join(DefaultNetnsDir, old), past, past); err != nil {
		t.Fatal(err)
	}
	young := freshNetns(t)
	m := newManager(t, w.host, "sweeper")
	if err := os.WriteFile(filepath.Join(DefaultNetnsDir, young), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.Sweep(); err != nil {
		t.Fatal(err)
	}
	for ns, want := range map[string]bool{empty: false, half: false, old: false, busy: true, foreign: true, young: true} {
		_, err := os.Stat(filepath.Join(DefaultNetnsDir, ns))
		if got := err == nil; got != want {
			t.Errorf("%s present %v after Sweep, want %v", ns, got, want)
		}
	}
	_ = os.Remove(filepath.Join(DefaultNetnsDir, young))
}
