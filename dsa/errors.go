package dsa

import (
	"errors"
	"fmt"
)

// Code is a stable error code: it names a decision the operator has to take and never changes
// meaning. A Code is itself an error so that errors.Is(err, CodeX) tests an *Error's code.
type Code string

// Error implements error; the text is the code itself.
func (c Code) Error() string { return string(c) }

// The error catalogue (docs/dsa.md, "Error codes", gives each code's remedy).
const (
	// CodeAbsent: no /sys/bus/dsa (idxd not loaded) or no DSA device (needs a 4th-gen Xeon or
	// later); or a configured device does not exist.
	CodeAbsent Code = "DSA_ABSENT"
	// CodeNoSVA: user work queues need shared virtual addressing: IOMMU scalable mode with
	// PASID (intel_iommu=on,sm_on); the device reports pasid_enabled=0.
	CodeNoSVA Code = "DSA_NO_SVA"
	// CodeBusy: the device or a work queue has clients (clients > 0); reconfiguring would cut
	// them off, so it is refused.
	CodeBusy Code = "DSA_BUSY"
	// CodeWQSize: the work queues' sizes add up to more than max_work_queues_size, or more
	// queues than max_work_queues are asked for.
	CodeWQSize Code = "DSA_WQ_SIZE"
	// CodeDriverName: the kernel refused to bind a work queue (ENODEV) because its driver_name
	// does not match the driver.
	CodeDriverName Code = "DSA_DRIVER_NAME"
	// CodeNamePrefix: a work queue's name does not start with dpdk_ (or <file-prefix>_), so
	// DPDK's idxd bus ignores it.
	CodeNamePrefix Code = "DSA_NAME_PREFIX"
	// CodePerms: /dev/dsa/wqX.Y is not usable by the OVS user (owner or mode), or changing it
	// failed.
	CodePerms Code = "DSA_PERMS"
	// CodeNUMA is a warning: a device serves PMD threads of another NUMA node (cross-socket
	// DMA), or a NUMA node with PMDs has no device.
	CodeNUMA Code = "DSA_NUMA"
	// CodeTooFewWQs is a warning: more PMD threads than work queues; the extra PMDs fall back
	// to CPU copies.
	CodeTooFewWQs Code = "DSA_TOO_FEW_WQS"
	// CodeOVSNoVhostAsync: the running ovs-vswitchd cannot use DMA for vhost copies (upstream
	// OVS never merged it); the devices are prepared but unused. Fatal in mode require, a
	// warning in mode auto.
	CodeOVSNoVhostAsync Code = "OVS_NO_VHOST_ASYNC"
	// CodeInvalidRequest: the configuration itself is malformed (unknown mode, bad size...).
	CodeInvalidRequest Code = "INVALID_REQUEST"
	// CodeKernel: the kernel failed an operation in a way the catalogue does not cover.
	CodeKernel Code = "KERNEL_ERROR"
)

// Codes lists every code, in catalogue order; a test fails for a code without a test of its own.
var Codes = []Code{CodeAbsent, CodeNoSVA, CodeBusy, CodeWQSize, CodeDriverName, CodeNamePrefix, CodePerms,
	CodeNUMA, CodeTooFewWQs, CodeOVSNoVhostAsync, CodeInvalidRequest, CodeKernel}

// Error is a catalogued failure: Object names what it is about (dsa0, wq0.1, 0000:6a:01.0),
// Msg says what happened and the fix, Err is the underlying cause (often a syscall.Errno).
// Field, set on INVALID_REQUEST errors only, names the configuration field at fault.
type Error struct {
	Code   Code
	Object string
	Msg    string
	Err    error
	Field  string
}

func (e *Error) Error() string {
	s := string(e.Code)
	if e.Object != "" {
		s += ": " + e.Object
	}
	s += ": " + e.Msg
	if e.Err != nil {
		s += " (" + e.Err.Error() + ")"
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is this error's Code.
func (e *Error) Is(target error) bool {
	c, ok := target.(Code)
	return ok && c == e.Code
}

// CodeOf returns the Code of the first *Error in err's chain, or "" if there is none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// Errorf returns an *Error with code, the object it concerns, an optional cause and a
// formatted message that names the cause and the fix.
func Errorf(code Code, object string, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Object: object, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// Warning is a non-fatal finding of a report or plan (CodeNUMA, CodeTooFewWQs,
// CodeOVSNoVhostAsync in mode auto).
type Warning struct {
	Code    Code   `json:"code"`
	Object  string `json:"object,omitempty"`
	Message string `json:"message"`
}
