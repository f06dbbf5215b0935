// Package unixctltest is a fake ovs-vswitchd unixctl server for tests: it listens on a unix
// socket named like ovs-vswitchd's (<run dir>/ovs-vswitchd.ctl, which ovsproc.VswitchdCtl
// finds) and speaks the daemon's JSON-RPC 1.0 (a stream of {"method","params","id"} requests
// per connection, each answered {"id","result","error"}). It answers the few commands the dsa
// plugin asks: list-commands (Debian 12's ovs-vswitchd-dpdk 3.1 command set, captured, plus the
// vhost async commands of Intel's dpdk-dma-tracking branch when asked to be capable),
// version, dpif-netdev/pmd-rxq-show and coverage/show (texts the test sets), and
// netdev-dpdk/set-vhost-async-thresh / get-vhost-async-thresh (the value is recorded). Other
// commands are refused the way OVS refuses them. The texts of the branch's own replies are not
// public; the fake's are its own.
//
// It is test support: product code must not import it.
package unixctltest

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ovsplane/ovsplane/internal/testkit"
)

//go:embed testdata/ovs3.1-dpdk-list-commands.txt
var stockCommandList string

//go:embed testdata/ovs3.1-dpdk-coverage-show.txt
var stockCoverage string

//go:embed testdata/ovs3.1-dpdk-pmd-rxq-show.txt
var stockPMDRxqShow string

// StockCommandList returns Debian 12's ovs-vswitchd-dpdk 3.1.0 reply to list-commands,
// captured over unixctl: no vhost async commands.
func StockCommandList() string { return stockCommandList }

// StockCoverage returns the same daemon's reply to coverage/show, with two vhost-user ports
// and no traffic: no vhost_async_* counters.
func StockCoverage() string { return stockCoverage }

// StockPMDRxqShow returns the same daemon's reply to dpif-netdev/pmd-rxq-show with two
// dpdkvhostuserclient ports (vhu0, vhu1) on the PMD thread of core 1 (NUMA 0), before the
// first usage measurement.
func StockPMDRxqShow() string { return stockPMDRxqShow }

// The vhost async commands of the capable build, as list-commands shows them.
const (
	SetThreshCommand = "netdev-dpdk/set-vhost-async-thresh"
	GetThreshCommand = "netdev-dpdk/get-vhost-async-thresh"
)

// NoDatapathError is the daemon's refusal of dpif-netdev/pmd-rxq-show without a userspace
// datapath.
const NoDatapathError = "please specify an existing datapath"

// DefaultThresh is the capable build's default offload threshold, in bytes.
const DefaultThresh = 128

// maxRequest bounds one request the fake reads.
const maxRequest = 64 << 10

// Options configure a Server.
type Options struct {
	// VhostAsync makes list-commands offer the vhost async commands and the server answer
	// them, like Intel's dpdk-dma-tracking build; without it they are unknown commands.
	VhostAsync bool
	// PMDRxqShow is the reply to dpif-netdev/pmd-rxq-show; "" makes the server refuse it
	// with NoDatapathError, as ovs-vswitchd does without a netdev bridge.
	PMDRxqShow string
	// Coverage is the reply to coverage/show (default StockCoverage()).
	Coverage string
	// Version is the reply to version (default "ovs-vswitchd (Open vSwitch) 3.1.0").
	Version string
	// RunDir is the directory the socket ovs-vswitchd.ctl is made in (default: a new short
	// temporary directory, removed at the end of the test).
	RunDir string
}

// Call is one request the server received.
type Call struct {
	Method string
	Params []string
}

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	// RunDir is the directory of the socket; Path the socket (RunDir/ovs-vswitchd.ctl).
	RunDir, Path string

	ln net.Listener
	wg sync.WaitGroup

	mu       sync.Mutex
	opts     Options
	thresh   int
	threshOK bool // set-vhost-async-thresh was called
	calls    []Call
	conns    map[net.Conn]bool
	closed   bool
}

// Start starts a fake ovs-vswitchd unixctl server and stops it at the end of the test.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	if opts.Coverage == "" {
		opts.Coverage = stockCoverage
	}
	if opts.Version == "" {
		opts.Version = "ovs-vswitchd (Open vSwitch) 3.1.0"
	}
	if opts.RunDir == "" {
		opts.RunDir = testkit.ShortTempDir(tb, "uxt")
	}
	s := &Server{RunDir: opts.RunDir, Path: filepath.Join(opts.RunDir, "ovs-vswitchd.ctl"), opts: opts,
		thresh: DefaultThresh, conns: map[net.Conn]bool{}}
	ln, err := net.Listen("unix", s.Path)
	if err != nil {
		tb.Fatalf("unixctltest: %v", err)
	}
	s.ln = ln
	s.wg.Add(1)
	go s.accept()
	tb.Cleanup(s.Close)
	return s
}

