package vsctldiff

import (
	"fmt"
	"math/rand"
	"strings"
)

// The pools RandomSession draws names and values from: small, so that lines collide (a port added
// twice, a bridge deleted under its ports) and errors are as frequent as successes.
var (
	rsBridges = []string{"br0", "br1", "br2"}
	rsPorts   = []string{"p0", "p1", "p2", "p3", "p4", "p5"}
	rsVlans   = []string{"0", "1", "10", "4095", "4096", "-1", "x"}
	rsTags    = []string{"0", "10", "20", "4095", "4096", "[]", "abc", "[1,2]"}
	rsTrunks  = []string{"1,2,3", "[10, 20]", "1-5", "5-1", "[]", "4096", "x"}
	rsKeys    = []string{"a", "b", "k-1", `"sp ace"`}
	rsValues  = []string{"1", "v", `"a b"`, `""`, "x=y", "{}", `"q\"t"`}
	rsModes   = []string{"secure", "standalone", "open"}
	rsBondMod = []string{"active-backup", "balance-slb", "balance-tcp", "bogus"}
	// dpdk: a type ovs-vswitchd on the dummy datapath cannot open (its "Error detected"
	// warning). Not a made-up type: vsctl refuses those when no ovsplaned is found.
	rsIfTypes = []string{"internal", "patch", "dpdk", "dummy"}
	rsFormats = []string{"-f table", "-f csv", "-f json", "-f html", "-f list", "--bare", "-d json", "-d bare", "--no-headings -f table", "--pretty -f json", "--oneline"}
	rsOps     = []string{"=", "!=", "<", ">", "<=", ">=", "{=}", "{!=}", "{<}", "{>}", "{<=}", "{>=}", "{in}", "{not-in}"}
	rsTables  = []string{"Bridge", "bridge", "Port", "port", "Interface", "interf", "i", "br", "Nope"}
)

// RandomSession builds a session of n command lines from a small grammar of ovs-vsctl commands
// over a fixed pool of names (bridges br0..br2, ports p0..p5, a few VLANs, keys and values),
// mixing valid and invalid lines. It is a function of r's state only: the same seed gives the same
// session. Every line it writes is deterministic under ovs-vsctl: multi-row list/find results are
// limited to one row by name, show is not used, wait-until only waits for what holds, and no
// line makes the server reject a transaction (ovs-vsctl logs those with a timestamp).
func RandomSession(r *rand.Rand, n int) Session {
	g := &gen{r: r}
	s := Session{Name: "random"}
	for len(s.Lines) < n {
		words, err := SplitWords(g.line())
		if err != nil {
			panic(fmt.Sprintf("RandomSession built an unsplittable line: %v", err))
		}
		s.Lines = append(s.Lines, words)
	}
	return s
}

type gen struct{ r *rand.Rand }

func (g *gen) pick(xs []string) string { return xs[g.r.Intn(len(xs))] }
func (g *gen) chance(p float64) bool   { return g.r.Float64() < p }
func (g *gen) br() string              { return g.pick(rsBridges) }
func (g *gen) port() string            { return g.pick(rsPorts) }

// brOrPort is mostly a bridge but sometimes a port or a fake bridge name: wrong-kind arguments.
func (g *gen) brOrPort() string {
	switch g.r.Intn(10) {
	case 0:
		return g.port()
	case 1:
		return "vl" + g.pick([]string{"10", "20"})
	}
	return g.br()
}

// kv is a map entry argument KEY=VALUE, quoted for SplitWords.
func (g *gen) kv() string { return "'" + g.pick(rsKeys) + "=" + g.pick(rsValues) + "'" }

