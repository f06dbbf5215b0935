package flowmonplugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ovsplane/ovsplane/flowmon/query"
	"github.com/ovsplane/ovsplane/flowmon/store"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// RetainEvery is how often a collector drops the day partitions older than its retention.
const RetainEvery = time.Hour

// SocketPath is the query socket of collector job name when query_socket is not set: name.sock
// in the plugin's data dir (<data_dir>/plugin-data/flowmon), where the daemon's API looks.
func SocketPath(dataDir, name string) string {
	return filepath.Join(dataDir, name+".sock")
}

// collectorJob is one running flowmon-collector job: its store, its ingest path and the query
// socket.
type collectorJob struct {
	jobName string
	cfg     []byte
	set     collectorSettings
	started time.Time
	log     *slog.Logger
	st      store.Store
	spec    StoreSpec
	socket  string
	srv     *http.Server
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	ing     *ingest

	mu        sync.Mutex
	failed    string // why the job ended, "" while it runs
	retainErr string // the last retention error, "" after a success
	retained  int    // partitions dropped so far
}

// startCollector opens the store, the receivers and the query socket of a collector job, all
// or nothing, and runs them until life ends or stop.
func (p *Plugin) startCollector(ctx context.Context, name string, cfg []byte, dir string, set collectorSettings) (*collectorJob, error) {
	if p.opts.OpenStore == nil {
		return nil, api.Errorf(api.FailedPrecondition, "job %s: this build of the flowmon plugin has no stores: use the ovsplane-plugin-flowmon binary", name)
	}
	j := &collectorJob{jobName: name, cfg: cfg, set: set, started: time.Now(), log: p.log.With("job", name)}
	sc := set.cfg.Store
	j.spec = StoreSpec{Kind: sc.Kind, DSN: sc.DSN, Retention: time.Duration(sc.RetentionDays) * 24 * time.Hour}
	if sc.Kind == StoreEmbedded {
		j.spec.Path = sc.path(dir)
	}
	j.socket = set.cfg.QuerySocket
	if j.socket == "" {
		j.socket = SocketPath(dir, name)
		if len(j.socket) > MaxSocketPath {
			return nil, api.Errorf(api.FailedPrecondition, "job %s: config.query_socket: the default %s is %d bytes, more than a unix socket path holds (%d): set query_socket to a shorter path (the daemon's API then cannot find it; use flowmon query --socket)",
				name, j.socket, len(j.socket), MaxSocketPath)
		}
	}
	st, err := p.opts.OpenStore(ctx, j.spec)
	if err != nil {
		field := "config.store.path"
		if sc.Kind == StorePostgres {
			field = "config.store.dsn"
		}
		return nil, api.Errorf(api.FailedPrecondition, "job %s: %s: opening the %s store: %v", name, field, sc.Kind, err)
	}
	j.st = st
	ln, err := listenSocket(j.socket)
	if err != nil {
		_ = st.Close()
		return nil, api.Errorf(api.FailedPrecondition, "job %s: config.query_socket: %v", name, err)
	}
	jctx, cancel := context.WithCancel(p.life)
	j.cancel = cancel
	j.ing, err = startIngest(jctx, j, p.bridgeFacts())
	if err != nil {
		cancel()
		_ = ln.Close()
		_ = os.Remove(j.socket)
		_ = st.Close()
		return nil, err
	}
	j.srv = &http.Server{
		Handler: query.NewHandler(query.ServeOptions{Run: st.Query, Status: j.queryStatus, Timeout: set.queryTimeout}),
		// A query socket client sends a GET with a bounded query string: small limits.
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, MaxHeaderBytes: 2 * query.MaxParamBytes,
		WriteTimeout: set.queryTimeout + 30*time.Second, // the query's run and the answer's write
		IdleTimeout:  time.Minute,
	}
	j.wg.Go(func() {
		if err := j.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			j.fail(fmt.Sprintf("query socket %s: %v", j.socket, err))
		}
	})
	j.wg.Go(func() { j.retain(jctx) })
	j.log.Info("flowmon collector started", "listen", strings.Join(set.cfg.Listen, ","), "store", sc.Kind, "socket", j.socket)
	return j, nil
}

