package veth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Config configures a Manager.
type Config struct {
	// Owner names the owner in every mark (no white space); required. Two Managers with
	// different owners never touch each other's pairs.
	Owner string
	// HostNetns is the path of the namespace host ends are created in (the one ovs-vswitchd
	// runs in); empty means the namespace of the thread calling New.
	HostNetns string
	// NetnsDir holds the named namespaces of Spec.Netns; DefaultNetnsDir when empty.
	NetnsDir string
	// Logger receives one line per change made; slog.Default() when nil.
	Logger *slog.Logger
}

// Manager creates, inspects and deletes one owner's veth pairs. Its methods are safe for
// concurrent use; they are serialised, since a pair's operations read, then change, the kernel.
type Manager struct {
	owner    string
	netnsDir string
	log      *slog.Logger

	started time.Time // when New made the Manager (see Sweep)

	mu     sync.Mutex
	host   *netlink.Handle
	hostNS netns.NsHandle // for ioctls (ethtool) in the host namespace
}

// New returns a Manager with its own netlink handle in the host namespace. Close releases it.
func New(cfg Config) (*Manager, error) {
	if cfg.Owner == "" || strings.ContainsAny(cfg.Owner, " \t\n") {
		return nil, fmt.Errorf("veth: owner %q must be non-empty without white space", cfg.Owner)
	}
	m := &Manager{owner: cfg.Owner, netnsDir: cfg.NetnsDir, log: cfg.Logger, started: time.Now()}
	if m.netnsDir == "" {
		m.netnsDir = DefaultNetnsDir
	}
	if m.log == nil {
		m.log = slog.Default()
	}
	var err error
	if cfg.HostNetns == "" {
		m.hostNS, err = netns.Get()
	} else {
		m.hostNS, err = netns.GetFromPath(cfg.HostNetns)
	}
	if err == nil {
		m.host, err = netlink.NewHandleAt(m.hostNS)
		if err != nil {
			_ = m.hostNS.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("veth: netlink handle for host namespace %q: %w", cfg.HostNetns, err)
	}
	return m, nil
}

// Close releases the netlink handle. The pairs stay.
func (m *Manager) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.host.Close()
	_ = m.hostNS.Close()
}

// Owner returns the owner named in the Manager's marks.
func (m *Manager) Owner() string { return m.owner }

// Counters are an interface's kernel counters.
type Counters struct {
	RxPackets, TxPackets, RxBytes, TxBytes, RxDropped, TxDropped uint64
}

// State is what the kernel says about one of the owner's pairs.
type State struct {
	// Spec holds the names (Port, Peer, Netns), the peer's first global address and the MTU
	// as found; CreateNetns is true when the namespace carries the owner's mark.
	Spec Spec
	// Addresses are all the peer end's addresses but IPv6 link-local ones.
	Addresses []netip.Prefix
	// HostIndex and PeerIndex are the ends' interface indexes (each in its own namespace);
	// PeerIndex is zero when the peer was not found.
	HostIndex, PeerIndex int
	// HostUp and PeerUp report the ends' administrative state (IFF_UP).
	HostUp, PeerUp bool
	// Host and Peer are the ends' counters.
	Host, Peer Counters
}

