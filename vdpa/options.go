package vdpa

import (
	"errors"
	"slices"
	"strconv"
	"strings"
)

// OptionKeys are the Interface options of a port of type vdpa, as an operator writes them
// (`vsctl add-port br0 vm1 -- set Interface vm1 type=vdpa options:pf=0000:65:00.0 options:vf=2
// options:mac=... options:max-vqp=4 options:mode=kernel`) or in the daemon's config.
var OptionKeys = []string{"pf", "vf", "mac", "mtu", "max-vqp", "mode", "num-vfs", "eswitch", "bus-driver",
	"vdpa-name", "socket-dir", "hw-offload", "adopt"}

// RequestFromOptions builds the Request for interface name from its vdpa options, failing with
// INVALID_REQUEST on an unknown key or a malformed value; the error's Field is the option key
// at fault ("name" for the interface name). The result is normalised.
func RequestFromOptions(name string, opts map[string]string) (Request, error) {
	r := Request{Name: name}
	bad := func(key, want string) (Request, error) {
		e := newErr(CodeInvalidRequest, name, nil, "options:%s=%q: want %s", key, opts[key], want)
		e.Field = key
		return r, e
	}
	num := func(key string, dst *int) bool {
		v, ok := opts[key]
		if !ok {
			return true
		}
		n, err := strconv.Atoi(v)
		*dst = n
		return err == nil
	}
	for k := range opts {
		if !slices.Contains(OptionKeys, k) {
			e := newErr(CodeInvalidRequest, name, nil, "unknown option %q (known: %s)", k, strings.Join(OptionKeys, ", "))
			e.Field = k
			return r, e
		}
	}
	r.PF, r.MAC, r.Mode, r.Eswitch = opts["pf"], opts["mac"], Mode(opts["mode"]), opts["eswitch"]
	r.BusDriver, r.VDPAName, r.SocketDir = opts["bus-driver"], opts["vdpa-name"], opts["socket-dir"]
	if !num("vf", &r.VF) {
		return bad("vf", "a VF index such as 2")
	}
	if !num("mtu", &r.MTU) {
		return bad("mtu", "a number")
	}
	if !num("max-vqp", &r.MaxVQP) {
		return bad("max-vqp", "a number of queue pairs")
	}
	if !num("num-vfs", &r.NumVFs) {
		return bad("num-vfs", "a VF count")
	}
	if v, ok := opts["adopt"]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return bad("adopt", "true or false")
		}
		r.Adopt = b
	}
	if v, ok := opts["hw-offload"]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return bad("hw-offload", "true or false")
		}
		r.HWOffload = &b
	}
	n, err := r.Normalize()
	var e *Error
	if errors.As(err, &e) && e.Field != "name" {
		e.Field = strings.ReplaceAll(e.Field, "_", "-") // Request's JSON names are the keys with '_'
	}
	return n, err
}
