package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
)

// ErrBadSpec is wrapped by NewTable's errors.
var ErrBadSpec = errors.New("invalid command spec")

// Table is an immutable set of commands a parser accepts. It is safe for concurrent use.
type Table struct {
	specs   []CommandSpec  // registration order
	byName  map[string]int // name -> index in specs
	display []int          // --commands order (indexes into specs)
	long    []longOption   // getopt's long options: globals, then command options
}

// NewTable validates specs (given in registration order, which decides the --commands order
// and the order of command options in getopt's ambiguity messages, as in ovs-vsctl) and
// returns a table of them. Names must be unique, non-empty and not start with "-"; options
// must look like "--name" or "--name=" and must not reuse a global option's name; MinArgs
// must be between 0 and MaxArgs. The table keeps its own copy of specs.
func NewTable(specs []CommandSpec) (*Table, error) {
	seen := map[string]bool{}
	global := map[string]bool{}
	for _, o := range globalLongOptions() {
		global[o.name] = true
	}
	for _, s := range specs {
		if s.Name == "" || strings.HasPrefix(s.Name, "-") || seen[s.Name] {
			return nil, fmt.Errorf("command %q: bad or duplicate name: %w", s.Name, ErrBadSpec)
		}
		seen[s.Name] = true
		if s.MinArgs < 0 || s.MinArgs > s.MaxArgs {
			return nil, fmt.Errorf("command %q: bad argument bounds %d..%d: %w",
				s.Name, s.MinArgs, s.MaxArgs, ErrBadSpec)
		}
		for _, o := range s.Options {
			name := strings.TrimSuffix(strings.TrimPrefix(o, "--"), "=")
			if !strings.HasPrefix(o, "--") || name == "" || strings.ContainsAny(name, "=, ") || global[name] {
				return nil, fmt.Errorf("command %q: bad option %q: %w", s.Name, o, ErrBadSpec)
			}
		}
	}
	return newTable(specs), nil
}

// DefaultTable returns the table of ovs-vsctl 3.1's commands (VSwitchCommands).
func DefaultTable() *Table { return newTable(VSwitchCommands()) }

// newTable builds a table from specs known to be valid.
func newTable(specs []CommandSpec) *Table {
	t := &Table{specs: make([]CommandSpec, len(specs)), byName: make(map[string]int, len(specs))}
	names := make([]string, len(specs))
	for i, s := range specs {
		s.Options = append([]string(nil), s.Options...)
		t.specs[i] = s
		t.byName[s.Name] = i
		names[i] = s.Name
	}
	t.display = datum.HashOrder(names)
	t.long = globalLongOptions()
	seen := map[string]bool{}
	for _, i := range t.display {
		for _, o := range t.specs[i].Options {
			name, needsArg := strings.CutSuffix(strings.TrimPrefix(o, "--"), "=")
			if seen[name] {
				continue
			}
			seen[name] = true
			kind := noArg
			if needsArg {
				kind = requiredArg
			}
			t.long = append(t.long, longOption{name: name, kind: kind, id: optLocal})
		}
	}
	return t
}

// Lookup returns the spec of the command with exactly this name.
func (t *Table) Lookup(name string) (CommandSpec, bool) {
	i, ok := t.byName[name]
	if !ok {
		return CommandSpec{}, false
	}
	return t.specs[i].clone(), true
}

// Commands returns the specs in the order --commands lists them.
func (t *Table) Commands() []CommandSpec {
	out := make([]CommandSpec, len(t.display))
	for j, i := range t.display {
		out[j] = t.specs[i].clone()
	}
	return out
}

// CommandsListing returns exactly what ovs-vsctl prints for --commands: one line per command,
// "[--opt] [--opt=] ,name,syntax".
func (t *Table) CommandsListing() string {
	var b strings.Builder
	for _, i := range t.display {
		s := &t.specs[i]
		for _, o := range s.Options {
			b.WriteString("[" + o + "] ")
		}
		b.WriteString("," + s.Name + "," + s.Syntax + "\n")
	}
	return b.String()
}

// clone returns a copy of s that shares no memory with it.
func (s CommandSpec) clone() CommandSpec {
	s.Options = append([]string(nil), s.Options...)
	return s
}
