package vsctl

import (
	"fmt"

	"github.com/ovsplane/ovsplane/ovsdb/dbcmd"
)

// Symbol is one "@name" row reference of an invocation. UUID is drawn when the name is first
// seen, whether in a value ("@p" used before its --id=@p) or in an --id option; a row created
// with --id=@p takes that UUID, and "get --id=@p" points it at an existing row.
type Symbol struct {
	Name      string
	UUID      string
	Created   bool // defined by an --id option
	StrongRef bool // referred to from a strong reference (or the row needs none)
	WeakRef   bool // referred to from a weak reference
}

// Symbols is the symbol table of one invocation attempt.
type Symbols struct {
	byName map[string]*Symbol
	order  []string
}

// NewSymbols returns an empty symbol table.
func NewSymbols() *Symbols { return &Symbols{byName: map[string]*Symbol{}} }

// Get returns the symbol called name, or nil.
func (s *Symbols) Get(name string) *Symbol { return s.byName[name] }

// Insert returns the symbol called name, adding it (with a fresh UUID, not yet created) if it
// is new.
func (s *Symbols) Insert(name string) *Symbol {
	if sym := s.byName[name]; sym != nil {
		return sym
	}
	sym := &Symbol{Name: name, UUID: dbcmd.NewUUID()}
	s.byName[name] = sym
	s.order = append(s.order, name)
	return sym
}

// Create defines the symbol of an --id option: id must begin with "@" and may be defined only
// once. isNew tells whether the name had not even been referenced before.
func (s *Symbols) Create(id string) (sym *Symbol, isNew bool, err error) {
	if len(id) == 0 || id[0] != '@' {
		return nil, false, Fatalf("row id \"%s\" does not begin with \"@\"", id)
	}
	isNew = s.byName[id] == nil
	sym = s.Insert(id)
	if sym.Created {
		return nil, false, Fatalf("row id \"%s\" may only be specified on one --id option", id)
	}
	sym.Created = true
	return sym, isNew, nil
}

// All returns the symbols in the order they were first seen.
func (s *Symbols) All() []*Symbol {
	out := make([]*Symbol, 0, len(s.order))
	for _, n := range s.order {
		out = append(out, s.byName[n])
	}
	return out
}

// String is for debugging.
func (s *Symbol) String() string { return fmt.Sprintf("%s=%s", s.Name, s.UUID) }
