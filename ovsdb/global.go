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
	v := root.ExternalIDs[globalKeysPrefix+owner]
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// setGlobal plans setting the given Open_vSwitch.other_config keys. Keys set here become owned:
// their names are recorded in Open_vSwitch.external_ids so that they can be listed and removed
// later without touching keys set by others.
func (p *planner) setGlobal(kv map[string]string) error {
	root, err := p.rootRow()
	if err != nil {
		return err
	}
	owned := ownedGlobalKeys(root, p.owner)
	have := map[string]string{}
	for k := range kv {
		if v, ok := root.OtherConfig[k]; ok {
			have[k] = v
		}
	}
	muts := mapMutations("other_config", have, kv)
	newOwned := slices.Clone(owned)
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		if !slices.Contains(newOwned, k) {
			newOwned = append(newOwned, k)
		}
	}
	muts = append(muts, p.ownedKeysMutations(root, owned, newOwned)...)
	if len(muts) == 0 {
		return nil
	}
	p.addRootMutations(root, muts)
	return nil
}

// unsetGlobal plans the removal of owned other_config keys. A key that is absent is ignored; a
// key present but set by someone else is an ErrNotOwned error.
func (p *planner) unsetGlobal(keys []string) error {
	root, err := p.rootRow()
	if err != nil {
		return err
	}
	owned := ownedGlobalKeys(root, p.owner)
	var del []string
	for _, k := range keys {
		if _, present := root.OtherConfig[k]; !present {
			continue
		}
		if !slices.Contains(owned, k) {
			return &OpError{Kind: ErrNotOwned, Table: vswitch.OpenvSwitchTable, Row: ".", Column: "other_config",
				Details: fmt.Sprintf("key %q was not set by %q; remove it by hand (ovs-vsctl remove Open_vSwitch . other_config %s)", k, p.owner, k)}
		}
		del = append(del, k)
	}
	newOwned := slices.DeleteFunc(slices.Clone(owned), func(k string) bool { return slices.Contains(keys, k) })
	var muts []libovsdb.Mutation
	if len(del) > 0 {
		muts = append(muts, libovsdb.Mutation{Column: "other_config", Mutator: libovsdb.MutateOperationDelete, Value: stringSet(del)})
	}
	muts = append(muts, p.ownedKeysMutations(root, owned, newOwned)...)
	if len(muts) > 0 {
		p.addRootMutations(root, muts)
	}
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

func (p *planner) addRootMutations(root *vswitch.OpenvSwitch, muts []libovsdb.Mutation) {
	ref := objRef{table: vswitch.OpenvSwitchTable, name: "."}
	// The list of owned keys was read: make sure nobody changed it meanwhile.
	key := globalKeysPrefix + p.owner
	p.guardRootKey(ref, root, key)
	p.add(ref, mutateOp(ref.table, whereUUID(root.UUID), muts))
}

// guardRootKey asserts that Open_vSwitch.external_ids is still what was read (the owned-key
// list lives there; the column rarely changes, so a retry is cheap and rare).
func (p *planner) guardRootKey(ref objRef, root *vswitch.OpenvSwitch, _ string) {
	p.guard(ref, root.UUID, false, libovsdb.Row{"external_ids": mustMap(root.ExternalIDs)})
}
