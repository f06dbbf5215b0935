package model

import (
	"encoding/json"
	"time"
)

// PluginJob is one data-path job of a plugin entry of the configuration file: long-running
// work inside the plugin's process that the daemon starts (api.DataPath.Start), starts again
// after the plugin restarts and stops when the entry drops it. vswitchd/config validates it.
type PluginJob struct {
	// Name is unique among the plugin's jobs (limits.CheckJob's rule).
	Name string `mapstructure:"name" yaml:"name"`
	// Type is one of the plugin's job types (its Info lists them).
	Type string `mapstructure:"type" yaml:"type"`
	// Config is handed to the job as a JSON object, typed as Plugin.Config is.
	Config map[string]any `mapstructure:"config" yaml:"config,omitempty"`
}

// ConfigJSON returns Config as a JSON object ("{}" when empty), or the error of a Config JSON
// cannot carry.
func (j PluginJob) ConfigJSON() ([]byte, error) {
	if len(j.Config) == 0 {
		return []byte("{}"), nil
	}
	return json.Marshal(j.Config)
}

// JobState is where a data-path job is.
type JobState string

// The job states.
const (
	// JobWaiting: its plugin is not running (yet); it starts when the plugin does.
	JobWaiting JobState = "waiting"
	// JobRunning: the plugin's Start succeeded in its current process.
	JobRunning JobState = "running"
	// JobError: Start failed (retried with backoff) or the job was refused (Error says why).
	JobError JobState = "error"
)

// JobInfo is one data-path job as the daemon sees it: the status API and the metrics report it.
type JobInfo struct {
	Plugin, Name, Type string
	// Port is the plugin port that asked for the job; "" for a job of the configuration file.
	Port  string
	State JobState
	// Error says why the job is in error, or why its last sample was refused.
	Error string
	// Status is the plugin's text from its last Start.
	Status string
	// Starts counts the successful starts (the first, then one after each plugin restart).
	Starts int
	// SampleTime is when the plugin took the last accepted sample (zero: none yet).
	SampleTime time.Time
	// Metrics are the last accepted sample's metrics.
	Metrics []JobMetric
}

// JobMetric is one value of a job's stats sample.
type JobMetric struct {
	Name string
	// Kind is "gauge", "counter" (monotonic since the job started) or "untyped".
	Kind   string
	Value  float64
	Labels map[string]string
}
