package dsaplugin

import (
	"context"
	"errors"
	"strings"

	"github.com/ovsplane/ovsplane/dsa"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// codeOf is the contract's code for a library code: what the daemon should do about it.
//   - InvalidArgument: the configuration is wrong (a malformed request, a WQ name DPDK would
//     ignore, sizes the device cannot hold); nothing changes until it does.
//   - Unavailable: worth retrying as is (the kernel failed in a way the catalogue does not
//     cover).
//   - FailedPrecondition: everything else — the host or OVS must change first (idxd not
//     loaded, no PASID, a busy device, an OVS without vhost async in mode require, …).
func codeOf(c dsa.Code) api.Code {
	switch c {
	case dsa.CodeInvalidRequest, dsa.CodeNamePrefix, dsa.CodeWQSize:
		return api.InvalidArgument
	case dsa.CodeKernel:
		return api.Unavailable
	}
	return api.FailedPrecondition
}

// apiError turns an error of the library into the *api.Error that crosses the plugin
// boundary: the contract's code for its library code and the library's text, which starts
// with its stable code (DSA_BUSY: dsa0: …) and says what to do. An InvalidArgument carries a
// problem on the configuration field at fault. Context errors are returned as they are; an
// error outside the catalogue is Unavailable.
func apiError(what string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	var e *dsa.Error
	if !errors.As(err, &e) {
		return api.Errorf(api.Unavailable, "%s: %w", what, err)
	}
	code := codeOf(e.Code)
	if code == api.InvalidArgument {
		return &api.Error{Code: code, Message: what + ": " + err.Error(), Problems: []api.Problem{{Field: configField(e.Field), Message: err.Error()}}}
	}
	return api.Errorf(code, "%s: %w", what, err)
}

// configField is the configuration field of a library request field ("devices[0].wqs.size"
// → "config.devices[0].wqs.size"); the whole configuration when the library names none.
func configField(f string) string {
	switch {
	case f == "":
		return "config"
	case strings.HasPrefix(f, "config"):
		return f
	}
	return "config." + f
}
