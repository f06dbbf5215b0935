//go:build linux

package bench

import (
	"crypto/sha1"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"strconv"
	"time"
)

// rawOVSDB sends single OVSDB transactions over a fresh connection to the server's unix socket:
// the vsctl benchmarks' setup, checks and restores. It keeps no connection and no monitor open
// between calls, so it adds no load to ovsdb-server while the tools are timed, and unlike
// ovs-vsctl it does not read the whole database first (populating 20,000 ports takes seconds).
type rawOVSDB struct{ sock string }

// rawTimeout bounds one transaction, and the wait for ovs-vswitchd after one.
const rawTimeout = 2 * time.Minute

// rawResult is one operation's result.
type rawResult struct {
	Rows    []map[string]json.RawMessage `json:"rows"`
	Count   int                          `json:"count"`
	Error   string                       `json:"error"`
	Details string                       `json:"details"`
}

// transact runs ops in one transaction on the Open_vSwitch database and returns their results,
// or an error when the transaction or any operation failed.
func (r rawOVSDB) transact(ops ...any) ([]rawResult, error) {
	conn, err := net.DialTimeout("unix", r.sock, 10*time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(rawTimeout)); err != nil {
		return nil, err
	}
	enc, dec := json.NewEncoder(conn), json.NewDecoder(conn)
	req := map[string]any{"method": "transact", "params": append([]any{"Open_vSwitch"}, ops...), "id": 1}
	if err := enc.Encode(req); err != nil {
		return nil, fmt.Errorf("ovsdb transact: %w", err)
	}
	for {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result []rawResult     `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := dec.Decode(&msg); err != nil {
			return nil, fmt.Errorf("ovsdb transact: %w", err)
		}
		if msg.Method == "echo" {
			if err := enc.Encode(map[string]any{"id": msg.ID, "result": msg.Params, "error": nil}); err != nil {
				return nil, fmt.Errorf("ovsdb transact: %w", err)
			}
			continue
		}
		if string(msg.ID) != "1" {
			continue
		}
		if len(msg.Error) > 0 && string(msg.Error) != "null" {
			return nil, fmt.Errorf("ovsdb transact: %s", msg.Error)
		}
		for i, res := range msg.Result {
			if res.Error != "" {
				return nil, fmt.Errorf("ovsdb transact: operation %d: %s: %s", i, res.Error, res.Details)
			}
		}
		if len(msg.Result) < len(ops) {
			return nil, fmt.Errorf("ovsdb transact: %d results for %d operations", len(msg.Result), len(ops))
		}
		return msg.Result, nil
	}
}

func selectByName(table, name string, columns ...string) map[string]any {
	return map[string]any{"op": "select", "table": table, "where": []any{[]any{"name", "==", name}}, "columns": columns}
}

// bumpOps raise next_cfg and read it back: appended to a transaction, they make ovs-vswitchd
// acknowledge it in cur_cfg, as ovs-vsctl does without --no-wait.
func bumpOps() []any {
	return []any{
		map[string]any{"op": "mutate", "table": "Open_vSwitch", "where": []any{}, "mutations": []any{[]any{"next_cfg", "+=", 1}}},
		map[string]any{"op": "select", "table": "Open_vSwitch", "where": []any{}, "columns": []string{"next_cfg"}},
	}
}

// transactAndWait runs ops; with wait, it also raises next_cfg and waits until ovs-vswitchd has
// applied the transaction.
func (r rawOVSDB) transactAndWait(wait bool, ops ...any) error {
	if wait {
		ops = append(ops, bumpOps()...)
	}
	res, err := r.transact(ops...)
	if err != nil || !wait {
		return err
	}
	next, err := intColumn(res[len(res)-1], "next_cfg")
	if err != nil {
		return err
	}
	deadline := time.Now().Add(rawTimeout)
	for {
		_, cur, err := r.cfg()
		if err != nil {
			return err
		}
		if cur >= next {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ovs-vswitchd did not apply next_cfg %d within %v (cur_cfg %d)", next, rawTimeout, cur)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// portExternalIDs returns the external_ids the benchmark's port name carries, as an
// OpenStack-style agent (Neutron's OVS agent, os-vif, ZStack) writes them on the Interface:
// iface-id (the Neutron port), attached-mac, iface-status and vm-uuid, all derived from the name
// so that a port deleted and added back gets the same ones. The Port row carries iface-id and
// vm-uuid.
func portExternalIDs(name string) map[string]string {
	h := fnv.New128a()
	h.Write([]byte(name))
	var sum [16]byte
	h.Sum(sum[:0])
	id := func(b []byte) string {
		return fmt.Sprintf("%x-%x-4%x-a%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])[:36]
	}
	vm := sha1.Sum([]byte("vm:" + name))
	return map[string]string{
		"iface-id":     id(sum[:]),
		"attached-mac": fmt.Sprintf("fa:16:3e:%02x:%02x:%02x", sum[13], sum[14], sum[15]),
		"iface-status": "active",
		"vm-uuid":      id(vm[:]),
	}
}

// ovsMap encodes m (keys in order) as an OVSDB map.
func ovsMap(m map[string]string, keys ...string) []any {
	pairs := []any{}
	for _, k := range keys {
		pairs = append(pairs, []any{k, m[k]})
	}
	return []any{"map", pairs}
}

// addPorts adds a port with one interface of the same name to br0 for each name, with the
// external_ids of portExternalIDs.
func (r rawOVSDB) addPorts(names []string, wait bool) error {
	var ops, refs []any
	for i, name := range names {
		iface, port := "i"+strconv.Itoa(i), "p"+strconv.Itoa(i)
		ext := portExternalIDs(name)
		ops = append(ops,
			map[string]any{"op": "insert", "table": "Interface", "uuid-name": iface, "row": map[string]any{"name": name,
				"external_ids": ovsMap(ext, "attached-mac", "iface-id", "iface-status", "vm-uuid")}},
			map[string]any{"op": "insert", "table": "Port", "uuid-name": port,
				"row": map[string]any{"name": name, "interfaces": []any{"named-uuid", iface},
					"external_ids": ovsMap(ext, "iface-id", "vm-uuid")}})
		refs = append(refs, []any{"named-uuid", port})
	}
	ops = append(ops, map[string]any{"op": "mutate", "table": "Bridge", "where": []any{[]any{"name", "==", "br0"}},
		"mutations": []any{[]any{"ports", "insert", []any{"set", refs}}}})
	if err := r.transactAndWait(wait, ops...); err != nil {
		return fmt.Errorf("add ports %v: %w", names, err)
	}
	return nil
}

// delPorts removes the named ports from br0 (ovsdb-server then deletes the unreferenced Port and
// Interface rows); each must exist.
func (r rawOVSDB) delPorts(names []string, wait bool) error {
	var sel []any
	for _, name := range names {
		sel = append(sel, selectByName("Port", name, "_uuid"))
	}
	res, err := r.transact(sel...)
	if err != nil {
		return err
	}
	var uuids []any
	for i, name := range names {
		if len(res[i].Rows) != 1 {
			return fmt.Errorf("%d ports named %s, want 1", len(res[i].Rows), name)
		}
		var u []any
		if err := json.Unmarshal(res[i].Rows[0]["_uuid"], &u); err != nil {
			return fmt.Errorf("port %s: _uuid: %w", name, err)
		}
		uuids = append(uuids, u)
	}
	err = r.transactAndWait(wait, map[string]any{"op": "mutate", "table": "Bridge", "where": []any{[]any{"name", "==", "br0"}},
		"mutations": []any{[]any{"ports", "delete", []any{"set", uuids}}}})
	if err != nil {
		return fmt.Errorf("delete ports %v: %w", names, err)
	}
	return r.checkGone(names)
}

// checkPorts returns an error unless each name is a Port (which, not being a root table, exists
// only while a bridge refers to it: br0 is the only one) with an Interface of that name; with
// ofport, the interface must also have a positive ofport from ovs-vswitchd.
func (r rawOVSDB) checkPorts(names []string, ofport bool) error {
	var ops []any
	for _, name := range names {
		ops = append(ops, selectByName("Port", name, "name"), selectByName("Interface", name, "ofport"))
	}
	res, err := r.transact(ops...)
	if err != nil {
		return err
	}
	for i, name := range names {
		port, iface := res[2*i], res[2*i+1]
		if len(port.Rows) != 1 || len(iface.Rows) != 1 {
			return fmt.Errorf("%d ports and %d interfaces named %s, want 1 and 1", len(port.Rows), len(iface.Rows), name)
		}
		if !ofport {
			continue
		}
		if of, err := intColumn(iface, "ofport"); err != nil || of < 1 {
			return fmt.Errorf("interface %s has ofport %s, want one from ovs-vswitchd", name, iface.Rows[0]["ofport"])
		}
	}
	return nil
}

// checkGone returns an error if a Port or an Interface of one of the names exists.
func (r rawOVSDB) checkGone(names []string) error {
	var ops []any
	for _, name := range names {
		ops = append(ops, selectByName("Port", name, "name"), selectByName("Interface", name, "name"))
	}
	res, err := r.transact(ops...)
	if err != nil {
		return err
	}
	for i, name := range names {
		if n, m := len(res[2*i].Rows), len(res[2*i+1].Rows); n != 0 || m != 0 {
			return fmt.Errorf("%d ports and %d interfaces named %s are left, want none", n, m, name)
		}
	}
	return nil
}

// checkExternalID returns an error unless the Interface of each name has external_ids:key=value.
func (r rawOVSDB) checkExternalID(names []string, key, value string) error {
	var ops []any
	for _, name := range names {
		ops = append(ops, map[string]any{"op": "select", "table": "Interface",
			"where":   []any{[]any{"name", "==", name}, []any{"external_ids", "includes", []any{"map", []any{[]any{key, value}}}}},
			"columns": []string{"name"}})
	}
	res, err := r.transact(ops...)
	if err != nil {
		return err
	}
	for i, name := range names {
		if len(res[i].Rows) != 1 {
			return fmt.Errorf("interface %s has no external_ids:%s=%s", name, key, value)
		}
	}
	return nil
}

// setExternalID sets external_ids:key=value on the Interface of each name.
func (r rawOVSDB) setExternalID(names []string, key, value string) error {
	var ops []any
	for _, name := range names {
		where := []any{[]any{"name", "==", name}}
		ops = append(ops,
			map[string]any{"op": "mutate", "table": "Interface", "where": where,
				"mutations": []any{[]any{"external_ids", "delete", []any{"set", []any{key}}}}},
			map[string]any{"op": "mutate", "table": "Interface", "where": where,
				"mutations": []any{[]any{"external_ids", "insert", []any{"map", []any{[]any{key, value}}}}}})
	}
	_, err := r.transact(ops...)
	return err
}

// cfg returns Open_vSwitch's next_cfg and cur_cfg.
func (r rawOVSDB) cfg() (next, cur int64, err error) {
	res, err := r.transact(map[string]any{"op": "select", "table": "Open_vSwitch", "where": []any{},
		"columns": []string{"next_cfg", "cur_cfg"}})
	if err != nil {
		return 0, 0, err
	}
	if next, err = intColumn(res[0], "next_cfg"); err != nil {
		return 0, 0, err
	}
	cur, err = intColumn(res[0], "cur_cfg")
	return next, cur, err
}

// portCount returns the number of ports of bridge.
func (r rawOVSDB) portCount(bridge string) (int, error) {
	res, err := r.transact(selectByName("Bridge", bridge, "ports"))
	if err != nil {
		return 0, err
	}
	if len(res[0].Rows) != 1 {
		return 0, fmt.Errorf("%d bridges named %s, want 1", len(res[0].Rows), bridge)
	}
	// A set is ["set", [...]] unless it has exactly one element, which is the bare ["uuid", "…"].
	var v []json.RawMessage
	if err := json.Unmarshal(res[0].Rows[0]["ports"], &v); err != nil || len(v) != 2 {
		return 0, fmt.Errorf("bridge %s: ports %s: %v", bridge, res[0].Rows[0]["ports"], err)
	}
	if string(v[0]) != `"set"` {
		return 1, nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(v[1], &elems); err != nil {
		return 0, fmt.Errorf("bridge %s: ports: %w", bridge, err)
	}
	return len(elems), nil
}

// intColumn returns the integer in column of the only row of res; an empty optional value (an
// empty set) is an error.
func intColumn(res rawResult, column string) (int64, error) {
	if len(res.Rows) != 1 {
		return 0, fmt.Errorf("%d rows, want 1", len(res.Rows))
	}
	raw := res.Rows[0][column]
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, errors.New(column + " is " + string(raw) + ", not an integer")
	}
	return n, nil
}
