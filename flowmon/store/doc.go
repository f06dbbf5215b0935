// Package store defines what a flow store is (Store) and the unit it ingests (Batch). The
// embedded store (flowmon/store/duckstore) and the PostgreSQL store (flowmon/store/pgstore)
// implement it; flowmon/store/storetest is the query suite both must pass.
package store
