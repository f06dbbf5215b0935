//go:build linux

package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"
)

// iperfResult is the part of iperf3's --json output the lab reads.
type iperfResult struct {
	Error string `json:"error"`
	End   struct {
		SumSent struct {
			Retransmits int `json:"retransmits"`
		} `json:"sum_sent"`
		SumReceived struct {
			Bytes         int64   `json:"bytes"`
			Seconds       float64 `json:"seconds"`
			BitsPerSecond float64 `json:"bits_per_second"`
		} `json:"sum_received"`
	} `json:"end"`
}

// Iperf3 measures TCP throughput from namespace client to serverIP in namespace server (nil:
// the test's own) with iperf3: a one-shot server (iperf3 -s -1) on a random port bound to
// serverIP, and a client sending n bytes (-n n --json). It returns what the receiver measured.
// iperf3 stops counting on the receiver when the sender reports the end of the test, so
// Bytes is usually somewhat below n (the rest was still in socket buffers); use TCPTransfer
// to prove delivery. err is non-nil when either side fails, nothing arrives, or ctx ends; the
// server is always stopped before Iperf3 returns.
func Iperf3(ctx context.Context, client, server *Netns, serverIP string, n int64) (TransferStats, error) {
	var err error
	for range 3 { // a random port can be taken; try another
		var st TransferStats
		st, err = iperf3Once(ctx, client, server, serverIP, n, 20000+rand.IntN(40000))
		if err == nil || !errors.Is(err, errListen) {
			return st, err
		}
	}
	return TransferStats{}, err
}

// errListen marks a server that could not listen.
var errListen = errors.New("iperf3 server did not start listening")

// iperf3Once is Iperf3 on one port.
func iperf3Once(ctx context.Context, client, server *Netns, ip string, n int64, port int) (TransferStats, error) {
	what := fmt.Sprintf("iperf3 of %d bytes from %s to %s:%d in %s", n, client, ip, port, server)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv := server.Command(sctx, "iperf3", "-s", "-1", "-B", ip, "-p", strconv.Itoa(port), "--forceflush")
	out := &markWriter{mark: "Server listening", seen: make(chan struct{})}
	srv.Stdout, srv.Stderr = out, out
	if err := srv.Start(); err != nil {
		return TransferStats{}, fmt.Errorf("%s: start server: %w", what, err)
	}
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Wait() }()
	select {
	case <-out.seen:
	case err := <-srvDone:
		return TransferStats{}, fmt.Errorf("%s: %w: %v: %s", what, errListen, err, out.String())
	case <-time.After(10 * time.Second):
		return TransferStats{}, fmt.Errorf("%s: %w within 10s: %s", what, errListen, out.String())
	}
	st, err := iperfClient(ctx, client, ip, port, n)
	if err != nil {
		cancel()
		<-srvDone
		return st, fmt.Errorf("%s: %w (server said: %s)", what, err, strings.TrimSpace(out.String()))
	}
	select {
	case <-srvDone:
	case <-time.After(5 * time.Second):
		cancel()
		<-srvDone
	}
	return st, nil
}

// iperfClient runs the iperf3 client and parses its JSON report.
func iperfClient(ctx context.Context, client *Netns, ip string, port int, n int64) (TransferStats, error) {
	out, runErr := client.Exec(ctx, "iperf3", "-c", ip, "-p", strconv.Itoa(port),
		"-n", strconv.FormatInt(n, 10), "--json", "--connect-timeout", "5000")
	var res iperfResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		return TransferStats{}, fmt.Errorf("client: %w (parse JSON: %v)", runErr, err)
	}
	if res.Error != "" || runErr != nil {
		return TransferStats{}, fmt.Errorf("client: %s: %w", res.Error, runErr)
	}
	r := res.End.SumReceived
	st := TransferStats{Bytes: r.Bytes, Seconds: r.Seconds, BitsPerSecond: r.BitsPerSecond,
		Retransmits: res.End.SumSent.Retransmits}
	if st.Bytes == 0 {
		return st, fmt.Errorf("client: the server received nothing")
	}
	return st, nil
}

// markWriter collects output and closes seen once mark appears in it.
type markWriter struct {
	mark string
	seen chan struct{}

	mu     sync.Mutex
	buf    bytes.Buffer
	closed bool
}

// Write implements io.Writer.
func (w *markWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.closed && strings.Contains(w.buf.String(), w.mark) {
		w.closed = true
		close(w.seen)
	}
	return len(p), nil
}

// String returns the output so far.
func (w *markWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
