package testkit

import (
	"net"
	"os"
	"strconv"
	"testing"
)

// ShortTempDir makes a directory directly below os.TempDir, named prefix plus a random
// suffix, and removes it when the test ends. Unlike tb.TempDir its path is short: a unix
// socket path below it must fit the 107 bytes of sun_path.
func ShortTempDir(tb testing.TB, prefix string) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// FreeTCPPort returns a TCP port that nothing listened on at 127.0.0.1 a moment ago.
func FreeTCPPort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// FreeTCPAddr returns a 127.0.0.1:PORT address with a port from FreeTCPPort.
func FreeTCPAddr(tb testing.TB) string {
	tb.Helper()
	return "127.0.0.1:" + strconv.Itoa(FreeTCPPort(tb))
}
