package ovsdb

import (
	"maps"
	"slices"

	libovsdb "github.com/ovn-kubernetes/libovsdb/ovsdb"
)

// Raw OVSDB operation builders. The typed operations compose these into one transaction.

func whereUUID(uuid string) []libovsdb.Condition {
	return []libovsdb.Condition{{Column: "_uuid", Function: libovsdb.ConditionEqual, Value: libovsdb.UUID{GoUUID: uuid}}}
}

// ownedWhere matches the row uuid only while it still carries owner's tag.
func ownedWhere(uuid, owner string) []libovsdb.Condition {
	return append(whereUUID(uuid), libovsdb.Condition{
		Column: "external_ids", Function: libovsdb.ConditionIncludes,
		Value: mustMap(map[string]string{OwnerKey: owner}),
	})
}

func mustMap(m map[string]string) libovsdb.OvsMap {
	gm := make(map[any]any, len(m))
	for k, v := range m {
		gm[k] = v
	}
	return libovsdb.OvsMap{GoMap: gm}
}

// atomSet encodes a set of strings or integers, sorted: sets have no order, and a canonical one
// lets servers that compare "wait" rows element by element (libovsdb's in-memory server) agree
// with ovsdb-server.
func atomSet[T string | int](vals []T) libovsdb.OvsSet {
	sorted := slices.Clone(vals)
	slices.Sort(sorted)
	s := make([]any, len(sorted))
	for i, v := range sorted {
		s[i] = v
	}
	return libovsdb.OvsSet{GoSet: s}
}

func stringSet(vals []string) libovsdb.OvsSet { return atomSet(vals) }

func intSet(vals []int) libovsdb.OvsSet { return atomSet(vals) }

// uuidSet encodes a set of row references, sorted (see atomSet).
func uuidSet(uuids []string) libovsdb.OvsSet {
	sorted := slices.Clone(uuids)
	slices.Sort(sorted)
	s := make([]any, len(sorted))
	for i, u := range sorted {
		s[i] = libovsdb.UUID{GoUUID: u}
	}
	return libovsdb.OvsSet{GoSet: s}
}

// optString encodes an optional string column: "" is the empty set.
func optString(v string) libovsdb.OvsSet {
	if v == "" {
		return libovsdb.OvsSet{GoSet: []any{}}
	}
	return libovsdb.OvsSet{GoSet: []any{v}}
}

func optInt(v *int) libovsdb.OvsSet {
	if v == nil {
		return libovsdb.OvsSet{GoSet: []any{}}
	}
	return libovsdb.OvsSet{GoSet: []any{*v}}
}

// waitOp asserts that the rows matching where, projected on the row's columns, equal rows now.
// With timeout 0 it fails the whole transaction at once if they differ, so a decision made from
// a stale cache causes a retry instead of a lost update.
func waitOp(table string, where []libovsdb.Condition, row libovsdb.Row) libovsdb.Operation {
	zero := 0
	cols := slices.Sorted(maps.Keys(row))
	return libovsdb.Operation{Op: libovsdb.OperationWait, Table: table, Where: where, Columns: cols,
		Until: string(libovsdb.WaitConditionEqual), Rows: []libovsdb.Row{row}, Timeout: &zero}
}

func deleteOp(table, uuid string) libovsdb.Operation {
	return libovsdb.Operation{Op: libovsdb.OperationDelete, Table: table, Where: whereUUID(uuid)}
}

func updateOp(table string, where []libovsdb.Condition, row libovsdb.Row) libovsdb.Operation {
	return libovsdb.Operation{Op: libovsdb.OperationUpdate, Table: table, Where: where, Row: row}
}

func mutateOp(table string, where []libovsdb.Condition, muts []libovsdb.Mutation) libovsdb.Operation {
	return libovsdb.Operation{Op: libovsdb.OperationMutate, Table: table, Where: where, Mutations: muts}
}

// setMutations returns the mutations that turn set column col from have into want: one delete of
// the elements to drop and one insert of those to add, never a rewrite of the whole set.
func setMutations[T comparable](col string, have, want []T, enc func([]T) libovsdb.OvsSet) []libovsdb.Mutation {
	var del, add []T
	for _, v := range have {
		if !slices.Contains(want, v) {
			del = append(del, v)
		}
	}
	for _, v := range want {
		if !slices.Contains(have, v) && !slices.Contains(add, v) {
			add = append(add, v)
		}
	}
	return deleteInsert(col, del, add, enc)
}

