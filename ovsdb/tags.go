package ovsdb

import (
	"iter"
	"maps"
)

// Tags is a read-only view of one row's external_ids as the client last received them (see
// Client.Tags and OwnedRow.Tags). It may share storage with the client's replica of the
// database, which never changes a row it handed out: a Tags value stays valid and unchanged
// after the row is updated or deleted. The zero value is empty.
type Tags struct{ m map[string]string }

// Get returns the value of key, or "" when the row has no such key.
func (t Tags) Get(key string) string { return t.m[key] }

// Lookup returns the value of key and whether the row has it.
func (t Tags) Lookup(key string) (string, bool) {
	v, ok := t.m[key]
	return v, ok
}

// Len returns the number of keys.
func (t Tags) Len() int { return len(t.m) }

// All yields every key and its value, in no particular order.
func (t Tags) All() iter.Seq2[string, string] { return maps.All(t.m) }
