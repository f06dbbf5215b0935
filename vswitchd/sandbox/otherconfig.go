package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// recordKey is the Open_vSwitch external_ids key in which the sandbox lists, comma-separated,
// the other_config keys it wrote itself (its defaults), so that a later start can hand them
// over to the caller's desired state.
const recordKey = "sandbox-other-config"

// rootConfig is what the sandbox reads of the Open_vSwitch row.
type rootConfig struct {
	otherConfig map[string]string
	written     []string // the record: keys the sandbox wrote
}

// readRoot reads Open_vSwitch other_config and the sandbox's record in external_ids.
func (s *Sandbox) readRoot(ctx context.Context) (rootConfig, error) {
	out, err := s.vsctl(ctx, "--columns=other_config,external_ids", "--format=json", "list", "Open_vSwitch")
	if err != nil {
		return rootConfig{}, err
	}
	return parseRoot([]byte(out))
}

// parseRoot decodes `ovs-vsctl --columns=other_config,external_ids --format=json list
// Open_vSwitch`: {"data":[[["map",[["k","v"],…]],["map",[…]]]],"headings":[…]}.
func parseRoot(out []byte) (rootConfig, error) {
	var table struct {
		Data [][][]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(out, &table); err != nil {
		return rootConfig{}, fmt.Errorf("Open_vSwitch row: %w", err)
	}
	if len(table.Data) != 1 || len(table.Data[0]) != 2 {
		return rootConfig{}, fmt.Errorf("Open_vSwitch row: want one row of two columns, got %s", out)
	}
	var maps [2]map[string]string
	for i, cell := range table.Data[0] {
		var pairs [][2]string
		if len(cell) != 2 || json.Unmarshal(cell[1], &pairs) != nil {
			return rootConfig{}, fmt.Errorf("Open_vSwitch row: column %d is not a map of strings: %s", i, out)
		}
		maps[i] = make(map[string]string, len(pairs))
		for _, kv := range pairs {
			maps[i][kv[0]] = kv[1]
		}
	}
	rc := rootConfig{otherConfig: maps[0]}
	for _, k := range strings.Split(maps[1][recordKey], ",") {
		if k != "" {
			rc.written = append(rc.written, k)
		}
	}
	return rc, nil
}

// defaults returns the other_config keys the sandbox wants present: pmd-maxsleep, and with
// DPDK dpdk-init, dpdk-socket-mem and dpdk-extra.
func (s *Sandbox) defaults() map[string]string {
	d := map[string]string{"pmd-maxsleep": strconv.Itoa(DefaultPMDMaxSleepUS)}
	if s.dpdk {
		d["dpdk-init"] = "true"
		d["dpdk-socket-mem"] = strconv.Itoa(s.opts.SocketMemMB)
		d["dpdk-extra"] = s.opts.DPDKExtra
	}
	return d
}

// otherConfigPlan is the change of other_config Start makes before ovs-vswitchd starts.
type otherConfigPlan struct {
	set    map[string]string
	remove []string // sorted
	record []string // the new record, sorted
}

// planOtherConfig decides the change: a default is written only when the key is absent and not
// in the caller's desired state; a key the sandbox wrote earlier is removed once the desired
// state has it (the caller writes its own value); the record lists the sandbox's keys still
// present.
func planOtherConfig(rc rootConfig, desired, defaults map[string]string) otherConfigPlan {
	p := otherConfigPlan{set: map[string]string{}}
	record := map[string]bool{}
	for _, k := range rc.written {
		_, present := rc.otherConfig[k]
		_, theirs := desired[k]
		switch {
		case !present:
		case theirs:
			p.remove = append(p.remove, k)
		default:
			record[k] = true
		}
	}
	for k, v := range defaults {
		if _, theirs := desired[k]; theirs {
			continue
		}
		if _, present := rc.otherConfig[k]; present {
			continue
		}
		p.set[k] = v
		record[k] = true
	}
	slices.Sort(p.remove)
	p.record = slices.Sorted(maps.Keys(record))
	return p
}

// result returns other_config as it is after the plan is applied to rc.
func (p otherConfigPlan) result(rc rootConfig) map[string]string {
	m := maps.Clone(rc.otherConfig)
	for _, k := range p.remove {
		delete(m, k)
	}
	maps.Copy(m, p.set)
	return m
}

// changes reports whether applying the plan changes the row whose record is written.
func (p otherConfigPlan) changes(written []string) bool {
	return len(p.set) > 0 || len(p.remove) > 0 || !slices.Equal(p.record, slices.Sorted(slices.Values(written)))
}

// apply writes the plan in one transaction, without waiting for ovs-vswitchd.
func (s *Sandbox) apply(ctx context.Context, p otherConfigPlan) error {
	args := []string{"--no-wait", "set", "Open_vSwitch", "."}
	for _, k := range slices.Sorted(maps.Keys(p.set)) {
		args = append(args, "other_config:"+strconv.Quote(k)+"="+strconv.Quote(p.set[k]))
	}
	if len(p.record) > 0 {
		args = append(args, "external_ids:"+recordKey+"="+strconv.Quote(strings.Join(p.record, ",")))
	} else {
		args = append(args, "--", "remove", "Open_vSwitch", ".", "external_ids", recordKey)
	}
	if len(p.remove) > 0 {
		args = append(append(args, "--", "remove", "Open_vSwitch", ".", "other_config"), p.remove...)
	}
	if args[4] == "--" { // nothing to set: drop the empty set command
		args = append([]string{"--no-wait"}, args[5:]...)
	}
	if _, err := s.vsctl(ctx, args...); err != nil {
		return fmt.Errorf("other_config: %w", err)
	}
	if len(p.remove) > 0 {
		s.log.Info("sandbox: handed other_config keys over to the desired state", "keys", strings.Join(p.remove, ","))
	}
	return nil
}
