package testkit

import (
	"net"
	"os"
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

// FreeTCPAddr returns a 127.0.0.1:PORT address that nothing listened on a moment ago.
func FreeTCPAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
