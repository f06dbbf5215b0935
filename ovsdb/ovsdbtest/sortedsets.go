package ovsdbtest

import (
	"reflect"
	"sort"

	"github.com/ovn-kubernetes/libovsdb/database"
	"github.com/ovn-kubernetes/libovsdb/database/transaction"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"
)

// libovsdb's in-memory server compares the rows of a "wait" operation with reflect.DeepEqual,
// so two equal sets in a different order do not match (ovsdb-server compares sets as sets).
// Rows the transaction engine reads from the database are therefore handed out with every set
// column sorted; clients that send their expected sets sorted (package ovsdb does) then compare
// as with ovsdb-server.

// NewTransaction makes the transaction read rows through this wrapper (libovsdb's in-memory
// database would hand the transaction itself, bypassing List and Get below).
func (p persistentDatabase) NewTransaction(dbName string) database.Transaction {
	txn := p.Database.NewTransaction(dbName)
	if t, ok := txn.(*transaction.Transaction); ok {
		t.Database = p
	}
	return txn
}

// List returns the matching rows with their set columns sorted.
func (p persistentDatabase) List(dbName, table string, conditions ...ovsdb.Condition) (map[string]model.Model, error) {
	rows, err := p.Database.List(dbName, table, conditions...)
	if err != nil {
		return nil, err
	}
	for k, m := range rows {
		rows[k] = SortedSets(m)
	}
	return rows, nil
}

// Get returns the row with its set columns sorted.
func (p persistentDatabase) Get(dbName, table, uuid string) (model.Model, error) {
	m, err := p.Database.Get(dbName, table, uuid)
	if err != nil || m == nil {
		return m, err
	}
	return SortedSets(m), nil
}

// SortedSets returns a copy of m whose slice fields of strings or integers are sorted. A
// database wrapper that hands rows out through it makes libovsdb's server compare the sets of
// "wait" operations as ovsdb-server does (ovsdb/embedded uses it too).
func SortedSets(m model.Model) model.Model {
	c := model.Clone(m)
	v := reflect.ValueOf(c)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return m
	}
	v = v.Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() != reflect.Slice || f.Len() < 2 || !f.CanSet() {
			continue
		}
		switch f.Type().Elem().Kind() {
		case reflect.String:
			sort.Slice(f.Interface(), func(a, b int) bool { return f.Index(a).String() < f.Index(b).String() })
		case reflect.Int, reflect.Int64:
			sort.Slice(f.Interface(), func(a, b int) bool { return f.Index(a).Int() < f.Index(b).Int() })
		}
	}
	return c
}
