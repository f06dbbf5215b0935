package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
)

// kindGlobal is the kind of the pass's intents on Open_vSwitch.other_config.
const kindGlobal model.Kind = "other_config"

// item is one object's intent in a pass: the ensure or deletion of a bridge or a port (with its
// interfaces), or the owned other_config keys.
type item struct {
	kind   model.Kind
	name   string
	bridge string   // bridge of a port
	ifaces []string // interfaces the intent creates or changes (ensures only)
	del    bool
	add    func(*ovsdb.Txn)
	// unit, when not empty, names the unit the object belongs to (UnitKey): the items of one
	// unit are committed or left out together.
	unit string
}

// UnitKey is the external_ids key that makes rows one unit: the desired bridges and ports
// (and the owned rows being pruned) whose UnitKey has the same value are written, or left out
// of a pass, together, never some of them; and the port named like the value carries the
// unit's status (see Reconciler.Status). ovsplaned tags a plugin object's rows with it.
const UnitKey = ovsdb.TagPrefix + "object"

func (it item) key() string { return string(it.kind) + "/" + it.name }

// refusal is an item left out of a pass and why.
type refusal struct {
	it  item
	err error
}

// commitIsolated commits every item in one transaction. When OVSDB or the planner refuses one
// object — a name held by a foreign row, a bridge that does not exist, a spec the database
// rejects — that object's intent is left out and the transaction is planned again without
// it, so one conflicting object never blocks the repair of the others. Errors that no single
// object explains (connection, timeout, concurrent writers beyond the retries) fail the pass.
// It returns the commit's result and error (nil, or an *ovsdb.ApplyError) and the refusals.
func (r *Reconciler) commitIsolated(ctx context.Context, gen int64, items []item) (*ovsdb.Result, []refusal, error) {
	out := make([]bool, len(items)) // left out
	var refused []refusal
	for {
		txn := r.c.NewTxn(gen)
		for i, it := range items {
			if !out[i] {
				it.add(txn)
			}
		}
		res, err := txn.Commit(ctx, r.opts.Commit)
		var applyErr *ovsdb.ApplyError
		if err == nil || errors.As(err, &applyErr) {
			return res, refused, err
		}
		i := culprit(items, out, err)
		if i < 0 {
			return nil, refused, err
		}
		for j, it := range items {
			if j == i || !out[j] && it.unit != "" && it.unit == items[i].unit {
				out[j] = true
				refused = append(refused, refusal{it: it, err: err})
			}
		}
	}
}

// culprit returns the index of the item, not yet left out, that err names, or -1 when err is
// not a refusal of one object.
func culprit(items []item, out []bool, err error) int {
	var oe *ovsdb.OpError
	if !errors.As(err, &oe) || !objectError(err) {
		return -1
	}
	// match returns the first item, not yet left out, that pred accepts.
	match := func(pred func(item) bool) int {
		for i, it := range items {
			if !out[i] && pred(it) {
				return i
			}
		}
		return -1
	}
	i := -1
	switch oe.Table {
	case "Bridge":
		if i = match(func(it item) bool { return it.kind == model.KindBridge && it.name == oe.Row }); i < 0 {
			// The bridge is out (or not ours): its ports are refused in its name.
			i = match(func(it item) bool { return it.kind == model.KindPort && !it.del && it.bridge == oe.Row })
		}
	case "Port":
		i = match(func(it item) bool { return it.kind == model.KindPort && it.name == oe.Row })
	case "Interface":
		i = match(func(it item) bool { return it.kind == model.KindPort && slices.Contains(it.ifaces, oe.Row) })
	case "Open_vSwitch":
		i = match(func(it item) bool { return it.kind == kindGlobal })
	}
	if i < 0 {
		// The error may name a row no intent lists (an interface someone else added to an
		// owned port): the object its details name, if any.
		i = match(func(it item) bool { return strings.Contains(oe.Details, string(it.kind)+" "+strconv.Quote(it.name)) })
	}
	return i
}

// objectError reports errors that belong to one object: retrying the pass without it can
// succeed.
func objectError(err error) bool {
	for _, k := range []error{ovsdb.ErrNotOwned, ovsdb.ErrNotFound, ovsdb.ErrInvalid,
		ovsdb.ErrConstraintViolation, ovsdb.ErrReferentialIntegrity} {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

// refusedStatus turns the refusals into the status errors of the objects concerned (by status
// key: the object and its interfaces; a refused deletion the object alone) and one error for
// the pass naming each refused object (nil when none was).
func refusedStatus(refused []refusal) (map[string]string, error) {
	if len(refused) == 0 {
		return nil, nil
	}
	objErr := map[string]string{}
	errs := make([]error, 0, len(refused))
	for _, rf := range refused {
		what := "ensuring"
		if rf.it.del {
			what = "deleting"
		}
		e := fmt.Errorf("%s %s %q refused, nothing written for it (everything else was applied): %w", what, rf.it.kind, rf.it.name, rf.err)
		errs = append(errs, e)
		if rf.it.kind == kindGlobal {
			continue // no status of its own
		}
		objErr[rf.it.key()] = e.Error()
		if rf.it.del {
			continue // no longer desired: its status says why it stays (refresh)
		}
		for _, in := range rf.it.ifaces {
			objErr[string(model.KindInterface)+"/"+in] = e.Error()
		}
	}
	return objErr, errors.Join(errs...)
}
