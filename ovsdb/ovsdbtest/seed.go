package ovsdbtest

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/ovn-kubernetes/libovsdb/database"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	"github.com/ovn-kubernetes/libovsdb/ovsdb/serverdb"

	"github.com/ovsplane/ovsplane/ovsdb/simvswitchd"
	"github.com/ovsplane/ovsplane/ovsdb/vswitch"
)

// Versions the seeded Open_vSwitch row reports.
const (
	// DefaultOVSVersion is the Open_vSwitch.ovs_version of a default Server.
	DefaultOVSVersion = "3.1.0"
	// SchemaVersion is the version of the served vswitch schema, written to
	// Open_vSwitch.db_version.
	SchemaVersion = "8.3.1"
)

// persistentDatabase keeps the databases of a libovsdb in-memory database
// across OvsdbServer instances: NewOvsdbServer calls CreateDatabase for every
// model it serves, which would otherwise replace the existing content with
// an empty table cache.
type persistentDatabase struct {
	database.Database
}

// CreateDatabase creates the database name unless it already exists.
func (p persistentDatabase) CreateDatabase(name string, schema ovsdb.DatabaseSchema) error {
	if p.Exists(name) {
		return nil
	}
	return p.Database.CreateDatabase(name, schema)
}

// seed inserts the rows a freshly started ovsdb-server plus `ovs-vsctl init`
// and ovs-vswitchd would have written.
func (s *Server) seed() error {
	if !s.cfg.NoServerDB {
		if err := s.seedServerDB(); err != nil {
			return err
		}
	}
	if s.cfg.NoInit {
		return nil
	}
	ovsVersion, dbVersion := s.cfg.OVSVersion, SchemaVersion
	if ovsVersion == "" {
		ovsVersion = DefaultOVSVersion
	}
	ifaceTypes, dpTypes := s.cfg.IfaceTypes, s.cfg.DatapathTypes
	if ifaceTypes == nil {
		ifaceTypes = simvswitchd.DefaultIfaceTypes()
	}
	if dpTypes == nil {
		dpTypes = simvswitchd.DefaultDatapathTypes()
	}
	row := &vswitch.OpenvSwitch{
		OVSVersion:    &ovsVersion,
		DbVersion:     &dbVersion,
		IfaceTypes:    ifaceTypes,
		DatapathTypes: dpTypes,
	}
	return s.insert(VswitchDB, vswitch.OpenvSwitchTable, row)
}

// seedServerDB describes the served databases in _Server.Database the way a
// standalone ovsdb-server does.
func (s *Server) seedServerDB() error {
	for _, m := range s.models {
		text, err := json.Marshal(m.Schema)
		if err != nil {
			return fmt.Errorf("ovsdbtest: encode schema %s: %w", m.Schema.Name, err)
		}
		schema := string(text)
		row := &serverdb.Database{
			Name:      m.Schema.Name,
			Model:     serverdb.DatabaseModelStandalone,
			Connected: true,
			Leader:    true,
			Schema:    &schema,
		}
		if err := s.insert(ServerDB, serverdb.DatabaseTable, row); err != nil {
			return err
		}
	}
	return nil
}

// insert writes one row straight into the database, bypassing the RPC layer.
func (s *Server) insert(dbName, table string, m model.Model) error {
	var dbModel model.DatabaseModel
	for _, candidate := range s.models {
		if candidate.Schema.Name == dbName {
			dbModel = candidate
		}
	}
	info, err := dbModel.NewModelInfo(m)
	if err != nil {
		return fmt.Errorf("ovsdbtest: seed %s row: %w", table, err)
	}
	row, err := dbModel.Mapper.NewRow(info)
	if err != nil {
		return fmt.Errorf("ovsdbtest: seed %s row: %w", table, err)
	}
	op := ovsdb.Operation{Op: ovsdb.OperationInsert, Table: table, Row: row, UUID: uuid.NewString()}
	results, update := s.db.NewTransaction(dbName).Transact(op)
	for _, r := range results {
		if r != nil && r.Error != "" {
			return fmt.Errorf("ovsdbtest: seed %s row: %w", table, errors.New(r.Error+": "+r.Details))
		}
	}
	if err := s.db.Commit(dbName, uuid.New(), update); err != nil {
		return fmt.Errorf("ovsdbtest: seed %s row: commit: %w", table, err)
	}
	return nil
}
