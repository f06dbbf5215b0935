package vdpaplugin

import (
	"context"
	"errors"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/vdpa"
)

// codeOf is the contract's code for a library code: what the daemon should do about it.
//   - InvalidArgument: the request is wrong; nothing changes until it does.
//   - NotFound: the PF or the VF's representor does not exist.
//   - AlreadyExists: a vDPA device of that name exists and is not this port's.
//   - Unavailable: worth retrying as is (udev was slow, an unclassified kernel failure).
//   - FailedPrecondition: everything else — the host or OVS must change first (modules, firmware,
//     a VF in use, a stock OVS asked for ovs-fork, …); the daemon retries on its next reconcile.
func codeOf(c vdpa.Code) api.Code {
	switch c {
	case vdpa.CodeInvalidRequest:
		return api.InvalidArgument
	case vdpa.CodePFNotFound, vdpa.CodeRepresentorNotFound:
		return api.NotFound
	case vdpa.CodeExists:
		return api.AlreadyExists
	case vdpa.CodeCharDevTimeout, vdpa.CodeKernel:
		return api.Unavailable
	}
	return api.FailedPrecondition
}

// apiError turns an error of the library into the *api.Error that crosses the plugin boundary:
// the contract's code for its library code, and a message naming the port that keeps the
// library's text — its stable code first ("VF_IN_USE: …") and what to do. An INVALID_REQUEST
// also carries a problem on the option at fault. Context errors are returned as they are (the
// shims report them as DeadlineExceeded or Canceled); an error outside the catalogue (the
// host could not be read) is Unavailable.
func apiError(port string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	var e *vdpa.Error
	if !errors.As(err, &e) {
		return api.Errorf(api.Unavailable, "port %s: %w", port, err)
	}
	if e.Code == vdpa.CodeInvalidRequest {
		return &api.Error{Code: api.InvalidArgument, Message: "port " + port + ": " + err.Error(), Problems: []api.Problem{problemOf(e)}}
	}
	return api.Errorf(codeOf(e.Code), "port %s: %w", port, err)
}

// invalid is the InvalidArgument error of a request with problems, its message naming the
// library's code so that a user sees the same code in every path.
func invalid(port string, problems []api.Problem) error {
	msg := "port " + port + ": " + string(vdpa.CodeInvalidRequest) + ":"
	for i, pr := range problems {
		if i > 0 {
			msg += ";"
		}
		msg += " " + pr.String()
	}
	return &api.Error{Code: api.InvalidArgument, Message: msg, Problems: problems}
}
