package veth

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
)

// Get returns the state of port's pair; ErrNotFound when the owner has none, ErrNotOwned when
// an unmarked interface has the name.
func (m *Manager) Get(port string) (State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	host, err := m.host.LinkByName(port)
	if isNotFound(err) {
		return State{}, fmt.Errorf("veth %s: %w", port, ErrNotFound)
	}
	if err != nil {
		return State{}, fmt.Errorf("veth %s: look up: %w", port, err)
	}
	spec, owned := m.ownedHost(host)
	if !owned {
		return State{}, fmt.Errorf("veth %s: %w", port, ErrNotOwned)
	}
	return m.stateOf(spec)
}

// List returns the state of every pair of this owner, sorted by port name, rebuilt from the
// marks on the host namespace's interfaces.
func (m *Manager) List() ([]State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	links, err := linkList(m.host)
	if err != nil {
		return nil, fmt.Errorf("veth: list links: %w", err)
	}
	var out []State
	for _, l := range links {
		spec, owned := m.ownedHost(l)
		if !owned {
			continue
		}
		st, err := m.stateOf(spec)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b State) int { return strings.Compare(a.Spec.Port, b.Spec.Port) })
	return out, nil
}

// stateOf opens spec's namespace and reads the pair's state.
func (m *Manager) stateOf(spec Spec) (State, error) {
	peerNL := m.host
	if spec.Netns != "" {
		h, err := openNetns(m.netnsDir, spec.Netns)
		if err != nil {
			// The namespace is gone: the peer with it. Report the host end alone.
			st, serr := m.state(spec, nil)
			if serr != nil {
				return State{}, fmt.Errorf("veth %s: %w", spec.Port, serr)
			}
			return st, nil
		}
		defer h.close()
		peerNL = h.nl
		owned, err := netnsOwned(h.nl, m.owner)
		if err != nil {
			return State{}, fmt.Errorf("veth %s: netns %s: %w", spec.Port, spec.Netns, err)
		}
		spec.CreateNetns = owned
	}
	st, err := m.state(spec, peerNL)
	if err != nil {
		return State{}, fmt.Errorf("veth %s: %w", spec.Port, err)
	}
	return st, nil
}

// state reads both ends; peerNL nil means the peer is unreachable.
func (m *Manager) state(spec Spec, peerNL *netlink.Handle) (State, error) {
	host, err := m.host.LinkByName(spec.Port)
	if err != nil {
		return State{}, fmt.Errorf("look up %s: %w", spec.Port, err)
	}
	st := State{Spec: spec, HostIndex: host.Attrs().Index, HostUp: host.Attrs().Flags&1 != 0, Host: counters(host)}
	st.Spec.MTU = host.Attrs().MTU
	st.Spec.Address = netip.Prefix{}
	if peerNL == nil {
		return st, nil
	}
	peer, err := peerNL.LinkByName(spec.Peer)
	if isNotFound(err) {
		return st, nil
	}
	if err != nil {
		return State{}, fmt.Errorf("look up peer %s: %w", spec.Peer, err)
	}
	st.PeerIndex, st.PeerUp, st.Peer = peer.Attrs().Index, peer.Attrs().Flags&1 != 0, counters(peer)
	addrs, err := peerNL.AddrList(peer, netlink.FAMILY_ALL)
	if err != nil {
		return State{}, fmt.Errorf("peer %s: list addresses: %w", spec.Peer, err)
	}
	for _, a := range addrs {
		if p, ok := toPrefix(a); ok && !(p.Addr().Is6() && p.Addr().IsLinkLocalUnicast()) {
			st.Addresses = append(st.Addresses, p)
		}
	}
	if len(st.Addresses) > 0 {
		st.Spec.Address = st.Addresses[0]
	}
	return st, nil
}

// Sweep removes the namespaces this owner created that hold nothing but lo: what an Ensure
// interrupted between creating the namespace and the pair leaves behind (the plugin was
// killed), and the empty placeholder files of namespace creations interrupted before this
// Manager was made (see stalePlaceholder). A pair's namespace always holds its peer, so no live pair's namespace is touched;
// Ensure and Delete of this Manager wait while Sweep runs. Each removal is logged.
func (m *Manager) Sweep() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	entries, err := os.ReadDir(m.netnsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("veth: sweep %s: %w", m.netnsDir, err)
	}
	var errs []error
	m.log.Debug("sweeping", "netns_dir", m.netnsDir, "entries", len(entries))
	for _, e := range entries {
		// A placeholder older than this Manager was left by an interrupted creation: no
		// namespace was ever mounted on it. Younger ones may be another creation under way.
		if isPlaceholder, _ := placeholder(m.netnsDir, e.Name()); isPlaceholder && !stalePlaceholder(m.netnsDir, e.Name(), m.started) {
			continue // a creation under way, perhaps not ours
		}
		if stalePlaceholder(m.netnsDir, e.Name(), m.started) {
			if err := os.Remove(filepath.Join(m.netnsDir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("netns %s: remove the placeholder of an interrupted creation: %w", e.Name(), err))
				continue
			}
			m.log.Info("removed the placeholder of an interrupted namespace creation", "netns", e.Name())
			continue
		}
		if err := m.dropHalfPairs(e.Name()); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := m.collectNetns(e.Name()); err != nil && !errors.Is(err, ErrNetnsNotFound) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// dropHalfPairs deletes, in a namespace this owner created, the veth ends without a mark: a
// pair is created unmarked and marked right after (the kernel takes no alias at creation), so
// an unmarked veth in such a namespace is a creation interrupted in between. Deleting one end
// deletes the pair. m.mu must be held; other namespaces are left alone.
func (m *Manager) dropHalfPairs(name string) error {
	h, err := openNetns(m.netnsDir, name)
	if err != nil {
		return nil // not a namespace, or gone: nothing of ours
	}
	defer h.close()
	if owned, err := netnsOwned(h.nl, m.owner); err != nil || !owned {
		return nil
	}
	links, err := linkList(h.nl)
	if err != nil {
		return fmt.Errorf("netns %s: %w", name, err)
	}
	for _, l := range links {
		if _, isVeth := l.(*netlink.Veth); !isVeth || l.Attrs().Alias != "" {
			continue
		}
		if err := h.nl.LinkDel(l); isNotFound(err) {
			continue // the other end of a pair deleted just before
		} else if err != nil {
			return fmt.Errorf("netns %s: delete the half-made pair of %s: %w", name, l.Attrs().Name, err)
		}
		m.log.Info("deleted a veth pair whose creation was interrupted", "netns", name, "peer", l.Attrs().Name)
	}
	return nil
}