// colSet returns a column assignment for a Port or Interface (whichever table names).
func (g *gen) colSet(table string) string {
	if table == "Interface" {
		switch g.r.Intn(5) {
		case 0:
			return "type=" + g.pick(rsIfTypes)
		case 1:
			return "mtu_request=" + g.pick([]string{"1500", "9000", "0", "abc", "[]"})
		case 2:
			return "'options:" + g.pick(rsKeys) + "=" + g.pick(rsValues) + "'"
		case 3:
			return "ofport_request=" + g.pick([]string{"1", "7", "65280", "0"})
		default:
			return "'external_ids:" + g.pick(rsKeys) + "=" + g.pick(rsValues) + "'"
		}
	}
	switch g.r.Intn(6) {
	case 0:
		return "tag=" + g.pick(rsTags)
	case 1:
		return "'trunks=" + g.pick(rsTrunks) + "'"
	case 2:
		return "vlan_mode=" + g.pick([]string{"access", "trunk", "native-untagged", "wrong"})
	case 3:
		return "'other_config:" + g.pick(rsKeys) + "=" + g.pick(rsValues) + "'"
	case 4:
		return "bond_mode=" + g.pick(rsBondMod)
	default:
		return "nosuchcolumn=1"
	}
}

func (g *gen) maybe(p float64, opt string) string {
	if g.chance(p) {
		return opt + " "
	}
	return ""
}

// line returns one command line, possibly several commands joined by --.
func (g *gen) line() string {
	cmd := g.command()
	for g.chance(0.15) {
		cmd += " -- " + g.command()
	}
	return cmd
}

