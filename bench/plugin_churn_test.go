//go:build linux

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"testing"
	"time"

	"connectrpc.com/connect"

	ovsplanev1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/bench/internal/noopplugin/noop"
	"github.com/ovsplane/ovsplane/vswitchd"
)

// Plugin overhead in the port churn (issue 5): the churn of BenchmarkChurn (N ports from C
// clients through the ovsplaned API, each confirmed with its ofport, then deleted) with every
// port of type noop, the trivial plugin's type (bench/internal/noopplugin), against the same
// ports as plain internal ports. The daemon then validates and attaches each port through the
// plugin (two calls over the host's mTLS gRPC connection) before its batched write, and
// detaches it after its delete; the plugin answers with a plain internal port, so OVSDB and
// ovs-vswitchd get the same rows as in the plain arm (plus the ovsplane-plugin tag and the
// plugin's state in the stored spec). The difference between the arms is the plugin's cost,
// including what the calls do to the daemon's batching (the mean batch size is in the table).

// churnPluginRoundsEnv sets how many times BenchmarkChurnPlugin runs the pair of arms.
const churnPluginRoundsEnv = "OVSPLANE_CHURN_PLUGIN_ROUNDS"

// Sizes of TestChurnPluginShort.
const churnPluginShortPorts, churnPluginShortClients = 200, 20

// churnNoopArmName names the ovsplaned arm with the noop plugin's port type, churnNoopArm.
const churnNoopArmName = "ovsplaned-noop"

// churnNoopArm is the ovsplaned arm with the noop plugin's port type.
var churnNoopArm = churnArm{churnNoopArmName, churnOvsplanedNoop}

// churnOvsplanedNoop is churnOvsplaned with the noop plugin installed in the daemon's plugin dir
// (pinned by SHA-256 in its config) and every port of type noop. After the create phase it
// checks, untimed, that every port's row carries the plugin's tag.
func churnOvsplanedNoop(tb testing.TB, e *churnEnv, phase churnPhase) churnTiming {
	tb.Helper()
	t := churnOvsplanedNoopNoCheck(tb, e, phase)
	if phase == churnCreate {
		if err := checkPluginTags(e.raw, e.names, noop.Name); err != nil {
			tb.Fatalf("%s after create: %v", churnNoopArmName, err)
		}
	}
	return t
}

// churnOvsplanedNoopNoCheck is churnOvsplanedNoop without the check of the tags: the daemon
// with the noop plugin, ports of e.ifaceTypeOf's types.
func churnOvsplanedNoopNoCheck(tb testing.TB, e *churnEnv, phase churnPhase) churnTiming {
	tb.Helper()
	if e.daemon == nil {
		startChurnDaemon(tb, e, func(d *benchDaemon) {
			pluginDir, sum := installNoopPlugin(tb, d.dir)
			conf := daemonBridgeConfig + fmt.Sprintf("plugin_dir: %s\nplugins:\n  - name: %s\n    path: %s\n    sha256: %s\n",
				pluginDir, noop.Name, noopPluginFile, sum)
			if err := os.WriteFile(d.conf, []byte(conf), 0o644); err != nil {
				tb.Fatal(err)
			}
		}, func(ctx context.Context, d *benchDaemon) { requirePluginRunning(ctx, tb, d, noop.Name) })
		e.portType = noop.PortType
	}
	return churnOvsplaned(tb, e, phase)
}

// requirePluginRunning fails tb unless the daemon lists plugin as running.
func requirePluginRunning(ctx context.Context, tb testing.TB, d *benchDaemon, plugin string) {
	tb.Helper()
	resp, err := d.API.ListPlugins(ctx, connect.NewRequest(&ovsplanev1.ListPluginsRequest{}))
	if err != nil {
		tb.Fatal(err)
	}
	for _, p := range resp.Msg.GetPlugins() {
		if p.GetName() == plugin {
			if p.GetState() != ovsplanev1.PluginState_PLUGIN_STATE_RUNNING {
				tb.Fatalf("plugin %s: %v", plugin, p)
			}
			return
		}
	}
	tb.Fatalf("plugin %s not listed by ovsplaned: %v", plugin, resp.Msg.GetPlugins())
}

// checkPluginTags checks that every port of names has external_ids:ovsplane-plugin=plugin.
func checkPluginTags(raw rawOVSDB, names []string, plugin string) error {
	res, err := raw.transact(map[string]any{"op": "select", "table": "Port", "where": []any{},
		"columns": []string{"name", "external_ids"}})
	if err != nil {
		return err
	}
	tags := map[string]string{}
	for _, row := range res[0].Rows {
		var name string
		var ids []json.RawMessage // ["map", [[k, v], …]]
		var pairs [][2]string
		if err := json.Unmarshal(row["name"], &name); err != nil {
			return fmt.Errorf("port name %s: %w", row["name"], err)
		}
		if err := json.Unmarshal(row["external_ids"], &ids); err != nil || len(ids) != 2 {
			return fmt.Errorf("port %s: external_ids %s: %v", name, row["external_ids"], err)
		}
		if err := json.Unmarshal(ids[1], &pairs); err != nil {
			return fmt.Errorf("port %s: external_ids %s: %w", name, row["external_ids"], err)
		}
		for _, kv := range pairs {
			if kv[0] == vswitchd.PluginKey {
				tags[name] = kv[1]
			}
		}
	}
	for _, name := range names {
		if got := tags[name]; got != plugin {
			return fmt.Errorf("port %s: external_ids:%s = %q, want %q", name, vswitchd.PluginKey, got, plugin)
		}
	}
	return nil
}

