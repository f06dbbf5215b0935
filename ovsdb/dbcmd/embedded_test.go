package dbcmd_test

import (
	"context"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/ovsdb/dbcmd"
	"github.com/ovsplane/ovsplane/ovsdb/embedded"
)

// ovsplaned's embedded database serves no _Server database; leader-only dialling (vsctl's
// default) must still accept it, as ovs-vsctl does.
func TestDialLeaderOnlyWithoutServerDatabase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	db, err := embedded.Open(ctx, t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := dbcmd.Dial(ctx, db.Endpoint(), dbcmd.DialOptions{LeaderOnly: true})
	if err != nil {
		t.Fatalf("leader-only dial of a server without _Server: %v", err)
	}
	defer conn.Close()
	schema, err := conn.GetSchema(ctx)
	if err != nil || schema.Tables["Bridge"] == nil {
		t.Fatalf("schema over the connection: %v", err)
	}
}