// deleteInsert inserts add then deletes del in set column col (either may be empty). Insert
// comes first because ovsdb-server checks a set's size bounds after every single mutation:
// replacing the only interface of a port (Port.interfaces has min 1) by delete-then-insert
// fails with "Attempted to store 0 elements". The sets changed here have no maximum.
func deleteInsert[T any](col string, del, add []T, enc func([]T) libovsdb.OvsSet) []libovsdb.Mutation {
	var muts []libovsdb.Mutation
	if len(add) > 0 {
		muts = append(muts, libovsdb.Mutation{Column: col, Mutator: libovsdb.MutateOperationInsert, Value: enc(add)})
	}
	if len(del) > 0 {
		muts = append(muts, libovsdb.Mutation{Column: col, Mutator: libovsdb.MutateOperationDelete, Value: enc(del)})
	}
	return muts
}

// mapMutations returns the mutations that turn map column col from have into want: delete the
// keys that are gone or whose value changes, then insert the new pairs (OVSDB's map insert never
// overwrites an existing key, hence the delete first).
func mapMutations(col string, have, want map[string]string) []libovsdb.Mutation {
	var del []string
	add := map[string]string{}
	for k, v := range have {
		if w, ok := want[k]; !ok || w != v {
			del = append(del, k)
		}
	}
	for k, v := range want {
		if h, ok := have[k]; !ok || h != v {
			add[k] = v
		}
	}
	var muts []libovsdb.Mutation
	if len(del) > 0 {
		slices.Sort(del)
		muts = append(muts, libovsdb.Mutation{Column: col, Mutator: libovsdb.MutateOperationDelete, Value: stringSet(del)})
	}
	if len(add) > 0 {
		muts = append(muts, libovsdb.Mutation{Column: col, Mutator: libovsdb.MutateOperationInsert, Value: mustMap(add)})
	}
	return muts
}

// guardColumns returns base plus, for every column that row or muts write, the value that was
// read for it: the wait built from it fails if any of those columns changed after the read.
func guardColumns(base libovsdb.Row, read map[string]any, row libovsdb.Row, muts []libovsdb.Mutation) libovsdb.Row {
	for col := range row {
		if v, ok := read[col]; ok {
			base[col] = v
		}
	}
	for _, m := range muts {
		if v, ok := read[m.Column]; ok {
			base[m.Column] = v
		}
	}
	return base
}

// mergeMutations sets every pair of want in map column col (delete then insert for a changed
// value) and leaves other keys alone. Used for external_ids, where other daemons legitimately add
// keys to our rows (ovn-controller's ovn-installed, os-vif's iface-id).
//
// A difference in GenerationKey alone changes nothing: the generation records which
// transaction last wrote the row, so a row with nothing else to change keeps its own (a
// restarted daemon, whose generation is new, must not rewrite every row it owns).
func mergeMutations(col string, have, want map[string]string) []libovsdb.Mutation {
	sub := make(map[string]string, len(want))
	onlyGen := true
	for k, w := range want {
		v, ok := have[k]
		if ok {
			sub[k] = v
		}
		if k != GenerationKey && (!ok || v != w) {
			onlyGen = false
		}
	}
	if onlyGen {
		return nil
	}
	return mapMutations(col, sub, want)
}

// withGeneration adds the rewrite of GenerationKey to muts when the row is being written anyway
// (changed, or muts not empty) and its generation differs from want's: mergeMutations leaves
// the generation alone when it is the only difference.
func withGeneration(muts []libovsdb.Mutation, changed bool, have, want map[string]string) []libovsdb.Mutation {
	if !changed && len(muts) == 0 {
		return muts
	}
	g, ok := want[GenerationKey]
	if !ok || have[GenerationKey] == g {
		return muts
	}
	for _, m := range muts {
		if m.Column == "external_ids" {
			return muts // mergeMutations already rewrites every wanted key that differs
		}
	}
	sub := map[string]string{}
	if v, ok := have[GenerationKey]; ok {
		sub[GenerationKey] = v
	}
	return append(muts, mapMutations("external_ids", sub, map[string]string{GenerationKey: g})...)
}
