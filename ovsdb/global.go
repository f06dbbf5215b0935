package ovsdb

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	libovsdb "github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// Well-known Open_vSwitch.other_config keys for OVS-DPDK.
const (
	DPDKInit       = "dpdk-init"
	DPDKSocketMem  = "dpdk-socket-mem"
	DPDKSocketLim  = "dpdk-socket-limit"
	DPDKLcoreMask  = "dpdk-lcore-mask"
	DPDKExtra      = "dpdk-extra"
	PMDCPUMask     = "pmd-cpu-mask"
	PMDMaxSleep    = "pmd-maxsleep"
	HWOffload      = "hw-offload"
	VhostSockDir   = "vhost-sock-dir"
	UserspaceTSO   = "userspace-tso-enable"
	VhostIOMMU     = "vhost-iommu-support"
	PerPortMempool = "per-port-memory"
)

// ownedGlobalKeys reads, from Open_vSwitch.external_ids, the other_config keys owner has set.
func ownedGlobalKeys(root *vswitch.OpenvSwitch, owner string) []string {
	return TaggedKeys(root.ExternalIDs, owner)
}

// validGlobalKey rejects keys that cannot be recorded in the owned-key list.
func validGlobalKey(k string) error { return validRecordedKey("Open_vSwitch", k) }

// setGlobal records keys to set in Open_vSwitch.other_config; finishGlobal plans them.
func (p *planner) setGlobal(kv map[string]string) error {
	for k, v := range kv {
		p.globalSet[k] = v
		delete(p.globalUnset, k)
	}
	return nil
}

// unsetGlobal records keys to remove from Open_vSwitch.other_config; finishGlobal plans them.
func (p *planner) unsetGlobal(keys []string) error {
	for _, k := range keys {
		p.globalUnset[k] = true
		delete(p.globalSet, k)
	}
	return nil
}

// finishGlobal plans every other_config change of the transaction as one mutate of the root row,
// plus the update of the owned-key list, guarded by a wait on both columns as read. Keys set here
// become owned. A key that is present but was set by someone else is never overwritten or
// removed: that is an ErrNotOwned error naming the key. Removing an absent key is a no-op.
func (p *planner) finishGlobal() error {
	if len(p.globalSet)+len(p.globalUnset) == 0 {
		return nil
	}
	root, err := p.rootRow()
	if err != nil {
		return err
	}
	owned := ownedGlobalKeys(root, p.owner)
	notMine := func(k string) error {
		return &OpError{Kind: ErrNotOwned, Table: vswitch.OpenvSwitchTable, Row: ".", Column: "other_config",
			Details: fmt.Sprintf("key %q is set (to %q) by someone else; ovsplane will not change it — remove it by hand "+
				"(ovs-vsctl remove Open_vSwitch . other_config %s) or leave it out of the desired state", k, root.OtherConfig[k], k)}
	}
	have, want := map[string]string{}, map[string]string{}
	newOwned := slices.Clone(owned)
	for _, k := range slices.Sorted(maps.Keys(p.globalSet)) {
		v, present := root.OtherConfig[k]
		if present && !slices.Contains(owned, k) {
			return notMine(k)
		}
		if present {
			have[k] = v
		}
		want[k] = p.globalSet[k]
		if !slices.Contains(newOwned, k) {
			newOwned = append(newOwned, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(p.globalUnset)) {
		v, present := root.OtherConfig[k]
		if !present {
			continue
		}
		if !slices.Contains(owned, k) {
			return notMine(k)
		}
		have[k] = v
	}
	newOwned = slices.DeleteFunc(newOwned, func(k string) bool { return p.globalUnset[k] })
	muts := mapMutations("other_config", have, want)
	muts = append(muts, p.ownedKeysMutations(root, owned, newOwned)...)
	if len(muts) == 0 {
		return nil
	}
	ref := objRef{table: vswitch.OpenvSwitchTable, name: "."}
	// Both maps were read to decide: another writer changing either makes the server refuse.
	p.guard(ref, root.UUID, false, libovsdb.Row{"other_config": mustMap(root.OtherConfig),
		"external_ids": mustMap(root.ExternalIDs)})
	p.add(ref, mutateOp(ref.table, whereUUID(root.UUID), muts))
	return nil
}

func (p *planner) ownedKeysMutations(root *vswitch.OpenvSwitch, owned, newOwned []string) []libovsdb.Mutation {
	key := globalKeysPrefix + p.owner
	oldV, newV := strings.Join(owned, ","), strings.Join(newOwned, ",")
	if oldV == newV {
		return nil
	}
	have, want := map[string]string{}, map[string]string{}
	if v, ok := root.ExternalIDs[key]; ok {
		have[key] = v
	}
	if newV != "" {
		want[key] = newV
	}
	return mapMutations("external_ids", have, want)
}
