package fabric

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-logr/logr"
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ovsplane/ovsplane/overlay/fabric/model"
)

// Table names of the Overlay_Fabric schema.
const (
	tableGlobal = "Fabric_Global"
	tableNode   = "Node"
	tableLink   = "Link"
	tableRoutes = "Route_Table"
)

// Limits on what the client accepts; the schema bounds the same columns.
const (
	// MaxEndpoints bounds Config.Endpoints (a cluster has at most a handful of members).
	MaxEndpoints = 7
	// MaxNameLen bounds node names and carrier names, in bytes.
	MaxNameLen = 64
	// MaxSetSize bounds a node's carriers and underlay addresses.
	MaxSetSize = 16
	// MaxNodes bounds the nodes of one route publish (the schema's Node maxRows).
	MaxNodes = 16384
	// MaxRoutesPerNode bounds one node's route table.
	MaxRoutesPerNode = 1024
	// MaxNextHopLen bounds one next-hop value, in bytes.
	MaxNextHopLen = 256
	// MaxVersion bounds route versions: OVSDB integers travel as JSON numbers, exact up to 2^53.
	MaxVersion = 1 << 53
	// DefaultMaxAttempts is Config.MaxAttempts when zero.
	DefaultMaxAttempts = 100
)

// Errors the client returns, wrapped with the object and the fix; test with errors.Is.
var (
	// ErrInvalid marks bad input (a name, size or bound); nothing was written.
	ErrInvalid = errors.New("invalid fabric request")
	// ErrConflict marks a write that contradicts the database: a stale or skipped version, or
	// a version already published with other tables.
	ErrConflict = errors.New("fabric conflict")
	// ErrUnknownNode marks an operation naming a node that never registered.
	ErrUnknownNode = errors.New("unknown fabric node")
	// ErrFenced marks a publish whose controller lease has been taken over.
	ErrFenced = errors.New("controller lease lost")
)

// Config configures Open.
type Config struct {
	// Endpoints are the cluster members' OVSDB endpoints (unix:PATH, tcp:HOST:PORT or
	// ssl:…), 1 to MaxEndpoints. Required.
	Endpoints []string
	// AnyMember lets the client use a member that is not the leader (reads may then lag
	// behind writes; followers forward writes to the leader). The default talks only to the
	// leader.
	AnyMember bool
	// ConnectTimeout bounds each connection attempt; 0 means 5 s.
	ConnectTimeout time.Duration
	// MaxAttempts bounds the tries of one operation across reconnects and lost races; 0 means
	// DefaultMaxAttempts.
	MaxAttempts int
	// Now is the clock used for last-seen times and lease expiry; nil means time.Now.
	Now func() time.Time
	// Logger receives libovsdb's warnings; nil means slog.Default().
	Logger *slog.Logger
}

// Client is a connection to the fabric database. Its methods are safe for concurrent use.
type Client struct {
	c        client.Client
	now      func() time.Time
	attempts int
	watch    watcher
	ids      nodeIDs    // Node _uuid by name: acks and heartbeats address rows without a scan
	tables   tableCache // Route_Table rows' next hops by _uuid: a publish reads only new rows
}