// BenchmarkChurnPlugin runs the plain ovsplaned churn arm and the noop plugin's arm, each on a
// fresh switch, at OVSPLANE_CHURN_PORTS ports and OVSPLANE_CHURN_CLIENTS clients, in
// OVSPLANE_CHURN_PLUGIN_ROUNDS rounds (default 2; the order alternates from round to round so
// a drift of the machine's load favours neither), reports each arm's metrics (the plugin arm's
// x-ovsplaned: its create + delete time over the plain arm's of the same round, when that ran
// first) and prints a markdown table with every round's ratios, then the ratio of the summed
// times and the per-round minimum, median and maximum.
//
//	go test -run '^$' -bench BenchmarkChurnPlugin -benchtime 1x -timeout 60m ./bench/
func BenchmarkChurnPlugin(b *testing.B) {
	size := churnSizeFromEnv(b)
	rounds := make([]map[string]*churnResult, envInt(b, churnPluginRoundsEnv, 2))
	for r := range rounds {
		arms := []churnArm{churnArms[1], churnNoopArm} // ovsplaned, ovsplaned-noop
		if r%2 == 1 {
			arms[0], arms[1] = arms[1], arms[0]
		}
		results := map[string]*churnResult{}
		rounds[r] = results
		b.Run(fmt.Sprintf("round%d", r+1), func(b *testing.B) {
			for _, arm := range arms {
				b.Run(arm.name, func(b *testing.B) {
					for range b.N {
						res := runChurnArm(b, arm, size)
						results[arm.name] = res
						reportChurn(b, res, results)
					}
				})
			}
		})
	}
	printChurnPluginTable(os.Stdout, size, rounds)
}

// TestChurnPluginShort runs the noop plugin's churn arm at churnPluginShortPorts ports from
// churnPluginShortClients clients and checks that every port was created with an ofport and no
// error, carries the plugin's tag, and was deleted; timing is not judged.
func TestChurnPluginShort(t *testing.T) {
	r := runChurnArm(t, churnNoopArm, churnSize{ports: churnPluginShortPorts, clients: churnPluginShortClients,
		phaseTimeout: churnDefaultPhaseTimeout})
	t.Logf("%s: create %.2f s, delete %.2f s, %d+%d transactions, %d+%d reconfigurations", r.arm,
		r.phases[0].wall.Seconds(), r.phases[1].wall.Seconds(), r.phases[0].txns, r.phases[1].txns,
		r.phases[0].reconfigs, r.phases[1].reconfigs)
}

// printChurnPluginTable writes the rounds as the markdown table of docs/benchmarks.md: per
// round both arms, and the plugin arm's ratios to the plain arm per phase and in total.
func printChurnPluginTable(w io.Writer, size churnSize, rounds []map[string]*churnResult) {
	fmt.Fprintf(w, "\nPlugin overhead in the port churn, %d ports, %d clients (times in s, latencies in ms; ×: noop arm ÷ plain arm of the same round)\n\n",
		size.ports, size.clients)
	fmt.Fprintln(w, "| round | arm | create s | create p50 / p99 ms | delete s | delete p50 / p99 ms | txns c+d | reconfigs c+d | mean batch c / d | × create | × delete | × total |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for i, results := range rounds {
		plain := results[churnArms[1].name]
		for _, name := range []string{churnArms[1].name, churnNoopArm.name} {
			r, ok := results[name]
			if !ok {
				fmt.Fprintf(w, "| %d | %s | no result | | | | | | | | | |\n", i+1, name)
				continue
			}
			c, d := r.phases[churnCreate], r.phases[churnDelete]
			ratios := "| | |"
			if name == churnNoopArm.name && plain != nil {
				pc, pd := plain.phases[churnCreate], plain.phases[churnDelete]
				ratios = fmt.Sprintf("%.3f | %.3f | %.3f |", c.wall.Seconds()/pc.wall.Seconds(), d.wall.Seconds()/pd.wall.Seconds(),
					r.total().Seconds()/plain.total().Seconds())
			}
			fmt.Fprintf(w, "| %d | %s | %.2f | %.0f / %.0f | %.2f | %.0f / %.0f | %d+%d | %d+%d | %s / %s | %s\n", i+1, name,
				c.wall.Seconds(), ms(percentile(c.lat, 0.5)), ms(percentile(c.lat, 0.99)),
				d.wall.Seconds(), ms(percentile(d.lat, 0.5)), ms(percentile(d.lat, 0.99)),
				c.txns, d.txns, c.reconfigs, d.reconfigs, meanBatch(r.ports, c.batches), meanBatch(r.ports, d.batches), ratios)
		}
	}
	var ratios []float64
	var plainSum, noopSum time.Duration
	for _, results := range rounds {
		plain, okp := results[churnArms[1].name]
		noop, okn := results[churnNoopArmName]
		if okp && okn {
			ratios = append(ratios, noop.total().Seconds()/plain.total().Seconds())
			plainSum, noopSum = plainSum+plain.total(), noopSum+noop.total()
		}
	}
	if len(ratios) > 0 {
		slices.Sort(ratios)
		fmt.Fprintf(w, "\nOver %d rounds: noop arm ÷ plain arm, create + delete summed over the rounds: %.3f (%.1f s ÷ %.1f s); per round: min %.3f, median %.3f, max %.3f\n",
			len(ratios), noopSum.Seconds()/plainSum.Seconds(), noopSum.Seconds(), plainSum.Seconds(), ratios[0], median(ratios), ratios[len(ratios)-1])
	}
	fmt.Fprintln(w)
}

// median returns the median of sorted values (not empty).
func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// meanBatch is ports per transaction, "–" when the batch sizes are unknown.
func meanBatch(ports int, batches []int) string {
	if len(batches) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", float64(ports)/float64(len(batches)))
}
