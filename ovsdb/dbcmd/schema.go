package dbcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/ovsplane/ovsplane/ovsdb/datum"
)

// Schema is a database schema with column types in vsctl's value layer.
type Schema struct {
	Name, Version string
	Tables        map[string]*TableSchema
}

// TableSchema is one table. Columns includes the implicit "_uuid" and "_version".
type TableSchema struct {
	Name    string
	Columns map[string]*ColumnSchema
	// IsRoot is false for tables whose rows ovsdb-server deletes when nothing refers to them.
	IsRoot  bool
	Indexes [][]string
	MaxRows int
}

// ColumnSchema is one column.
type ColumnSchema struct {
	Name      string
	Type      datum.ColumnType
	Mutable   bool
	Ephemeral bool
}

// UUIDColumn is the type of the implicit _uuid and _version columns.
var uuidType = datum.ColumnType{Key: datum.NewBaseType(datum.TypeUUID), Min: 1, Max: 1}

// ColumnNames returns the table's column names, sorted, without _uuid and _version.
func (t *TableSchema) ColumnNames() []string {
	var n []string
	for name := range t.Columns {
		if name != "_uuid" && name != "_version" {
			n = append(n, name)
		}
	}
	sort.Strings(n)
	return n
}

// TableNames returns the schema's table names, sorted.
func (s *Schema) TableNames() []string {
	var n []string
	for name := range s.Tables {
		n = append(n, name)
	}
	sort.Strings(n)
	return n
}

// ParseSchema builds a Schema from the JSON of an RFC 7047 <database-schema>.
func ParseSchema(data []byte) (*Schema, error) {
	var raw struct {
		Name    string `json:"name"`
		Version string `json:"version"`
		Tables  map[string]struct {
			Columns map[string]struct {
				Type      any   `json:"type"`
				Mutable   *bool `json:"mutable"`
				Ephemeral bool  `json:"ephemeral"`
			} `json:"columns"`
			IsRoot  *bool      `json:"isRoot"`
			Indexes [][]string `json:"indexes"`
			MaxRows int        `json:"maxRows"`
		} `json:"tables"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("parsing schema: %w", err)
	}
	s := &Schema{Name: raw.Name, Version: raw.Version, Tables: map[string]*TableSchema{}}
	anyRoot := false
	for tn, rt := range raw.Tables {
		t := &TableSchema{Name: tn, Columns: make(map[string]*ColumnSchema, len(rt.Columns)+2), Indexes: rt.Indexes, MaxRows: rt.MaxRows}
		// RFC 7047: isRoot defaults to false, but a schema that gives no table isRoot treats
		// every table as a root; ovsdb-server does the same.
		t.IsRoot = rt.IsRoot != nil && *rt.IsRoot
		anyRoot = anyRoot || rt.IsRoot != nil
		for cn, rc := range rt.Columns {
			ct, err := datum.ColumnTypeFromValue(rc.Type)
			if err != nil {
				return nil, fmt.Errorf("schema table %s column %s: %w", tn, cn, err)
			}
			t.Columns[cn] = &ColumnSchema{Name: cn, Type: ct, Mutable: rc.Mutable == nil || *rc.Mutable, Ephemeral: rc.Ephemeral}
		}
		t.Columns["_uuid"] = &ColumnSchema{Name: "_uuid", Type: uuidType}
		t.Columns["_version"] = &ColumnSchema{Name: "_version", Type: uuidType}
		s.Tables[tn] = t
	}
	if !anyRoot {
		for _, t := range s.Tables {
			t.IsRoot = true
		}
	}
	return s, nil
}

// GetSchema fetches the schema of the connection's database.
func (c *Conn) GetSchema(ctx context.Context) (*Schema, error) {
	raw, err := c.Call(ctx, "get_schema", c.database)
	if err != nil {
		return nil, err
	}
	return ParseSchema(raw)
}
