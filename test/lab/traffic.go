//go:build linux

package lab

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"time"
)

// PingStats summarises one ping run.
type PingStats struct {
	// Transmitted and Received count echo requests sent and replies received.
	Transmitted, Received int
	// AvgRTT is the mean round-trip time of the replies (zero without replies).
	AvgRTT time.Duration
}

// pingSummary and pingRTT match ping's closing statistics.
var (
	pingSummary = regexp.MustCompile(`(\d+) packets transmitted, (\d+) received`)
	pingRTT     = regexp.MustCompile(`= [\d.]+/([\d.]+)/`)
)

// Ping sends count echo requests 200 ms apart from namespace from (nil: the test's own) to ip
// (IPv4 or IPv6) and returns the statistics. err is non-nil when no reply came back at all,
// ping failed, or ctx ended; partial loss is not an error, check PingStats.Received.
func Ping(ctx context.Context, from *Netns, ip string, count int) (PingStats, error) {
	out, err := from.Exec(ctx, "ping", "-n", "-q", "-c", strconv.Itoa(count), "-i", "0.2", "-W", "2", ip)
	var st PingStats
	if m := pingSummary.FindStringSubmatch(out); m != nil {
		st.Transmitted, _ = strconv.Atoi(m[1])
		st.Received, _ = strconv.Atoi(m[2])
	}
	if m := pingRTT.FindStringSubmatch(out); m != nil {
		ms, _ := strconv.ParseFloat(m[1], 64)
		st.AvgRTT = time.Duration(ms * float64(time.Millisecond))
	}
	if err != nil {
		return st, fmt.Errorf("ping %s from %s: %w: %s", ip, from, err, out)
	}
	return st, nil
}

// TransferStats summarises one TCP transfer.
type TransferStats struct {
	// Bytes is what the receiver counted.
	Bytes int64
	// Seconds is how long the receiver measured.
	Seconds float64
	// BitsPerSecond is the receiver's throughput.
	BitsPerSecond float64
	// Retransmits counts the sender's TCP retransmissions (Iperf3 only; zero for TCPTransfer).
	Retransmits int
}

// TCPTransfer sends n bytes over one TCP connection from namespace client to serverIP in
// namespace server (nil: the test's own) and checks that exactly n bytes arrived: the
// receiver reads to EOF and reports its count back over the same connection. Both ends are
// sockets of the test process, created inside the namespaces with Netns.Do, so no helper
// program is needed. err is non-nil when the connection fails, the counts differ, or ctx ends.
func TCPTransfer(ctx context.Context, client, server *Netns, serverIP string, n int64) (TransferStats, error) {
	what := fmt.Sprintf("TCP transfer of %d bytes from %s to %s in %s", n, client, serverIP, server)
	var ln net.Listener
	err := server.Do(func() (err error) {
		var lc net.ListenConfig
		ln, err = lc.Listen(ctx, "tcp", net.JoinHostPort(serverIP, "0"))
		return err
	})
	if err != nil {
		return TransferStats{}, fmt.Errorf("%s: listen: %w", what, err)
	}
	defer ln.Close()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()

	type result struct {
		st  TransferStats
		err error
	}
	recv := make(chan result, 1)
	go func() {
		st, err := receive(ctx, ln)
		recv <- result{st, err}
	}()
	sendErr := send(ctx, client, ln.Addr().String(), n)
	if sendErr != nil {
		ln.Close() // unblocks Accept when the client never connected
	}
	r := <-recv
	if err := errors.Join(sendErr, r.err); err != nil {
		return r.st, fmt.Errorf("%s: %w", what, err)
	}
	return r.st, nil
}

// transferBuf is the read and write size of TCPTransfer.
const transferBuf = 256 << 10

// receive accepts one connection, reads it to EOF, and writes the byte count back.
func receive(ctx context.Context, ln net.Listener) (TransferStats, error) {
	conn, err := ln.Accept()
	if err != nil {
		return TransferStats{}, fmt.Errorf("accept: %w", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	start := time.Now()
	buf := make([]byte, transferBuf)
	var st TransferStats
	for {
		k, err := conn.Read(buf)
		st.Bytes += int64(k)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return st, fmt.Errorf("receive after %d bytes: %w", st.Bytes, err)
		}
	}
	st.Seconds = time.Since(start).Seconds()
	if st.Seconds > 0 {
		st.BitsPerSecond = float64(st.Bytes) * 8 / st.Seconds
	}
	if err := binary.Write(conn, binary.BigEndian, st.Bytes); err != nil {
		return st, fmt.Errorf("report count: %w", err)
	}
	return st, nil
}

// send connects from namespace client to addr, writes n bytes, half-closes and checks the
// count the receiver reports.
func send(ctx context.Context, client *Netns, addr string, n int64) error {
	var conn net.Conn
	err := client.Do(func() (err error) {
		var d net.Dialer
		conn, err = d.DialContext(ctx, "tcp", addr)
		return err
	})
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	buf := make([]byte, transferBuf)
	for i := range buf {
		buf[i] = byte(i)
	}
	for left := n; left > 0; {
		k, err := conn.Write(buf[:min(left, int64(len(buf)))])
		left -= int64(k)
		if err != nil {
			return fmt.Errorf("send, %d bytes left: %w", left, err)
		}
	}
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		return fmt.Errorf("half-close: %w", err)
	}
	var got int64
	if err := binary.Read(conn, binary.BigEndian, &got); err != nil {
		return fmt.Errorf("read the receiver's count: %w", err)
	}
	if got != n {
		return fmt.Errorf("receiver counted %d bytes, sent %d", got, n)
	}
	return nil
}