func (g *gen) command() string {
	switch g.r.Intn(40) {
	case 0, 1, 2:
		return g.maybe(0.2, "--may-exist") + "add-br " + g.br()
	case 3:
		return g.maybe(0.2, "--may-exist") + "add-br vl" + g.pick([]string{"10", "20"}) + " " + g.brOrPort() + " " + g.pick(rsVlans)
	case 4:
		return g.maybe(0.3, "--if-exists") + "del-br " + g.brOrPort()
	case 5:
		return g.pick([]string{"", "--real ", "--fake "}) + "list-br"
	case 6:
		return "br-exists " + g.brOrPort()
	case 7:
		return g.pick([]string{"br-to-vlan ", "br-to-parent "}) + g.brOrPort()
	case 8:
		return "br-set-external-id " + g.brOrPort() + " " + g.pick(rsKeys) + g.pick([]string{"", " " + g.pick(rsValues)})
	case 9:
		return "br-get-external-id " + g.brOrPort() + g.pick([]string{"", " " + g.pick(rsKeys)})
	case 10, 11, 12, 13:
		line := g.maybe(0.2, "--may-exist") + "add-port " + g.brOrPort() + " " + g.port()
		if g.chance(0.3) {
			line += " " + g.colSet("Port")
		}
		return line
	case 14, 15:
		return g.maybe(0.2, "--if-exists") + g.maybe(0.2, "--with-iface") + "del-port " + g.pick([]string{"", g.brOrPort() + " "}) + g.port()
	case 16:
		return g.pick([]string{"list-ports ", "list-ifaces "}) + g.brOrPort()
	case 17:
		return g.pick([]string{"port-to-br ", "iface-to-br "}) + g.pick(append(rsPorts, "br0", "e0"))
	case 18:
		return g.maybe(0.2, "--may-exist") + g.maybe(0.2, "--fake-iface") + "add-bond " + g.brOrPort() + " " + g.port() + " e" + g.port()[1:] + " f" + g.port()[1:] + g.pick([]string{"", " bond_mode=" + g.pick(rsBondMod)})
	case 19:
		return g.maybe(0.2, "--may-exist") + "add-bond-iface " + g.port() + " g" + g.port()[1:]
	case 20:
		return g.maybe(0.2, "--if-exists") + "del-bond-iface " + g.pick([]string{"", g.port() + " "}) + g.pick([]string{"e", "f", "g", "p"}) + g.port()[1:]
	case 21:
		return g.pick([]string{"set-fail-mode " + g.brOrPort() + " " + g.pick(rsModes), "get-fail-mode " + g.brOrPort(), "del-fail-mode " + g.brOrPort()})
	case 22:
		return g.pick([]string{
			g.maybe(0.3, "--inactivity-probe=5000") + "set-controller " + g.brOrPort() + " tcp:127.0.0.1:1",
			"get-controller " + g.brOrPort(),
			"del-controller " + g.brOrPort(),
		})
	case 23:
		return g.pick([]string{"set-manager punix:/nonexistent/m" + g.port()[1:] + ".sock", "get-manager", "del-manager", "get-ssl", "del-ssl", g.maybe(0.5, "--bootstrap") + "set-ssl /k /c /ca"})
	case 24:
		return g.pick([]string{"add-aa-mapping ", "del-aa-mapping "}) + g.brOrPort() + " " + g.pick([]string{"1", "100", "x"}) + " " + g.pick([]string{"10", "20", "y"})
	case 25:
		return "get-aa-mapping " + g.brOrPort()
	case 26, 27:
		table := g.pick([]string{"Port", "Interface"})
		return g.maybe(0.2, "--if-exists") + "set " + table + " " + g.port() + " " + g.colSet(table)
	case 28, 29:
		table, col := g.pick([]string{"Port", "Interface", "Bridge", "Nope"}), g.pick([]string{"name", "tag", "trunks", "type", "options", "external_ids", "other_config", "nosuch"})
		rec := g.port()
		if table == "Bridge" {
			rec = g.br()
		}
		if g.chance(0.3) {
			col += ":" + g.pick(rsKeys)
		}
		return g.maybe(0.2, "--if-exists") + "get " + table + " " + rec + " " + col
	case 30:
		return g.pick([]string{"add Port " + g.port() + " trunks " + g.pick(rsTrunks), "add Interface " + g.port() + " options " + g.kv(),
			"remove Port " + g.port() + " trunks " + g.pick(rsTrunks), "remove Interface " + g.port() + " options " + g.pick(rsKeys)})
	case 31:
		return g.maybe(0.2, "--if-exists") + "clear " + g.pick([]string{"Port", "Interface"}) + " " + g.port() + " " + g.pick([]string{"tag", "trunks", "options", "external_ids", "name"})
	case 32, 33:
		// find selects on the name too, so that at most one row matches.
		table := g.pick([]string{"Port", "Interface"})
		cond := g.pick([]string{"tag", "trunks", "other_config:a"})
		if table == "Interface" {
			cond = g.pick([]string{"type", "mtu_request", "options:a"})
		}
		val := g.pick(append(append([]string{}, rsTags[:4]...), "[]", "internal", "1", "v"))
		return g.pick(rsFormats) + " --columns=name," + strings.SplitN(cond, ":", 2)[0] + " find " + table + " name=" + g.port() + " '" + cond + g.pick(rsOps) + val + "'"
	case 34:
		return g.pick(rsFormats) + " --columns=" + g.pick([]string{"name", "name,tag", "tag,trunks,other_config", "nosuch"}) + " list " + g.pick([]string{"Port", "Port", "Bridge"}) + " " + g.pick(append(rsPorts, rsBridges...))
	case 35:
		return "get " + g.pick(rsTables) + " " + g.pick(append(rsPorts, rsBridges...)) + " name"
	case 36:
		return "-- --id=@q create QoS type=" + g.pick([]string{"linux-htb", "linux-hfsc"}) + " -- set Port " + g.port() + " qos=@q"
	case 37:
		return g.pick([]string{"--columns=type list QoS " + g.port(), "--if-exists get QoS " + g.port() + " type", "clear Port " + g.port() + " qos"})
	case 38:
		// Only waits that hold once the first command succeeds: a false one would block forever.
		br, port := g.br(), g.port()
		return g.pick([]string{"--may-exist add-br " + br + " -- wait-until Bridge " + br,
			"--may-exist add-port " + br + " " + port + " -- wait-until Port " + port + " name=" + port})
	default:
		return g.pick([]string{"comment x", "no-such-command", "list-br extra", "--bogus list-br", "init", "emer-reset", "--columns=name list-br", ""})
	}
}
