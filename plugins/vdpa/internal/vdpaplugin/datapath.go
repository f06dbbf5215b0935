package vdpaplugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"time"

	"github.com/ovsplane/ovsplane/model/limits"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
	"github.com/ovsplane/ovsplane/vdpa"
)

// JobType is the plugin's job type: the DPDK vDPA driver process of one dpdk-pmd port.
const JobType = "dpdk-vdpa"

// jobPrefix starts the name of a port's job: dpdk-vdpa-<port>.
const jobPrefix = "dpdk-vdpa-"

// maxJobConfig bounds a job's configuration.
const maxJobConfig = 1024

// stopGrace is how long a dpdk-vdpa process has to exit after SIGTERM (it unregisters its
// vhost-user sockets and closes the device) before SIGKILL.
const stopGrace = 3 * time.Second

// jobConfig is the configuration of a dpdk-vdpa job, the JSON object of api.Job.Config: what
// the command line is rendered from (vdpa.DPDKVDPAArgs), never the command line itself.
type jobConfig struct {
	Port      string `json:"port"`       // the port's (interface's) name
	VF        string `json:"vf"`         // the VF's PCI address
	SocketDir string `json:"socket_dir"` // the vhost-user socket directory
}

// jobSchema is the JSON schema of jobConfig.
const jobSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "dpdk-vdpa job",
  "type": "object",
  "additionalProperties": false,
  "required": ["port", "vf", "socket_dir"],
  "properties": {
    "port": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$", "description": "the vdpa port's name"},
    "vf": {"type": "string", "pattern": "^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-7]$", "description": "the VF's PCI address"},
    "socket_dir": {"type": "string", "description": "absolute directory of the vhost-user socket"}
  }
}`

// jobDoc documents the job type for humans.
const jobDoc = `The DPDK vDPA driver (dpdk-vdpa -a <VF>,class=vdpa -- --iface <socket-dir>/<port>- --client)
of one port in mode dpdk-pmd, named dpdk-vdpa-<port>. Attach returns it; the daemon starts it once the
port is written and stops it when the port is removed. The plugin restarts it when it exits (backoff
200ms doubling to 30s), stops it with SIGTERM then SIGKILL after 3s, logs its output, and reports
process_up, process_pid, process_uptime_seconds, process_restarts_total and process_last_exit_code.`

var (
	rePortName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$`)
	rePCI      = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)
)

// maxJobName is the daemon's bound on a job's name (limits.CheckJob), so a dpdk-pmd port's
// name has at most maxJobName-len(jobPrefix) bytes: 54 where the daemon and the library
// accept 64 and 63.
const maxJobName = 64

// jobNameProblems refuses, as a problem on the name, a port whose dpdk-vdpa job the daemon
// would refuse to run for its name (a dpdk-pmd port, supervised): checked before any host work,
// so that the user learns the limit instead of getting a plugin answer the daemon rejects
// after the VFs were set up.
func jobNameProblems(cfg Config, r vdpa.Request) []api.Problem {
	if r.Mode != vdpa.ModeDPDKPMD || !cfg.supervise() {
		return nil
	}
	if err := limits.CheckJob(jobPrefix+r.Name, JobType, nil); err != nil {
		return []api.Problem{{Field: "name", Message: fmt.Sprintf(
			"%q is %d bytes: in mode dpdk-pmd the port's data-path job is named %s<port>, at most %d bytes, so the name may have at most %d bytes; use a shorter name (or supervise_dpdk_vdpa: false)",
			r.Name, len(r.Name), jobPrefix, maxJobName, maxJobName-len(jobPrefix))}}
	}
	return nil
}

// jobType is the api.ObjectType of JobType for Info.
func jobType() api.ObjectType {
	return api.ObjectType{Name: JobType, Kind: api.ObjectKindJob, OptionsSchema: jobSchema, Doc: jobDoc}
}

// jobOf returns the data-path job of an applied dpdk-pmd port.
func jobOf(st *vdpa.State) (api.Job, error) {
	cfg, err := json.Marshal(jobConfig{Port: st.Request.Name, VF: st.VF, SocketDir: st.Request.SocketDir})
	if err != nil {
		return api.Job{}, api.Errorf(api.Internal, "port %s: encode its dpdk-vdpa job: %w", st.Request.Name, err)
	}
	return api.Job{Name: jobPrefix + st.Request.Name, Type: JobType, Config: cfg}, nil
}

