// Package sdktest tests an ovsplane plugin the way the host uses it, in-process: Connect serves
// the plugin and returns host-side clients that go through the daemon's real gRPC shims
// (errors, deadlines and conversions as in production), and FakeHost plays ovsplaned on top of
// them: it configures the plugin with realistic Open vSwitch facts, stores each port's plugin
// state as the host stores it in OVSDB, replays it after a simulated restart, applies the
// host's checks to every answer and records the calls.
//
//	func TestAttach(t *testing.T) {
//		h := sdktest.NewFakeHost(t, myplugin.New(slog.New(slog.DiscardHandler)))
//		if err := h.Configure([]byte(`{}`)); err != nil {
//			t.Fatal(err)
//		}
//		a, err := h.Attach(api.PortRequest{Bridge: "br0", Name: "p0", Type: "veth"})
//		...
//	}
package sdktest
