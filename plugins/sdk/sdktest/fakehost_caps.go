package sdktest

import (
	"errors"

	"github.com/ovsplane/ovsplane/plugins/api"
)

// Events delivers one batch to the Watcher and checks the answer with api.ValidateChanges.
func (h *FakeHost) Events(batch api.PortEventBatch) ([]api.InterfaceChange, error) {
	w := h.Conn().Watcher
	if err := h.ready("OnPortEvents", nilIfNone(w)); err != nil {
		return nil, err
	}
	ctx, cancel := h.ctx()
	defer cancel()
	changes, err := w.OnPortEvents(ctx, batch)
	if err == nil {
		err = api.ValidateChanges(batch, changes)
	}
	h.record("OnPortEvents", "", err)
	if err != nil {
		return nil, err
	}
	return changes, nil
}

// Contribute calls Contribute and checks the answer with api.ValidateGlobalConfig.
func (h *FakeHost) Contribute() (api.GlobalConfig, error) {
	g := h.Conn().GlobalConfig
	if err := h.ready("Contribute", nilIfNone(g)); err != nil {
		return api.GlobalConfig{}, err
	}
	ctx, cancel := h.ctx()
	defer cancel()
	contribution, err := g.Contribute(ctx)
	if err == nil {
		err = api.ValidateGlobalConfig(contribution)
	}
	h.record("Contribute", "", err)
	if err != nil {
		return api.GlobalConfig{}, err
	}
	return contribution, nil
}

// Flows calls Flows for a bridge and checks the answer with api.ValidateFlowSet against the
// host's cookie and group ranges.
func (h *FakeHost) Flows(bridge api.BridgeFacts) (api.FlowSet, error) {
	f := h.Conn().FlowProgram
	if err := h.ready("Flows", nilIfNone(f)); err != nil {
		return api.FlowSet{}, err
	}
	ctx, cancel := h.ctx()
	defer cancel()
	fs, err := f.Flows(ctx, bridge)
	if err == nil {
		err = api.ValidateFlowSet(h.Cookies, h.Groups, fs)
	}
	h.record("Flows", bridge.Name, err)
	if err != nil {
		return api.FlowSet{}, err
	}
	return fs, nil
}

// StartJob calls DataPath.Start.
func (h *FakeHost) StartJob(job api.Job) (string, error) {
	d := h.Conn().DataPath
	if err := h.ready("Start", nilIfNone(d)); err != nil {
		return "", err
	}
	ctx, cancel := h.ctx()
	defer cancel()
	status, err := d.Start(ctx, job)
	h.record("Start", job.Name, err)
	return status, err
}

// StopJob calls DataPath.Stop.
func (h *FakeHost) StopJob(name string) error {
	d := h.Conn().DataPath
	if err := h.ready("Stop", nilIfNone(d)); err != nil {
		return err
	}
	ctx, cancel := h.ctx()
	defer cancel()
	err := d.Stop(ctx, name)
	h.record("Stop", name, err)
	return err
}

// errEnough ends a stats stream once enough samples arrived.
var errEnough = errors.New("sdktest: enough samples")

// Stats opens a stats stream, collects n samples and ends the stream (as the host does by
// cancelling). It fails when the stream ends, or the Timeout passes, before n samples.
func (h *FakeHost) Stats(req api.StatsRequest, n int) ([]api.StatsSample, error) {
	d := h.Conn().DataPath
	if err := h.ready("Stats", nilIfNone(d)); err != nil {
		return nil, err
	}
	ctx, cancel := h.ctx()
	defer cancel()
	var samples []api.StatsSample
	err := d.Stats(ctx, req, func(s api.StatsSample) error {
		samples = append(samples, s)
		if len(samples) >= n {
			return errEnough
		}
		return nil
	})
	switch {
	case errors.Is(err, errEnough):
		err = nil
	case err == nil:
		err = api.Errorf(api.Unavailable, "sdktest: stats stream ended after %d of %d samples", len(samples), n)
	}
	h.record("Stats", "", err)
	return samples, err
}
