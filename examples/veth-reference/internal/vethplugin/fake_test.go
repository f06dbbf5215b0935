package vethplugin

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/ovsplane/ovsplane/examples/veth-reference/internal/veth"
)

// fakeLinks is a kernel in memory with the rules of veth.Manager that the plugin relies on:
// pairs keyed by port, foreign interfaces that may not be touched, namespaces that must exist
// unless creation is allowed, counters a test can bump.
type fakeLinks struct {
	mu      sync.Mutex
	pairs   map[string]veth.State
	foreign map[string]bool // names of interfaces someone else created
	netns   map[string]bool // existing namespaces; true when the plugin created it
	creates int             // pairs created
	fail    error           // returned by every call when set
}

func newFakeLinks() *fakeLinks {
	return &fakeLinks{pairs: map[string]veth.State{}, foreign: map[string]bool{}, netns: map[string]bool{}}
}

func (f *fakeLinks) Ensure(ctx context.Context, spec veth.Spec) (veth.State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return veth.State{}, f.fail
	}
	spec = spec.WithDefaults()
	if err := spec.Validate(); err != nil {
		return veth.State{}, fmt.Errorf("veth %s: %w", spec.Port, err)
	}
	if f.foreign[spec.Port] || f.foreign[spec.Peer] {
		return veth.State{}, fmt.Errorf("veth %s: %w", spec.Port, veth.ErrConflict)
	}
	if spec.Netns != "" {
		if _, ok := f.netns[spec.Netns]; !ok {
			if !spec.CreateNetns {
				return veth.State{}, fmt.Errorf("netns %s: %w", spec.Netns, veth.ErrNetnsNotFound)
			}
			f.netns[spec.Netns] = true
		}
	}
	old, ok := f.pairs[spec.Port]
	st := veth.State{Spec: spec, HostIndex: old.HostIndex, PeerIndex: old.PeerIndex, HostUp: true, PeerUp: true,
		Host: old.Host, Peer: old.Peer}
	if !ok || old.Spec.Peer != spec.Peer || old.Spec.Netns != spec.Netns {
		f.creates++
		st.HostIndex, st.PeerIndex = 100+2*f.creates, 101+2*f.creates
		st.Host, st.Peer = veth.Counters{}, veth.Counters{}
	}
	st.Spec.CreateNetns = spec.Netns != "" && f.netns[spec.Netns]
	if spec.MTU == 0 {
		st.Spec.MTU = 1500
	}
	if spec.Address.IsValid() {
		st.Addresses = []netip.Prefix{spec.Address}
	}
	f.pairs[spec.Port] = st
	return st, ctx.Err()
}

func (f *fakeLinks) Delete(_ context.Context, port, netnsHint string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	if f.foreign[port] {
		return fmt.Errorf("veth %s: %w", port, veth.ErrNotOwned)
	}
	ns := netnsHint
	if st, ok := f.pairs[port]; ok {
		ns = st.Spec.Netns
		delete(f.pairs, port)
	}
	if ns != "" && f.netns[ns] && !slices.ContainsFunc(slices.Collect(maps.Values(f.pairs)),
		func(st veth.State) bool { return st.Spec.Netns == ns }) {
		delete(f.netns, ns)
	}
	return nil
}

func (f *fakeLinks) Get(port string) (veth.State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.foreign[port] {
		return veth.State{}, fmt.Errorf("veth %s: %w", port, veth.ErrNotOwned)
	}
	st, ok := f.pairs[port]
	if !ok {
		return veth.State{}, fmt.Errorf("veth %s: %w", port, veth.ErrNotFound)
	}
	return st, nil
}

func (f *fakeLinks) List() ([]veth.State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	out := slices.Collect(maps.Values(f.pairs))
	slices.SortFunc(out, func(a, b veth.State) int { return strings.Compare(a.Spec.Port, b.Spec.Port) })
	return out, nil
}

// traffic adds packets to a pair's counters: n received by the host end (sent by the peer).
func (f *fakeLinks) traffic(port string, n uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.pairs[port]
	st.Host.RxPackets += n
	st.Host.RxBytes += 100 * n
	st.Peer.TxPackets += n
	st.Peer.TxBytes += 100 * n
	f.pairs[port] = st
}
