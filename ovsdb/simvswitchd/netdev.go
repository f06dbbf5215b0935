package simvswitchd

import (
	"fmt"
	"hash/fnv"
	"net"
	"slices"
	"strings"

	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// DevargsPolicy decides which options:dpdk-devargs values the simulated
// DPDK can attach; any other value fails with "Error attaching device".
type DevargsPolicy struct {
	// Prefixes lists accepted devargs prefixes, typically virtual device
	// driver names such as "net_tap".
	Prefixes []string
	// PCI accepts PCI addresses ("0000:01:00.0" or "01:00.0"), optionally
	// followed by ",key=value" arguments.
	PCI bool
}

// DefaultDevargsPolicy returns the default policy: the net_af_packet,
// net_tap, net_vhost and net_virtio_user virtual devices and PCI addresses.
func DefaultDevargsPolicy() DevargsPolicy {
	return DevargsPolicy{
		Prefixes: []string{"net_af_packet", "net_tap", "net_vhost", "net_virtio_user"},
		PCI:      true,
	}
}

// Accepts reports whether devargs would attach under the policy.
func (p DevargsPolicy) Accepts(devargs string) bool {
	if p.PCI && isPCIAddress(strings.SplitN(devargs, ",", 2)[0]) {
		return true
	}
	for _, prefix := range p.Prefixes {
		if prefix != "" && strings.HasPrefix(devargs, prefix) {
			return true
		}
	}
	return false
}

// isPCIAddress reports whether s is [DDDD:]BB:DD.F with hexadecimal domain,
// bus and device and a function from 0 to 7.
func isPCIAddress(s string) bool {
	fields := strings.Split(s, ":")
	if len(fields) == 3 {
		if !isHex(fields[0], 4) {
			return false
		}
		fields = fields[1:]
	}
	if len(fields) != 2 || !isHex(fields[0], 2) {
		return false
	}
	dev, fn, ok := strings.Cut(fields[1], ".")
	return ok && isHex(dev, 2) && len(fn) == 1 && fn[0] >= '0' && fn[0] <= '7'
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, ch := range s {
		if !(ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'f' || ch >= 'A' && ch <= 'F') {
			return false
		}
	}
	return true
}

// Interface types with special handling.
const (
	typeSystem      = "system"
	typeInternal    = "internal"
	typePatch       = "patch"
	typeDPDK        = "dpdk"
	typeVhost       = "dpdkvhostuser"
	typeVhostClient = "dpdkvhostuserclient"
	defaultMTU      = 1500
)

// isTunnelType reports whether typ is a vport configured by OVS's
// set_tunnel_config, which requires options:remote_ip.
func isTunnelType(typ string) bool {
	switch typ {
	case "bareudp", "erspan", "geneve", "gre", "gtpu", "ip6erspan", "ip6gre", "lisp", "srv6", "stt", "vxlan":
		return true
	}
	return false
}

func isDPDKType(typ string) bool {
	return typ == typeDPDK || typ == typeVhost || typ == typeVhostClient
}

// effectiveType is the type bridge.c opens the interface with: the bridge's
// own interface is always internal, and an empty type means system.
func effectiveType(br *vswitch.Bridge, iface *vswitch.Interface) string {
	switch {
	case iface.Name == br.Name || iface.Type == typeInternal:
		return typeInternal
	case iface.Type == "":
		return typeSystem
	}
	return iface.Type
}

// netdevResult is the outcome of opening and configuring one interface.
type netdevResult struct {
	err    string // Interface.error; empty when the interface works
	linkUp bool
	typ    string
}

// evalContext carries what evaluating one interface needs besides itself.
type evalContext struct {
	snap     *snapshot
	dpdkInit bool
	claims   map[string]string // dpdk-devargs → interface using the device
	byName   map[string]*vswitch.Interface
}

// evaluate reproduces, in order, the checks of bridge.c's iface_do_create:
// netdev_open (type known), netdev_set_config (type options), then adding
// the port to the bridge's datapath. Messages are ovs-vswitchd 3.1's.
func (v *Switch) evaluate(ec *evalContext, br *vswitch.Bridge, iface *vswitch.Interface) netdevResult {
	name, typ := iface.Name, effectiveType(br, iface)
	res := netdevResult{typ: typ, linkUp: true}
	fail := func(format string, args ...any) netdevResult {
		res.err = fmt.Sprintf(format, args...)
		return res
	}
	types := ec.snap.ovs.IfaceTypes
	if len(types) == 0 {
		types = DefaultIfaceTypes() // announced in this very pass (planOpenvSwitch)
	}
	if !slices.Contains(types, typ) || isDPDKType(typ) && v.cfg.RequireDPDKInit && !ec.dpdkInit {
		return fail("could not open network device %s (Address family not supported by protocol)", name)
	}
	switch {
	case typ == typeSystem:
		if v.cfg.SystemDevice != nil && !v.cfg.SystemDevice(name) {
			return fail("could not open network device %s (No such device)", name)
		}
	case typ == typePatch:
		if msg := patchError(name, iface.Options); msg != "" {
			return fail("%s", msg)
		}
		peer := ec.byName[iface.Options["peer"]]
		res.linkUp = peer != nil && peer.Type == typePatch && peer.Options["peer"] == name
	case isTunnelType(typ):
		if msg := tunnelError(name, typ, iface.Options); msg != "" {
			return fail("%s", msg)
		}
	case typ == typeDPDK:
		if msg := v.devargsError(ec, name, iface.Options["dpdk-devargs"]); msg != "" {
			return fail("%s", msg)
		}
	case typ == typeVhost || typ == typeVhostClient:
		res.linkUp = v.cfg.VhostConnected != nil && v.cfg.VhostConnected(name)
	}
	if isDPDKType(typ) && br.DatapathType != "netdev" {
		// dpif-netlink refuses userspace-only port types.
		return fail("could not add network device %s to ofproto (Invalid argument)", name)
	}
	return res
}

// patchError mirrors set_patch_config in lib/netdev-vport.c.
func patchError(name string, options map[string]string) string {
	peer, ok := options["peer"]
	switch {
	case !ok:
		return fmt.Sprintf("%s: patch type requires valid 'peer' argument", name)
	case len(options) > 1:
		return fmt.Sprintf("%s: patch type takes only a 'peer' argument", name)
	case peer == name:
		return fmt.Sprintf("%s: patch peer must not be self", name)
	}
	return ""
}

// tunnelError mirrors the remote_ip checks of set_tunnel_config.
func tunnelError(name, typ string, options map[string]string) string {
	remote, ok := options["remote_ip"]
	switch {
	case !ok:
		return fmt.Sprintf("%s: %s type requires valid 'remote_ip' argument", name, typ)
	case remote != "flow" && net.ParseIP(remote) == nil:
		return fmt.Sprintf("%s: bad %s 'remote_ip'", name, typ)
	}
	return ""
}

// devargsError mirrors netdev_dpdk_set_config: devargs must be present,
// attach, and not be in use by another interface.
func (v *Switch) devargsError(ec *evalContext, name, devargs string) string {
	switch {
	case devargs == "":
		return fmt.Sprintf("'%s' is missing 'options:dpdk-devargs'. The old 'dpdk<port_id>' names are not supported", name)
	case !v.devargs.Accepts(devargs):
		return fmt.Sprintf("Error attaching device '%s' to DPDK", devargs)
	}
	if owner, taken := ec.claims[devargs]; taken && owner != name {
		return fmt.Sprintf("'%s' is trying to use device '%s' which is already in use by '%s'", name, devargs, owner)
	}
	ec.claims[devargs] = name
	return ""
}

// macFor returns the MAC address an interface reports in mac_in_use: the
// configured one for internal interfaces, otherwise a stable locally
// administered address derived from the name.
func macFor(iface *vswitch.Interface, typ string) string {
	if typ == typeInternal && iface.MAC != nil && *iface.MAC != "" {
		return *iface.MAC
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(iface.Name))
	b := h.Sum(nil)
	return fmt.Sprintf("02:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4])
}
