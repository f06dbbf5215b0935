package api

import "context"

// Plugin is the base every plugin implements. The host calls Info first, then Configure, and
// no capability method before the first Configure succeeded.
type Plugin interface {
	// Info describes the plugin; it must not depend on configuration.
	Info(ctx context.Context) (Info, error)
	// ConfigSchema describes the plugin's configuration.
	ConfigSchema(ctx context.Context) (ConfigSchema, error)
	// Configure applies a configuration and the facts of the running Open vSwitch. It is
	// called again after every plugin restart and on configuration reload, so it must accept
	// being called on a configured plugin. An invalid configuration is an *Error with code
	// InvalidArgument (Problems naming the fields); the previous configuration then stays.
	Configure(ctx context.Context, req ConfigureRequest) error
	// Health reports the plugin's own view of its health; it must be cheap (the host calls it
	// every few seconds).
	Health(ctx context.Context) (Health, error)
}

// PortProvider computes the OVS shape of the ports of the types a plugin provides and does the
// host work they need. The host writes what Attach returns to OVSDB; the plugin never does.
type PortProvider interface {
	// Validate checks a request without side effects and returns its problems (none when
	// valid). The error is for failing to validate, not for an invalid request.
	Validate(ctx context.Context, req PortRequest) ([]Problem, error)
	// Attach does the host work for a port and returns its OVS shape. Idempotent: for the same
	// request it returns the same shape and does the work once. A request with State is a
	// replay (after a host or plugin restart, or a retry): the plugin adopts what State
	// describes rather than creating it again.
	Attach(ctx context.Context, req PortRequest) (Attachment, error)
	// Detach undoes the host work of Attach, after the host removed the port from OVSDB.
	// Idempotent: a port the plugin does not know is already detached and returns nil.
	Detach(ctx context.Context, req PortRequest) error
	// List returns the ports the plugin believes it owns, so the host can reconcile them with
	// what OVSDB records after a restart.
	List(ctx context.Context) ([]OwnedPort, error)
}

// Watcher receives the events of the interfaces selected by Info.Watch, whoever created them.
type Watcher interface {
	// OnPortEvents handles one batch and returns the other_config changes the plugin asks for
	// on interfaces of the batch. The host delivers one batch at a time per plugin, applies
	// the changes in its next transaction, and drops changes to interfaces not in the batch.
	// An error makes the host deliver the batch again later (with newer states merged in).
	OnPortEvents(ctx context.Context, batch PortEventBatch) ([]InterfaceChange, error)
}

// GlobalConfigContributor contributes to the Open_vSwitch row.
type GlobalConfigContributor interface {
	// Contribute returns the plugin's whole contribution; it is called after every Configure.
	// The host merges all contributions with its own configuration, reports every key on
	// which two of them disagree and applies none of those keys.
	Contribute(ctx context.Context) (GlobalConfig, error)
}

// FlowProgrammer owns OpenFlow flows (by cookie) and groups (by id) on bridges.
type FlowProgrammer interface {
	// Flows returns the whole desired set of the plugin's flows and groups on one bridge (empty
	// for a bridge it does not program). The host adds, modifies and removes flows and groups
	// so the bridge matches, touching only the plugin's cookies and group ids.
	Flows(ctx context.Context, bridge BridgeFacts) (FlowSet, error)
}

// DataPath runs long-lived named jobs inside the plugin process.
type DataPath interface {
	// Start starts a job and returns a status for humans. Idempotent: a running job with the
	// same config is left alone; with another config the plugin applies it or restarts the job.
	Start(ctx context.Context, job Job) (string, error)
	// Stop stops a job. Idempotent: an unknown job is already stopped.
	Stop(ctx context.Context, name string) error
	// Stats sends samples of the selected jobs until ctx ends, then returns ctx's error (or
	// nil). An error from send means the host went away; Stats then returns it.
	Stats(ctx context.Context, req StatsRequest, send func(StatsSample) error) error
}
