package dsaplugin

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"github.com/ovsplane/ovsplane/dsa"
	"github.com/ovsplane/ovsplane/internal/ovsproc"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// PMDRxqShowCommand is the appctl command whose text tells which PMD thread polls which port.
const PMDRxqShowCommand = "dpif-netdev/pmd-rxq-show"

// vswitchdSocket names the unixctl socket of the ovs-vswitchd the plugin talks to: path when
// the configuration gives one (ovs.unixctl), else the one found in the daemon's OVS run
// directory runDir.
type vswitchdSocket struct{ path, runDir string }

// socketOf is the socket cfg and facts name.
func socketOf(cfg Config, facts api.HostFacts) vswitchdSocket {
	return vswitchdSocket{path: cfg.OVS.Unixctl, runDir: facts.OVSRunDir}
}

// known reports whether s names a socket or a directory to find one in.
func (s vswitchdSocket) known() bool { return s.path != "" || s.runDir != "" }

// resolve returns the socket's path: the configured one as it is, else ovs-vswitchd.<pid>.ctl
// or ovs-vswitchd.ctl in the run directory (ovsproc.VswitchdCtl).
func (s vswitchdSocket) resolve() (string, error) {
	if s.path != "" {
		return s.path, nil
	}
	return ovsproc.VswitchdCtl(s.runDir)
}

// appctlCommands reads the commands of the ovs-vswitchd behind the configured socket (ovs.unixctl),
// within the plugin's unixctl timeout.
func (p *Plugin) appctlCommands(ctx context.Context, path string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, p.ucTimeout)
	defer cancel()
	return ovsproc.AppctlCommands(ctx, path)
}

// unixctl sends one command to the ovs-vswitchd behind sock, within the plugin's unixctl
// timeout.
func (p *Plugin) unixctl(ctx context.Context, sock vswitchdSocket, method string, args ...string) (string, error) {
	ctl, err := sock.resolve()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, p.ucTimeout)
	defer cancel()
	return ovsproc.Unixctl(ctx, ctl, method, args...)
}

// firstNumber finds the threshold in a get-vhost-async-thresh reply.
var firstNumber = regexp.MustCompile(`[0-9]+`)

// setThreshold makes the vhost async threshold of a capable ovs-vswitchd n bytes through its
// unixctl socket: it reads the threshold, sets it when it differs (ovs-vswitchd forgets it when
// it restarts) and reads it back; only a read-back equal to n counts as done.
func (p *Plugin) setThreshold(ctx context.Context, sock vswitchdSocket, ovs dsa.OVSCapability, n int) threshold {
	t := threshold{asked: n}
	if got, err := p.getThreshold(ctx, sock); err == nil && got == n {
		t.readBack = got
		return t
	}
	if _, err := p.unixctl(ctx, sock, ovs.ThreshCommand, strconv.Itoa(n)); err != nil {
		t.err = fmt.Sprintf("%s %d: %v", ovs.ThreshCommand, n, err)
		p.log.Warn("vhost async threshold not set", "err", err)
		return t
	}
	got, err := p.getThreshold(ctx, sock)
	if err != nil {
		t.err = err.Error()
		return t
	}
	t.readBack = got
	if got != n {
		t.err = fmt.Sprintf("asked for %d bytes, ovs-vswitchd reads back %d", n, got)
	}
	return t
}

// ReadPMDs returns the PMD threads of the ovs-vswitchd whose unixctl socket is ctl, with the
// rx queues each polls (dpif-netdev/pmd-rxq-show, read and parsed by ovsproc.PMDRxqShow within
// its bounds). An ovs-vswitchd without a userspace datapath has none. ctx bounds the call.
func ReadPMDs(ctx context.Context, ctl string) ([]dsa.PMD, error) {
	threads, err := ovsproc.PMDRxqShow(ctx, ctl)
	if errors.Is(err, ovsproc.ErrNoDatapath) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	pmds := make([]dsa.PMD, len(threads))
	for i, t := range threads {
		pmds[i] = dsa.PMD{Core: t.Core, NUMA: t.NUMA, Isolated: t.Isolated, Rxqs: make([]dsa.PMDRxq, len(t.Rxqs))}
		for j, q := range t.Rxqs {
			pmds[i].Rxqs[j] = dsa.PMDRxq{Port: q.Port, Queue: q.Queue, Enabled: q.Enabled, UsagePct: q.UsagePct}
		}
	}
	return pmds, nil
}

// readPMDs is ReadPMDs on the ovs-vswitchd behind sock, within the plugin's unixctl timeout.
func (p *Plugin) readPMDs(ctx context.Context, sock vswitchdSocket) ([]dsa.PMD, error) {
	ctl, err := sock.resolve()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.ucTimeout)
	defer cancel()
	return ReadPMDs(ctx, ctl)
}

// getThreshold reads the vhost async threshold of a capable ovs-vswitchd.
func (p *Plugin) getThreshold(ctx context.Context, sock vswitchdSocket) (int, error) {
	out, err := p.unixctl(ctx, sock, dsa.VhostAsyncThreshGetCommand)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", dsa.VhostAsyncThreshGetCommand, err)
	}
	got, err := strconv.Atoi(firstNumber.FindString(out))
	if err != nil {
		return 0, fmt.Errorf("%s answered %.80q, no threshold in it", dsa.VhostAsyncThreshGetCommand, out)
	}
	return got, nil
}

// CoverageCommand is the appctl command whose counters tell whether DMA copies happened.
const CoverageCommand = "coverage/show"

// dmaCopies reads ovs-vswitchd's coverage counters and says whether vhost async copies
// happened (true only when a vhost_async_* counter is nonzero): "seen (N vhost_async_* counters)", "none yet" (no copy offloaded since start, e.g.
// no traffic or all below the threshold), or "unknown: <why>".
func (p *Plugin) dmaCopies(ctx context.Context, sock vswitchdSocket) (string, bool) {
	out, err := p.unixctl(ctx, sock, CoverageCommand)
	if err != nil {
		return "unknown: " + err.Error(), false
	}
	cov, err := dsa.ParseVhostAsyncCoverage(out)
	switch {
	case err != nil:
		return "unknown: " + err.Error(), false
	case cov.Active:
		return fmt.Sprintf("seen (%d vhost_async counters)", len(cov.Counters)), true
	}
	return "none yet", false
}
