// Package jobs runs the plugins' data-path jobs for the daemon: long-running work inside a
// plugin's process (api.DataPath), asked for by the configuration file (a plugin entry's
// jobs) or by a plugin's port (api.Attachment.Jobs, for as long as the port's row exists).
//
// The Manager is level-based: every pass (on Kick, and every Options.Resync) it computes the
// jobs that should run from the configuration and Options.Ports, and makes each running plugin
// process run exactly those: Start for a job not started in the plugin's current process (a
// restarted plugin — a new PID — has none, so all its jobs start again), Stop for a job no
// longer wanted. A failed Start is retried with backoff. For each plugin with running jobs it
// keeps one stats stream (api.DataPath.Stats), opened again when it ends or the plugin
// restarts; every sample is checked (the job is one of the plugin's, bounded count, names,
// labels, finite values) and a refused one is logged and kept out, the others unaffected. It
// keeps the latest accepted sample per job, the job's state, error, the plugin's status text
// and when the sample was taken, for the status API and the metrics (All, Plugin).
//
// What it keeps is bounded: limits.MaxJobs jobs in all (past it, jobs are refused, in
// error), limits.MaxJobsPerPort per port, limits.MaxMetricsPerSample metrics per sample.
package jobs
