package limits

import (
	"encoding/json"
	"fmt"
	"regexp"
	"unicode/utf8"
)

// Bounds on data-path jobs (a plugin's long-running work, model.PluginJob and api.Job) and on
// the stats samples their plugins send. The configuration file, the daemon's job manager
// (for the jobs a plugin's port asks for) and the samples' check use them.
const (
	// MaxJobsPerPlugin bounds the jobs of one plugin entry of the configuration file.
	MaxJobsPerPlugin = 64
	// MaxJobsPerPort bounds the jobs one plugin port asks for (api.Attachment.Jobs).
	MaxJobsPerPort = 8
	// MaxJobs bounds the jobs the daemon runs in all (every plugin, both origins); jobs past it
	// are refused, in error, and the others run.
	MaxJobs = 4096
	// MaxJobConfigBytes bounds a job's configuration, a JSON object.
	MaxJobConfigBytes = 16 << 10
	// MaxMetricsPerSample bounds the metrics of one stats sample; a larger sample is refused.
	MaxMetricsPerSample = 256
	// MaxMetricNameBytes bounds a metric's name.
	MaxMetricNameBytes = 64
	// MaxMetricLabels bounds the labels of one metric.
	MaxMetricLabels = 8
	// MaxLabelNameBytes and MaxLabelValueBytes bound one label.
	MaxLabelNameBytes  = 32
	MaxLabelValueBytes = 128
)

var (
	// jobName: a letter or digit, then letters, digits, '.', '_' or '-' (a port's name fits).
	jobName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	// jobType is the rule of a plugin's object type names (plugins/api).
	jobType = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)
	// metricName and labelName: Prometheus names, lower case.
	metricName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	labelName  = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
)

// ReservedLabels are the labels the daemon sets on every job metric itself.
var ReservedLabels = []string{"plugin", "job"}

// CheckJob checks one job: its name (a letter or digit, then letters, digits, '.', '_' or
// '-', at most 64 bytes), its type (a plugin's type name) and its configuration (empty, or a
// JSON object of at most MaxJobConfigBytes). The errors say what to change; the caller names
// the plugin.
func CheckJob(name, typ string, config []byte) error {
	switch {
	case !jobName.MatchString(name):
		return fmt.Errorf("job name %q must be a letter or digit followed by up to 63 letters, digits, '.', '_' or '-'", name)
	case !jobType.MatchString(typ):
		return fmt.Errorf("job %q: type %q must be a job type of the plugin (a lower-case letter, then up to 39 lower-case letters, digits or '-')", name, typ)
	case len(config) > MaxJobConfigBytes:
		return fmt.Errorf("job %q: config is %d bytes of JSON, more than %d (limits.MaxJobConfigBytes); keep large data in a file the plugin reads", name, len(config), MaxJobConfigBytes)
	}
	if len(config) > 0 {
		var obj map[string]any
		if err := json.Unmarshal(config, &obj); err != nil || obj == nil {
			return fmt.Errorf("job %q: config must be a JSON object", name)
		}
	}
	return nil
}

// CheckMetricName checks a metric's name: a lower-case letter, then lower-case letters,
// digits or '_', at most MaxMetricNameBytes.
func CheckMetricName(name string) error {
	if len(name) > MaxMetricNameBytes || !metricName.MatchString(name) {
		return fmt.Errorf("metric name %q must be a lower-case letter followed by lower-case letters, digits or '_', at most %d bytes", clip(name), MaxMetricNameBytes)
	}
	return nil
}

// CheckLabel checks one label of a metric: a name like a metric's (not one of ReservedLabels,
// at most MaxLabelNameBytes) and a UTF-8 value of at most MaxLabelValueBytes.
func CheckLabel(name, value string) error {
	switch {
	case len(name) > MaxLabelNameBytes || !labelName.MatchString(name):
		return fmt.Errorf("label name %q must be a lower-case letter followed by lower-case letters, digits or '_', at most %d bytes", clip(name), MaxLabelNameBytes)
	case name == ReservedLabels[0] || name == ReservedLabels[1]:
		return fmt.Errorf("label %q is set by the daemon; rename it", name)
	case len(value) > MaxLabelValueBytes:
		return fmt.Errorf("label %q: value of %d bytes, more than %d", name, len(value), MaxLabelValueBytes)
	case !utf8.ValidString(value):
		return fmt.Errorf("label %q: value is not UTF-8", name)
	}
	return nil
}

// clip shortens s for a message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
