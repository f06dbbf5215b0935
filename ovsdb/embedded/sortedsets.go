package embedded

import (
	"github.com/ovn-kubernetes/libovsdb/database"
	"github.com/ovn-kubernetes/libovsdb/database/transaction"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/ovsdb/ovsdbtest"
)

// libovsdb's in-memory server compares the rows of a "wait" operation with reflect.DeepEqual,
// so two equal sets in another order do not match and a client's optimistic-concurrency
// checks (ovs-vsctl's verify, vsctl's and package ovsdb's waits) would fail for ever. The
// transaction engine therefore reads rows through the store, which hands them out with every
// set column sorted, as clients send their expected sets.

// NewTransaction makes the transaction read rows through the store.
func (s *store) NewTransaction(dbName string) database.Transaction {
	txn := s.Database.NewTransaction(dbName)
	if t, ok := txn.(*transaction.Transaction); ok {
		t.Database = s
	}
	return txn
}

// List returns the matching rows with their set columns sorted.
func (s *store) List(dbName, table string, conditions ...ovsdb.Condition) (map[string]model.Model, error) {
	rows, err := s.Database.List(dbName, table, conditions...)
	if err != nil {
		return nil, err
	}
	for k, m := range rows {
		rows[k] = ovsdbtest.SortedSets(m)
	}
	return rows, nil
}

// Get returns the row with its set columns sorted.
func (s *store) Get(dbName, table, uuid string) (model.Model, error) {
	m, err := s.Database.Get(dbName, table, uuid)
	if err != nil || m == nil {
		return m, err
	}
	return ovsdbtest.SortedSets(m), nil
}