// Close stops the server and waits for its goroutines; later connections are refused.
func (s *Server) Close() {
	_ = s.ln.Close()
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// SetPMDRxqShow changes the reply to dpif-netdev/pmd-rxq-show ("" refuses it, see Options).
func (s *Server) SetPMDRxqShow(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.PMDRxqShow = text
}

// SetCoverage changes the reply to coverage/show.
func (s *Server) SetCoverage(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.Coverage = text
}

// Thresh returns the offload threshold (DefaultThresh until set) and whether
// set-vhost-async-thresh set it.
func (s *Server) Thresh() (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.thresh, s.threshOK
}

// Calls returns the requests received so far, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// CommandList returns the server's reply to list-commands.
func (s *Server) CommandList() string {
	if !s.opts.VhostAsync {
		return stockCommandList
	}
	return WithVhostAsyncCommands(stockCommandList)
}

// WithVhostAsyncCommands adds the vhost async commands to a list-commands reply, in OVS's
// sorted order and "  %-23s %s" layout.
func WithVhostAsyncCommands(list string) string {
	lines := strings.Split(strings.TrimSuffix(list, "\n"), "\n")
	add := []string{fmt.Sprintf("  %-23s %s", GetThreshCommand, ""), fmt.Sprintf("  %-23s %s", SetThreshCommand, "threshold")}
	out := []string{lines[0]}
	rest := append(slices.Clone(lines[1:]), add...)
	slices.SortStableFunc(rest, func(a, b string) int {
		return strings.Compare(firstField(a), firstField(b))
	})
	return strings.Join(append(out, rest...), "\n") + "\n"
}

func firstField(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = c.Close()
			return
		}
		s.conns[c] = true
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c)
	}
}

// request is a JSON-RPC request as OVS reads it.
type request struct {
	Method string            `json:"method"`
	Params []json.RawMessage `json:"params"`
	ID     json.RawMessage   `json:"id"`
}

// serve answers the requests of one connection until it closes.
func (s *Server) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		_ = c.Close()
	}()
	dec := json.NewDecoder(bufio.NewReader(io.LimitReader(c, maxRequest)))
	enc := json.NewEncoder(c)
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			return
		}
		result, rerr := s.handle(req)
		rep := struct {
			ID     json.RawMessage `json:"id"`
			Result any             `json:"result"`
			Error  any             `json:"error"`
		}{ID: req.ID}
		if rerr != nil {
			rep.Error = rerr.Error()
		} else {
			rep.Result = result
		}
		if err := enc.Encode(rep); err != nil {
			return
		}
	}
}

// command is one command the fake knows: its argument bounds and its handler.
type command struct {
	min, max int
	run      func(s *Server, args []string) (string, error)
}

// commands returns the fake's command table; the vhost async commands only when capable.
func (s *Server) commands() map[string]command {
	cmds := map[string]command{
		"list-commands": {0, 0, func(s *Server, _ []string) (string, error) { return s.CommandList(), nil }},
		"version":       {0, 0, func(s *Server, _ []string) (string, error) { return s.opts.Version + "\n", nil }},
		"coverage/show": {0, 0, func(s *Server, _ []string) (string, error) { return s.opts.Coverage, nil }},
		"dpif-netdev/pmd-rxq-show": {0, 5, func(s *Server, _ []string) (string, error) {
			if s.opts.PMDRxqShow == "" {
				return "", errors.New(NoDatapathError)
			}
			return s.opts.PMDRxqShow, nil
		}},
	}
	if s.opts.VhostAsync {
		cmds[SetThreshCommand] = command{1, 1, func(s *Server, args []string) (string, error) {
			n, err := strconv.ParseUint(args[0], 10, 32)
			if err != nil {
				return "", fmt.Errorf("invalid threshold %q", args[0])
			}
			s.thresh, s.threshOK = int(n), true
			return "", nil
		}}
		cmds[GetThreshCommand] = command{0, 0, func(s *Server, _ []string) (string, error) {
			return strconv.Itoa(s.thresh) + "\n", nil
		}}
	}
	return cmds
}

// handle runs one request and returns its result or its error, with OVS's unixctl messages
// for an unknown command, a wrong argument count and a non-string argument.
func (s *Server) handle(req request) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	args := make([]string, 0, len(req.Params))
	for _, p := range req.Params {
		var a string
		if err := json.Unmarshal(p, &a); err != nil {
			s.calls = append(s.calls, Call{Method: req.Method})
			return "", fmt.Errorf("command has non-string argument: %s", p)
		}
		args = append(args, a)
	}
	s.calls = append(s.calls, Call{Method: req.Method, Params: args})
	cmd, ok := s.commands()[req.Method]
	switch {
	case !ok:
		return "", fmt.Errorf("%q is not a valid command (use \"list-commands\" to see a list of valid commands)", req.Method)
	case len(args) < cmd.min:
		return "", fmt.Errorf("%q command requires at least %d arguments", req.Method, cmd.min)
	case len(args) > cmd.max:
		return "", fmt.Errorf("%q command takes at most %d arguments", req.Method, cmd.max)
	}
	return cmd.run(s, args)
}
