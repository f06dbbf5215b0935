package client_test

import (
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/api/client"
	"github.com/ovsplane/ovsplane/model"
)

func TestDialAddresses(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		opts    []client.Option
		wantErr string
	}{
		{addr: "unix:/var/lib/ovsplane/ovsplaned.sock"},
		{addr: "tcp:127.0.0.1:6640"},
		{addr: "tcp:[::1]:6640"},
		{addr: "unix:", wantErr: "no socket path"},
		{addr: "tcp:localhost", wantErr: "not tcp:HOST:PORT"},
		{addr: "ssl:127.0.0.1:1", wantErr: "must start with"},
		{addr: "/var/lib/ovsplane/ovsplaned.sock", wantErr: "must start with"},
		{addr: "tcp:127.0.0.1:1", opts: []client.Option{client.WithTLS(model.TLS{CACert: "/nonexistent/ca.pem"})}, wantErr: "/nonexistent/ca.pem"},
		{addr: "tcp:127.0.0.1:1", opts: []client.Option{client.WithTLS(model.TLS{Certificate: "/nonexistent/c.pem", PrivateKey: "/nonexistent/k.pem"})}, wantErr: "/nonexistent/c.pem"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			c, err := client.Dial(tc.addr, tc.opts...)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Dial: %v", err)
				}
				if c.Addr() != tc.addr {
					t.Errorf("Addr() = %q", c.Addr())
				}
				c.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Dial = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