// Ensure makes the pair of spec exist as described and returns its state; idempotent. A new
// pair is created with its marks, the peer directly in its namespace (created first when
// spec.CreateNetns allows); an existing pair of this owner is converged (MTU, address, links
// up) or, when its peer's name or namespace changed, deleted and created again. It refuses,
// with ErrConflict, names taken by interfaces this owner did not create.
func (m *Manager) Ensure(ctx context.Context, spec Spec) (State, error) {
	spec = spec.WithDefaults()
	if err := spec.Validate(); err != nil {
		return State{}, fmt.Errorf("veth %s: %w", spec.Port, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	peerNS, err := m.peerNamespace(spec)
	if err != nil {
		return State{}, fmt.Errorf("veth %s: %w", spec.Port, err)
	}
	defer peerNS.close()
	peerNL := m.host
	if peerNS != nil {
		peerNL = peerNS.nl
	}
	if err := m.ensurePair(ctx, spec, peerNS, peerNL); err != nil {
		return State{}, fmt.Errorf("veth %s: %w", spec.Port, err)
	}
	if err := m.configurePeer(ctx, spec, peerNS, peerNL); err != nil {
		return State{}, fmt.Errorf("veth %s: %w", spec.Port, err)
	}
	st, err := m.state(spec, peerNL)
	if err != nil {
		return State{}, fmt.Errorf("veth %s: %w", spec.Port, err)
	}
	if peerNS != nil {
		if st.Spec.CreateNetns, err = netnsOwned(peerNS.nl, m.owner); err != nil {
			return State{}, fmt.Errorf("veth %s: netns %s: %w", spec.Port, spec.Netns, err)
		}
	}
	return st, nil
}

// peerNamespace opens (or creates) the spec's namespace; nil for the host namespace.
func (m *Manager) peerNamespace(spec Spec) (*nsHandle, error) {
	if spec.Netns == "" {
		return nil, nil
	}
	h, err := openNetns(m.netnsDir, spec.Netns)
	if !errors.Is(err, ErrNetnsNotFound) || !spec.CreateNetns {
		return h, err
	}
	h, err = createNetns(m.netnsDir, spec.Netns, m.owner)
	if err != nil {
		return nil, err
	}
	m.log.Info("created network namespace", "netns", spec.Netns, "owner", m.owner)
	return h, nil
}

// ensurePair leaves a pair of this owner with spec's names in place: the existing one when it
// matches, otherwise a new one.
func (m *Manager) ensurePair(ctx context.Context, spec Spec, peerNS *nsHandle, peerNL *netlink.Handle) error {
	host, err := m.host.LinkByName(spec.Port)
	switch {
	case isNotFound(err):
	case err != nil:
		return fmt.Errorf("look up %s: %w", spec.Port, err)
	default:
		got, owned := m.ownedHost(host)
		if !owned {
			return fmt.Errorf("interface %s exists (%s) without this plugin's mark: %w", spec.Port, host.Type(), ErrConflict)
		}
		if got.Peer == spec.Peer && got.Netns == spec.Netns {
			if _, err := peerNL.LinkByName(spec.Peer); err == nil {
				return m.relabel(host, got, spec)
			}
		}
		m.log.Info("recreating veth pair", "port", spec.Port, "old_peer", got.Peer, "old_netns", got.Netns,
			"peer", spec.Peer, "netns", spec.Netns)
		if err := m.host.LinkDel(host); err != nil && !isNotFound(err) {
			return fmt.Errorf("delete %s: %w", spec.Port, err)
		}
		if got.Netns != "" && got.Netns != spec.Netns {
			if err := m.collectNetns(got.Netns); err != nil {
				return err
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if l, err := peerNL.LinkByName(spec.Peer); err == nil {
		return fmt.Errorf("peer name %s is taken by a %s interface in %s: %w", spec.Peer, l.Type(), nsName(spec.Netns), ErrConflict)
	}
	return m.createPair(spec, peerNS, peerNL)
}

// relabel rewrites the host end's mark when only its bridge label changed.
func (m *Manager) relabel(host netlink.Link, got, spec Spec) error {
	if got.Bridge == spec.Bridge {
		return nil
	}
	if err := m.host.LinkSetAlias(host, hostMark(m.owner, spec)); err != nil {
		return fmt.Errorf("mark %s: %w", spec.Port, err)
	}
	return nil
}

// createPair adds the veth pair, the peer directly in its namespace, and marks both ends.
func (m *Manager) createPair(spec Spec, peerNS *nsHandle, peerNL *netlink.Handle) error {
	v := &netlink.Veth{
		LinkAttrs: netlink.LinkAttrs{Name: spec.Port, MTU: spec.MTU},
		PeerName:  spec.Peer,
		PeerMTU:   uint32(spec.MTU),
	}
	if peerNS != nil {
		v.PeerNamespace = netlink.NsFd(peerNS.fd)
	}
	if err := m.host.LinkAdd(v); err != nil {
		return fmt.Errorf("create veth %s peer %s in %s: %w", spec.Port, spec.Peer, nsName(spec.Netns), err)
	}
	// The host end is marked first: it is the one Delete and List look at.
	host, err := m.host.LinkByName(spec.Port)
	if err == nil {
		err = m.host.LinkSetAlias(host, hostMark(m.owner, spec))
	}
	if err != nil {
		_ = m.host.LinkDel(v)
		return fmt.Errorf("mark %s: %w", spec.Port, err)
	}
	peer, err := peerNL.LinkByName(spec.Peer)
	if err == nil {
		err = peerNL.LinkSetAlias(peer, peerMark(m.owner, spec))
	}
	if err != nil {
		return fmt.Errorf("mark peer %s: %w", spec.Peer, err)
	}
	m.log.Info("created veth pair", "port", spec.Port, "peer", spec.Peer, "netns", spec.Netns)
	return nil
}

// configurePeer converges MTU and offloads (both ends), the peer's address and brings both
// ends up.
func (m *Manager) configurePeer(ctx context.Context, spec Spec, peerNS *nsHandle, peerNL *netlink.Handle) error {
	host, err := m.host.LinkByName(spec.Port)
	if err != nil {
		return fmt.Errorf("look up %s: %w", spec.Port, err)
	}
	peer, err := peerNL.LinkByName(spec.Peer)
	if err != nil {
		return fmt.Errorf("look up peer %s in %s: %w", spec.Peer, nsName(spec.Netns), err)
	}
	if spec.MTU != 0 {
		for _, e := range []struct {
			nl *netlink.Handle
			l  netlink.Link
		}{{m.host, host}, {peerNL, peer}} {
			if e.l.Attrs().MTU != spec.MTU {
				if err := e.nl.LinkSetMTU(e.l, spec.MTU); err != nil {
					return fmt.Errorf("%s: set mtu %d: %w", e.l.Attrs().Name, spec.MTU, err)
				}
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if !spec.KeepOffloads {
		peerFD := m.hostNS
		if peerNS != nil {
			peerFD = peerNS.fd
		}
		if err := disableOffloads(m.hostNS, spec.Port); err != nil {
			return err
		}
		if err := disableOffloads(peerFD, spec.Peer); err != nil {
			return fmt.Errorf("peer %w", err)
		}
	}
	if err := m.convergeAddress(spec, peerNL, peer); err != nil {
		return err
	}
	if err := peerNL.LinkSetUp(peer); err != nil {
		return fmt.Errorf("peer %s: set up: %w", spec.Peer, err)
	}
	if err := m.host.LinkSetUp(host); err != nil {
		return fmt.Errorf("%s: set up: %w", spec.Port, err)
	}
	return nil
}

// convergeAddress leaves exactly spec.Address (or none) among the peer's addresses, IPv6
// link-local addresses aside. The peer is this owner's, so other addresses are stale ones.
func (m *Manager) convergeAddress(spec Spec, nl *netlink.Handle, peer netlink.Link) error {
	addrs, err := nl.AddrList(peer, netlink.FAMILY_ALL)
	if err != nil {
		return fmt.Errorf("peer %s: list addresses: %w", spec.Peer, err)
	}
	have := false
	for _, a := range addrs {
		p, ok := toPrefix(a)
		if !ok || p.Addr().IsLinkLocalUnicast() && p.Addr().Is6() {
			continue
		}
		if p == spec.Address {
			have = true
			continue
		}
		if err := nl.AddrDel(peer, &a); err != nil {
			return fmt.Errorf("peer %s: delete address %s: %w", spec.Peer, p, err)
		}
		m.log.Info("removed stale address", "port", spec.Port, "peer", spec.Peer, "address", p)
	}
	if have || !spec.Address.IsValid() {
		return nil
	}
	a := &netlink.Addr{IPNet: prefixToIPNet(spec.Address)}
	if spec.Address.Addr().Is6() {
		a.Flags = 0x02 // IFA_F_NODAD: usable at once
	}
	if err := nl.AddrReplace(peer, a); err != nil {
		return fmt.Errorf("peer %s: add address %s: %w", spec.Peer, spec.Address, err)
	}
	return nil
}

// Delete removes the owner's pair of port (both ends) and then the peer's namespace when this
// owner created it and nothing but lo is left inside; idempotent: a missing pair is no error.
// It refuses, with ErrNotOwned, an interface named port that lacks this owner's mark. netnsHint
// names the namespace to clean up when the pair is already gone (empty: none).
func (m *Manager) Delete(ctx context.Context, port, netnsHint string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	host, err := m.host.LinkByName(port)
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("veth %s: look up: %w", port, err)
	}
	ns := netnsHint
	if err == nil {
		got, owned := m.ownedHost(host)
		if !owned {
			return fmt.Errorf("veth %s: interface %s (%s, alias %q): %w", port, port, host.Type(), host.Attrs().Alias, ErrNotOwned)
		}
		if err := m.host.LinkDel(host); err != nil && !isNotFound(err) {
			return fmt.Errorf("veth %s: delete: %w", port, err)
		}
		m.log.Info("deleted veth pair", "port", port, "peer", got.Peer, "netns", got.Netns)
		ns = got.Netns
	}
	if ns == "" || ctx.Err() != nil {
		return ctx.Err()
	}
	if err := m.collectNetns(ns); err != nil {
		return fmt.Errorf("veth %s: %w", port, err)
	}
	return nil
}

// collectNetns removes the named namespace when it carries this owner's mark and holds nothing
// but lo.
func (m *Manager) collectNetns(name string) error {
	h, err := openNetns(m.netnsDir, name)
	if errors.Is(err, ErrNetnsNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	defer h.close()
	owned, err := netnsOwned(h.nl, m.owner)
	if err != nil || !owned {
		return err
	}
	links, err := linkList(h.nl)
	if err != nil {
		return fmt.Errorf("netns %s: %w", name, err)
	}
	for _, l := range links {
		if l.Attrs().Name != "lo" {
			m.log.Debug("keeping network namespace", "netns", name, "holds", l.Attrs().Name)
			return nil
		}
	}
	if err := removeNetns(m.netnsDir, name); err != nil {
		return err
	}
	m.log.Info("deleted network namespace", "netns", name, "owner", m.owner)
	return nil
}

// ownedHost parses l's alias and reports whether l is the host end of one of this owner's
// pairs, with the names from the mark.
func (m *Manager) ownedHost(l netlink.Link) (Spec, bool) {
	if _, ok := l.(*netlink.Veth); !ok {
		return Spec{}, false
	}
	mk, ok := parseMark(l.Attrs().Alias)
	if !ok || mk.owner != m.owner {
		return Spec{}, false
	}
	spec, ok := mk.hostSpec()
	if !ok || spec.Port != l.Attrs().Name {
		return Spec{}, false
	}
	return spec, true
}