// parseJob checks a job and decodes its configuration; errors are InvalidArgument naming the
// field.
func parseJob(job api.Job) (jobConfig, error) {
	bad := func(field, format string, args ...any) (jobConfig, error) {
		return jobConfig{}, sdk.Invalid(api.Problem{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if job.Type != JobType {
		return bad("type", "%q is not a job type of this plugin (%s)", job.Type, JobType)
	}
	if len(job.Config) > maxJobConfig {
		return bad("config", "%d bytes, more than %d", len(job.Config), maxJobConfig)
	}
	var c jobConfig
	dec := json.NewDecoder(bytes.NewReader(job.Config))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return bad("config", "not a dpdk-vdpa job configuration (port, vf, socket_dir): %v", err)
	}
	switch {
	case !rePortName.MatchString(c.Port):
		return bad("config.port", "%q: want a vdpa port name (1-63 letters, digits, '_', '.', ':' or '-')", c.Port)
	case job.Name != jobPrefix+c.Port:
		return bad("name", "%q: the job of port %s is named %s%s", job.Name, c.Port, jobPrefix, c.Port)
	case !rePCI.MatchString(c.VF):
		return bad("config.vf", "%q: want a PCI address such as 0000:65:00.2", c.VF)
	case len(c.SocketDir) > 256 || !path.IsAbs(c.SocketDir) || path.Clean(c.SocketDir) != c.SocketDir:
		return bad("config.socket_dir", "%q: want a clean absolute directory of at most 256 bytes", c.SocketDir)
	}
	return c, nil
}

// Start runs a port's dpdk-vdpa job: the configured program with the arguments of
// vdpa.DPDKVDPAArgs, supervised (restarted when it exits) until Stop or the plugin's Close. A
// job already running with the same command is left alone; with another it is restarted.
func (p *Plugin) Start(ctx context.Context, job api.Job) (string, error) {
	cfg, _, _, err := p.current()
	if err != nil {
		return "", err
	}
	c, err := parseJob(job)
	if err != nil {
		return "", err
	}
	if !cfg.supervise() {
		return "", api.Errorf(api.FailedPrecondition, "job %s: the plugin's config supervise_dpdk_vdpa is false: run dpdk-vdpa yourself, or set it to true", job.Name)
	}
	if err := checkDPDKVDPA(cfg, c.Port); err != nil {
		return "", err
	}
	status, err := p.sup.Start(ctx, sdk.ProcessOptions{Name: job.Name, Logger: p.log, StopGrace: stopGrace,
		Command: sdk.Command{Path: cfg.DPDKVDPA, Args: vdpa.DPDKVDPAArgs(c.Port, c.VF, c.SocketDir)}})
	if err != nil {
		return "", fmt.Errorf("port %s: %w", c.Port, err)
	}
	return status, nil
}

// Stop stops a job; an unknown job is already stopped.
func (p *Plugin) Stop(ctx context.Context, name string) error {
	return p.sup.Stop(ctx, name)
}

// Stats streams the supervisor's metrics of the selected jobs (sdk.Supervisor.Stats).
func (p *Plugin) Stats(ctx context.Context, req api.StatsRequest, send func(api.StatsSample) error) error {
	return p.sup.Stats(ctx, req, send)
}

// checkDPDKVDPA checks that the configured dpdk-vdpa program can run, with the advice a user
// needs when it cannot.
func checkDPDKVDPA(cfg Config, port string) error {
	if err := sdk.CheckProgram(cfg.DPDKVDPA); err != nil {
		return api.Errorf(api.FailedPrecondition,
			"port %s: mode dpdk-pmd runs DPDK's vDPA driver: %s: build DPDK with -Dexamples=vdpa and install build/examples/dpdk-vdpa as %s, or set the vdpa plugin's config dpdk_vdpa to its path (or supervise_dpdk_vdpa: false to run it yourself)",
			port, messageOf(err), cfg.DPDKVDPA)
	}
	return nil
}

// jobsHealth describes supervised jobs that are not running (restarting after an exit).
func (p *Plugin) jobsHealth() (running, down int, msg string) {
	for _, name := range p.sup.Names() {
		proc, ok := p.sup.Get(name)
		if !ok {
			continue
		}
		if st := proc.Stats(); st.Running {
			running++
		} else {
			down++
			if msg == "" {
				msg = fmt.Sprintf("%s restarting after %s (%d restarts)", name, st.LastExit, st.Restarts)
			}
		}
	}
	return running, down, msg
}

// messageOf is an error's text without the code prefix of an *api.Error.
func messageOf(err error) string {
	var e *api.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}

// repathJobs restarts the running jobs whose program is not cfg.DPDKVDPA with it, same
// arguments, when that program can run; otherwise they keep running and a warning says why.
func (p *Plugin) repathJobs(ctx context.Context, cfg Config) {
	for _, name := range p.sup.Names() {
		proc, ok := p.sup.Get(name)
		if !ok || proc.Command().Path == cfg.DPDKVDPA {
			continue
		}
		if err := sdk.CheckProgram(cfg.DPDKVDPA); err != nil {
			p.log.Warn("dpdk_vdpa changed but cannot run: the job keeps its program", "job", name, "program", proc.Command().Path, "err", err)
			continue
		}
		cmd := proc.Command()
		cmd.Path = cfg.DPDKVDPA
		if _, err := p.sup.Start(ctx, sdk.ProcessOptions{Name: name, Logger: p.log, StopGrace: stopGrace, Command: cmd}); err != nil {
			p.log.Error("restarting the job with the new dpdk_vdpa", "job", name, "err", err)
		}
	}
}
