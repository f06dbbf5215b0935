package flowmonplugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/flowmon/gen"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// Generator job bounds.
const (
	// RecvGrace is how long the receiver keeps counting after the last frame was sent, for
	// frames still in flight through OVS.
	RecvGrace = 500 * time.Millisecond
	// MaxFlowMetrics bounds the per-flow metrics of a stats sample (the totals cover all).
	MaxFlowMetrics = 64
)

// genJob is one flowmon-gen job: one run of the generator, with its receiver counting per
// flow; the job stays (with its report) after the run until it is stopped.
type genJob struct {
	jobName string
	cfg     []byte
	set     genSettings
	log     *slog.Logger
	g       *gen.Generator
	rx      *gen.Receiver // nil without receive_interface
	cancel  context.CancelFunc
	done    chan struct{}

	mu     sync.Mutex
	report *gen.Report // set when the run ended
	err    error       // the run's error, not a stop's
}

// startGen opens the generator (and the receiver) and runs it once.
func (p *Plugin) startGen(name string, cfg []byte, set genSettings) (*genJob, error) {
	if set.spec.SrcMAC == nil {
		ifc, err := net.InterfaceByName(set.cfg.Interface)
		if err != nil || len(ifc.HardwareAddr) != 6 {
			return nil, api.Errorf(api.FailedPrecondition, "job %s: config.interface %s: %v: name an Ethernet interface that exists, or set src_mac", name, set.cfg.Interface, err)
		}
		set.spec.SrcMAC = ifc.HardwareAddr
	}
	j := &genJob{jobName: name, cfg: cfg, set: set, log: p.log.With("job", name), done: make(chan struct{})}
	if set.cfg.ReceiveInterface != "" {
		rx, err := gen.NewReceiver(gen.ReceiverSpec{Interface: set.cfg.ReceiveInterface, Flows: set.cfg.Flows})
		if err != nil {
			return nil, api.Errorf(api.FailedPrecondition, "job %s: config.receive_interface: %v", name, err)
		}
		j.rx = rx
	}
	g, err := gen.NewGenerator(set.spec)
	if err != nil {
		if j.rx != nil {
			_ = j.rx.Close()
		}
		return nil, api.Errorf(api.FailedPrecondition, "job %s: config.interface: %v", name, err)
	}
	j.g = g
	ctx, cancel := context.WithCancel(p.life)
	j.cancel = cancel
	go j.run(ctx)
	j.log.Info("flowmon generator started", "run", set.String())
	return j, nil
}

// run sends, lets the receiver count the frames in flight, and keeps the report.
func (j *genJob) run(ctx context.Context) {
	defer close(j.done)
	rxCtx, stopRx := context.WithCancel(context.WithoutCancel(ctx))
	rxDone := make(chan error, 1)
	if j.rx != nil {
		go func() { rxDone <- j.rx.Run(rxCtx) }()
	} else {
		rxDone <- nil
	}
	sent, err := j.g.Run(ctx)
	if ctx.Err() == nil {
		t := time.NewTimer(RecvGrace)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	stopRx()
	rxErr := <-rxDone
	var recv gen.Received
	if j.rx != nil {
		recv = j.rx.Snapshot()
		_ = j.rx.Close()
	}
	rep := gen.NewReport(sent, recv)
	if errors.Is(err, context.Canceled) {
		err = nil // stopped, not failed
	}
	err = errors.Join(err, rxErr)
	j.mu.Lock()
	j.report, j.err = &rep, err
	j.mu.Unlock()
	j.log.Info("flowmon generator ended", "sent", rep.SentPackets, "received", rep.RecvPackets, "lost", rep.Lost, "err", err)
}

func (j *genJob) name() string   { return j.jobName }
func (j *genJob) typ() string    { return JobGen }
func (j *genJob) config() []byte { return j.cfg }

// stop ends the run early (if it still runs).
func (j *genJob) stop(ctx context.Context) error {
	j.cancel()
	select {
	case <-j.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("job %s: stop: %w", j.jobName, ctx.Err())
	}
}

// problems: a run that ended with an error fails the job; loss is a measurement, in Stats.
func (j *genJob) problems() ([]string, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return []string{fmt.Sprintf("job %s: the generator run failed: %v", j.jobName, j.err)}, true
	}
	return nil, false
}

// metrics: running, then (once ended) sent, received and lost in total and per flow; while
// running the receiver's live counts per flow.
func (j *genJob) metrics() []api.Metric {
	j.mu.Lock()
	rep := j.report
	j.mu.Unlock()
	if rep == nil {
		m := []api.Metric{gauge("flowmon_gen_running", 1, nil)}
		if j.rx != nil {
			recv := j.rx.Snapshot()
			var total uint64
			for i, f := range recv.Flows {
				total += f.Packets
				if i < MaxFlowMetrics {
					m = append(m, counter("flowmon_gen_flow_received_packets", float64(f.Packets), map[string]string{"flow": strconv.Itoa(i)}))
				}
			}
			m = append(m, counter("flowmon_gen_received_packets", float64(total), nil))
		}
		return m
	}
	m := []api.Metric{gauge("flowmon_gen_running", 0, nil),
		counter("flowmon_gen_sent_packets", float64(rep.SentPackets), nil),
		counter("flowmon_gen_received_packets", float64(rep.RecvPackets), nil),
		gauge("flowmon_gen_lost_packets", float64(rep.Lost), nil),
		gauge("flowmon_gen_loss_ratio", rep.LossRatio, nil),
		gauge("flowmon_gen_sent_pps", rep.SentPPS, nil),
		gauge("flowmon_gen_received_pps", rep.RecvPPS, nil)}
	for i, f := range rep.Flows {
		if i >= MaxFlowMetrics {
			break
		}
		l := map[string]string{"flow": strconv.Itoa(i), "src": f.Src, "dst": f.Dst}
		m = append(m, counter("flowmon_gen_flow_sent_packets", float64(f.SentPackets), l),
			counter("flowmon_gen_flow_received_packets", float64(f.RecvPackets), l))
	}
	return m
}