// Open connects to the cluster (to its leader unless cfg.AnyMember) and returns a client that
// reconnects by itself until Close. It fails when cfg is invalid, no member answers within
// ctx, or the server's schema does not match the models.
func Open(ctx context.Context, cfg Config) (*Client, error) {
	if len(cfg.Endpoints) == 0 || len(cfg.Endpoints) > MaxEndpoints {
		return nil, fmt.Errorf("%w: %d endpoints: give 1 to %d cluster members", ErrInvalid, len(cfg.Endpoints), MaxEndpoints)
	}
	if cfg.MaxAttempts < 0 || cfg.ConnectTimeout < 0 {
		return nil, fmt.Errorf("%w: negative MaxAttempts or ConnectTimeout", ErrInvalid)
	}
	dbModel, err := model.FullDatabaseModel()
	if err != nil {
		return nil, fmt.Errorf("fabric: database model: %w", err)
	}
	var opts []client.Option
	for _, ep := range cfg.Endpoints {
		scheme, rest, ok := strings.Cut(ep, ":")
		if !ok || rest == "" || (scheme != "unix" && scheme != "tcp" && scheme != "ssl") {
			return nil, fmt.Errorf("%w: endpoint %q: use unix:PATH, tcp:HOST:PORT or ssl:HOST:PORT", ErrInvalid, ep)
		}
		opts = append(opts, client.WithEndpoint(ep))
	}
	timeout := cfg.ConnectTimeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	exp := backoff.NewExponentialBackOff()
	exp.InitialInterval = 50 * time.Millisecond
	exp.MaxInterval = time.Second
	exp.MaxElapsedTime = 0 // libovsdb must never give up reconnecting; Close ends it
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	lr := logr.FromSlogHandler(warnOnly{logger.With("component", "libovsdb").Handler()})
	opts = append(opts, client.WithLeaderOnly(!cfg.AnyMember), client.WithReconnect(timeout, exp),
		client.WithLogger(&lr))
	c, err := client.NewOVSDBClient(dbModel, opts...)
	if err != nil {
		return nil, fmt.Errorf("fabric: new client: %w", err)
	}
	if err := c.Connect(ctx); err != nil {
		return nil, fmt.Errorf("fabric: connect to %s: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	attempts := cfg.MaxAttempts
	if attempts == 0 {
		attempts = DefaultMaxAttempts
	}
	return &Client{c: c, now: now, attempts: attempts}, nil
}

// Close disconnects and stops reconnecting. Calls after Close fail.
func (c *Client) Close() { c.c.Close() }

// warnOnly passes libovsdb's warnings and errors on and drops its chatter.
type warnOnly struct{ slog.Handler }

// Enabled reports whether level is at least a warning.
func (w warnOnly) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= slog.LevelWarn && w.Handler.Enabled(ctx, level)
}

// transact runs ops once and returns the results, or an error naming the failed operation.
func (c *Client) transact(ctx context.Context, ops ...ovsdb.Operation) ([]ovsdb.OperationResult, error) {
	res, err := c.c.Transact(ctx, ops...)
	if err != nil {
		return nil, fmt.Errorf("fabric: transact: %w", err)
	}
	if opErrs, err := ovsdb.CheckOperationResults(res, ops); err != nil {
		details := make([]string, 0, len(opErrs))
		for _, e := range opErrs {
			details = append(details, e.Error())
		}
		return nil, fmt.Errorf("fabric: transaction failed: %w: %s", err, strings.Join(details, "; "))
	}
	return res, nil
}

// retry runs attempt until it returns done or a permanent error, at most c.attempts times,
// pausing briefly between tries (a new leader takes a moment to be elected). tried tells an
// attempt whether an earlier one was sent, whose commit it may find.
func (c *Client) retry(ctx context.Context, what string, attempt func(ctx context.Context, tried bool) (done bool, err error)) error {
	var last error
	for i := range c.attempts {
		done, err := attempt(ctx, i > 0)
		if err == nil && done {
			return nil
		}
		if err != nil {
			if errors.Is(err, ErrInvalid) || errors.Is(err, ErrConflict) || errors.Is(err, ErrUnknownNode) || errors.Is(err, ErrFenced) {
				return err
			}
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("fabric: %s: %w (last error: %v)", what, ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("fabric: %s: gave up after %d attempts: %w", what, c.attempts, last)
}

// selectRows reads columns of the rows of table matching where (never empty: OVSDB needs a
// condition, so callers pass one that every row meets when they want all rows).
func (c *Client) selectRows(ctx context.Context, table string, where []ovsdb.Condition, columns ...string) ([]ovsdb.Row, error) {
	res, err := c.transact(ctx, ovsdb.Operation{Op: ovsdb.OperationSelect, Table: table, Where: where, Columns: columns})
	if err != nil {
		return nil, err
	}
	return res[0].Rows, nil
}

// eq is the condition column == value.
func eq(column string, value any) ovsdb.Condition {
	return ovsdb.NewCondition(column, ovsdb.ConditionEqual, value)
}

// waitEqual is a wait operation that aborts the transaction unless the rows of table matching
// where are exactly rows (over columns) right now.
func waitEqual(table string, where []ovsdb.Condition, columns []string, rows []ovsdb.Row) ovsdb.Operation {
	zero := 0
	return ovsdb.Operation{Op: ovsdb.OperationWait, Table: table, Where: where, Columns: columns,
		Until: string(ovsdb.WaitConditionEqual), Rows: rows, Timeout: &zero}
}

// rowInt reads an integer column of a selected row.
func rowInt(r ovsdb.Row, col string) (int64, error) {
	switch v := r[col].(type) {
	case float64:
		return int64(v), nil
	case int:
		return int64(v), nil
	case int64:
		return v, nil
	}
	return 0, fmt.Errorf("fabric: column %s is %T, not an integer", col, r[col])
}

// rowString reads a string column of a selected row.
func rowString(r ovsdb.Row, col string) (string, error) {
	s, ok := r[col].(string)
	if !ok {
		return "", fmt.Errorf("fabric: column %s is %T, not a string", col, r[col])
	}
	return s, nil
}

// rowStrings reads a set-of-strings column of a selected row (a one-element set comes as the
// bare element).
func rowStrings(r ovsdb.Row, col string) ([]string, error) {
	switch v := r[col].(type) {
	case string:
		return []string{v}, nil
	case ovsdb.OvsSet:
		out := make([]string, 0, len(v.GoSet))
		for _, e := range v.GoSet {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("fabric: column %s holds %T, not strings", col, e)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("fabric: column %s is %T, not a set", col, r[col])
}

// rowMap reads a string-to-string map column of a selected row.
func rowMap(r ovsdb.Row, col string) (map[string]string, error) {
	m, ok := r[col].(ovsdb.OvsMap)
	if !ok {
		return nil, fmt.Errorf("fabric: column %s is %T, not a map", col, r[col])
	}
	out := make(map[string]string, len(m.GoMap))
	for k, v := range m.GoMap {
		ks, ok1 := k.(string)
		vs, ok2 := v.(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("fabric: column %s holds %T→%T, not strings", col, k, v)
		}
		out[ks] = vs
	}
	return out, nil
}
