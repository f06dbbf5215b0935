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
	rx      *gen.Receiver // nil without receive_interface
	cancel  context.CancelFunc
	done    chan struct{}

	mu     sync.Mutex
	report *gen.Report // set when the run ended
	err    error       // the run's error, not a stop's
}

// openGen opens the receiver (when configured) and the generator of a run, both or neither.
// what names the run in errors ("job NAME").
func openGen(what string, set *genSettings) (*gen.Generator, *gen.Receiver, error) {
	if set.spec.SrcMAC == nil {
		ifc, err := net.InterfaceByName(set.cfg.Interface)
		if err != nil || len(ifc.HardwareAddr) != 6 {
			return nil, nil, api.Errorf(api.FailedPrecondition, "%s: config.interface %s: %v: name an Ethernet interface that exists, or set src_mac", what, set.cfg.Interface, err)
		}
		set.spec.SrcMAC = ifc.HardwareAddr
	}
	var rx *gen.Receiver
	if set.cfg.ReceiveInterface != "" {
		var err error
		rx, err = gen.NewReceiver(gen.ReceiverSpec{Interface: set.cfg.ReceiveInterface, Flows: set.cfg.Flows})
		if err != nil {
			return nil, nil, api.Errorf(api.FailedPrecondition, "%s: config.receive_interface: %v", what, err)
		}
	}
	g, err := gen.NewGenerator(set.spec)
	if err != nil {
		if rx != nil {
			_ = rx.Close()
		}
		return nil, nil, api.Errorf(api.FailedPrecondition, "%s: config.interface: %v", what, err)
	}
	return g, rx, nil
}

// runGen sends, lets the receiver (nil: none) count the frames in flight for RecvGrace, and
// returns the report. A run ended by ctx is no error.
func runGen(ctx context.Context, g *gen.Generator, rx *gen.Receiver) (gen.Report, error) {
	rxCtx, stopRx := context.WithCancel(context.WithoutCancel(ctx))
	rxDone := make(chan error, 1)
	if rx != nil {
		go func() { rxDone <- rx.Run(rxCtx) }()
	} else {
		rxDone <- nil
	}
	sent, err := g.Run(ctx)
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
	if rx != nil {
		recv = rx.Snapshot()
		_ = rx.Close()
	}
	if errors.Is(err, context.Canceled) {
		err = nil // stopped, not failed
	}
	return gen.NewReport(sent, recv), errors.Join(err, rxErr)
}

// RunGenerator runs one generator run in this process as a flowmon-gen job's configuration
// (JSON) describes it and returns its report: `flowmon gen`. ctx ends the run early.
func RunGenerator(ctx context.Context, config []byte) (gen.Report, error) {
	set, err := parseGen(config)
	if err != nil {
		return gen.Report{}, err
	}
	g, rx, err := openGen("flowmon gen", &set)
	if err != nil {
		return gen.Report{}, err
	}
	return runGen(ctx, g, rx)
}

// startGen opens the generator (and the receiver) and runs it once.
func (p *Plugin) startGen(name string, cfg []byte, set genSettings) (*genJob, error) {
	g, rx, err := openGen("job "+name, &set)
	if err != nil {
		return nil, err
	}
	j := &genJob{jobName: name, cfg: cfg, set: set, log: p.log.With("job", name), rx: rx, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(p.life)
	j.cancel = cancel
	go func() {
		defer close(j.done)
		rep, err := runGen(ctx, g, rx)
		j.mu.Lock()
		j.report, j.err = &rep, err
		j.mu.Unlock()
		j.log.Info("flowmon generator ended", "sent", rep.SentPackets, "received", rep.RecvPackets, "lost", rep.Lost, "err", err)
	}()
	j.log.Info("flowmon generator started", "run", set.String())
	return j, nil
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
		counter("flowmon_gen_receiver_kernel_drops", float64(rep.KernelDrops), nil),
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
