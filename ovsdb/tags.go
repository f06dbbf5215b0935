package ovsdb

import (
	"iter"
	"maps"

	"github.com/ovsplane/ovsplane/ovsdb/internal/replica"
)

// Tags is a read-only view of one row's external_ids as the client last received them (see
// Client.Tags and OwnedRow.Tags). It may share storage with the client's replica of the
// database, which never changes a row it handed out: a Tags value stays valid and unchanged
// after the row is updated or deleted. The zero value is empty.
type Tags struct {
	m map[string]string // from libovsdb's cache; nil when r holds them
	r replica.Tags      // from the compact replica
}

// Get returns the value of key, or "" when the row has no such key.
func (t Tags) Get(key string) string {
	if t.m != nil {
		return t.m[key]
	}
	return t.r.Get(key)
}

// Lookup returns the value of key and whether the row has it.
func (t Tags) Lookup(key string) (string, bool) {
	if t.m != nil {
		v, ok := t.m[key]
		return v, ok
	}
	return t.r.Lookup(key)
}

// Len returns the number of keys.
func (t Tags) Len() int {
	if t.m != nil {
		return len(t.m)
	}
	return t.r.Len()
}

// All yields every key and its value, in no particular order.
func (t Tags) All() iter.Seq2[string, string] {
	if t.m != nil {
		return maps.All(t.m)
	}
	return t.r.All()
}