// listenSocket listens on a unix socket at path, replacing a stale socket file (not any other
// kind of file), readable and writable by the daemon's user and group only.
func listenSocket(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("the socket's directory: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket: remove it or choose another path", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			_ = c.Close()
			return nil, fmt.Errorf("%s is served by another process (another collector job?): stop it or choose another path", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("removing the stale socket %s: %w", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o660); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ln, nil
}

// retain drops expired partitions at once and then every RetainEvery.
func (j *collectorJob) retain(ctx context.Context) {
	t := time.NewTicker(RetainEvery)
	defer t.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		n, err := j.st.Retain(rctx, time.Now().Add(-j.spec.Retention))
		cancel()
		j.mu.Lock()
		if err != nil && ctx.Err() == nil {
			j.retainErr = err.Error()
			j.log.Warn("dropping expired flow partitions", "err", err)
		} else if err == nil {
			j.retainErr = ""
			j.retained += n
		}
		j.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// fail records why the job ended.
func (j *collectorJob) fail(why string) {
	j.mu.Lock()
	if j.failed == "" {
		j.failed = why
	}
	j.mu.Unlock()
	j.log.Error("flowmon collector failed", "err", why)
}

func (j *collectorJob) name() string   { return j.jobName }
func (j *collectorJob) typ() string    { return JobCollector }
func (j *collectorJob) config() []byte { return j.cfg }

// stop ends the ingest (flushing what is buffered), the query socket and the store.
func (j *collectorJob) stop(ctx context.Context) error {
	j.cancel()
	var errs []error
	if err := j.ing.wait(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := j.srv.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("query socket: %w", err))
		_ = j.srv.Close()
	}
	j.wg.Wait()
	_ = os.Remove(j.socket)
	if err := j.st.Close(); err != nil {
		errs = append(errs, fmt.Errorf("closing the store: %w", err))
	}
	j.log.Info("flowmon collector stopped")
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("job %s: stop: %w", j.jobName, err)
	}
	return nil
}

// status is Start's status for humans.
func (j *collectorJob) status() string {
	where := j.spec.Path
	if j.spec.Kind == StorePostgres {
		where = "postgres"
	}
	return fmt.Sprintf("collecting on %s into %s; queries at unix:%s", strings.Join(j.set.cfg.Listen, ","), where, j.socket)
}

// queryStatus is the query socket's status answer.
func (j *collectorJob) queryStatus() query.Status {
	return query.Status{Job: j.jobName, Store: j.spec.Kind, Started: j.started.UTC(), Time: time.Now().UTC(), Counters: j.ing.counters()}
}

// problems says what is wrong with the job, for Health.
func (j *collectorJob) problems() ([]string, bool) {
	j.mu.Lock()
	failed, retainErr := j.failed, j.retainErr
	j.mu.Unlock()
	var out []string
	if failed != "" {
		out = append(out, fmt.Sprintf("job %s: %s", j.jobName, failed))
	}
	if retainErr != "" {
		out = append(out, fmt.Sprintf("job %s: dropping expired partitions: %s", j.jobName, retainErr))
	}
	out = append(out, j.ing.problems(j.jobName)...)
	return out, failed != ""
}

// metrics is the job's stats sample: the ingest counters and the partitions dropped.
func (j *collectorJob) metrics() []api.Metric {
	j.mu.Lock()
	retained := j.retained
	j.mu.Unlock()
	m := j.ing.metrics()
	return append(m, counter("flowmon_partitions_dropped", float64(retained), nil))
}

// updateFacts hands new bridge facts to the ingest's resolver.
func (j *collectorJob) updateFacts(bridges map[string]map[string]uint32) {
	if err := j.ing.updateFacts(bridges); err != nil {
		j.log.Warn("bridge facts for enrichment", "err", err)
	}
}
