package vdpa

import (
	"errors"
	"fmt"
	"syscall"
)

// Code is a stable error code: it names a decision the user has to take and never changes
// meaning. A Code is itself an error so that errors.Is(err, CodeX) tests an *Error's code.
type Code string

// Error implements error; the text is the code itself.
func (c Code) Error() string { return string(c) }

// The error catalogue (see docs/vdpa.md, "Troubleshooting", for each code's remedy).
const (
	// CodeNoNetlink: the kernel has no "vdpa" generic netlink family (modules not loaded or a
	// kernel older than 5.12).
	CodeNoNetlink Code = "VDPA_NO_NETLINK"
	// CodeNoBusDriver: the requested vdpa bus driver (vhost_vdpa, virtio_vdpa) is not loaded.
	CodeNoBusDriver Code = "VDPA_NO_BUS_DRIVER"
	// CodeNoMgmtDev: no vdpa management device pci/<VF> (VF not on mlx5_core, mlx5_vdpa not
	// loaded or a stub, enable_vnet off).
	CodeNoMgmtDev Code = "VDPA_NO_MGMTDEV"
	// CodePFNotFound: the PF named in the request does not exist on this host.
	CodePFNotFound Code = "PF_NOT_FOUND"
	// CodePFNotMLX5: the PF is not a Mellanox/NVIDIA device driven by mlx5_core.
	CodePFNotMLX5 Code = "PF_NOT_MLX5"
	// CodeSRIOVCap: more VFs asked for than the firmware offers (sriov_totalvfs).
	CodeSRIOVCap Code = "SRIOV_CAP"
	// CodeSRIOVBusy: changing the VF count would destroy VFs that are in use.
	CodeSRIOVBusy Code = "SRIOV_BUSY"
	// CodeEswitchDenied: the kernel refused the eswitch mode change (not host-owned, i.e.
	// BlueField DPU mode, or VFs still bound).
	CodeEswitchDenied Code = "ESWITCH_DENIED"
	// CodeAttrUnsupported: the kernel or the management device cannot set mac/mtu/max_vqp.
	CodeAttrUnsupported Code = "VDPA_ATTR_UNSUPPORTED"
	// CodeMaxVQP: max_vqp above what the management device supports.
	CodeMaxVQP Code = "VDPA_MAXVQP"
	// CodeExists: a vdpa device of that name exists with another parent or configuration.
	CodeExists Code = "VDPA_EXISTS"
	// CodeMgmtDevFull: mlx5 allows one vdpa device per VF management device (ENOSPC).
	CodeMgmtDevFull Code = "VDPA_MGMTDEV_FULL"
	// CodeCharDevTimeout: /dev/vhost-vdpa-N did not appear in time (udev).
	CodeCharDevTimeout Code = "CHARDEV_TIMEOUT"
	// CodeRepresentorNotFound: no VF representor netdev for the VF.
	CodeRepresentorNotFound Code = "REPRESENTOR_NOT_FOUND"
	// CodeVFInUse: the VF is already used by another OVS interface, vdpa device or driver.
	CodeVFInUse Code = "VF_IN_USE"
	// CodeClassConflict: the VF has a kernel vDPA device while a DPDK mode wants it (or the
	// reverse); the mlx5 vdpa and eth classes cannot share a function.
	CodeClassConflict Code = "CLASS_CONFLICT"
	// CodeOVSNoDPDK: ovs-vswitchd runs without DPDK (dpdk_initialized=false).
	CodeOVSNoDPDK Code = "OVS_NO_DPDK"
	// CodeOVSNoDPDKVDPA: mode ovs-fork asked of an OVS without the dpdkvdpa interface type.
	CodeOVSNoDPDKVDPA Code = "OVS_NO_DPDKVDPA"
	// CodeOVSRestartRequired is a warning: other_config:hw-offload changed and only takes
	// effect after ovs-vswitchd restarts.
	CodeOVSRestartRequired Code = "OVS_RESTART_REQUIRED"
	// CodeInvalidRequest: the request itself is malformed (bad MAC, unknown mode, ...).
	CodeInvalidRequest Code = "INVALID_REQUEST"
	// CodeKernel: the kernel failed an operation in a way the catalogue does not cover.
	CodeKernel Code = "KERNEL_ERROR"
)

// Codes lists every code, in catalogue order (tests check each is covered).
var Codes = []Code{CodeNoNetlink, CodeNoBusDriver, CodeNoMgmtDev, CodePFNotFound, CodePFNotMLX5, CodeSRIOVCap,
	CodeSRIOVBusy, CodeEswitchDenied, CodeAttrUnsupported, CodeMaxVQP, CodeExists, CodeMgmtDevFull,
	CodeCharDevTimeout, CodeRepresentorNotFound, CodeVFInUse, CodeClassConflict, CodeOVSNoDPDK,
	CodeOVSNoDPDKVDPA, CodeOVSRestartRequired, CodeInvalidRequest, CodeKernel}

// Error is a catalogued failure: Object names what it is about (a PF, VF, device), Msg says what
// happened and what to do, Err is the underlying cause (often a syscall.Errno) when there is one.
// Field, set on INVALID_REQUEST errors only, names the request field at fault: the option key
// for RequestFromOptions ("max-vqp", "pf"), Request's JSON name for Normalize ("max_vqp"), and
// "name" for the interface name. It is not part of the error text.
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

func newErr(code Code, object string, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Object: object, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// Warning is a non-fatal finding attached to a plan or report.
type Warning struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

func isErrno(err error, errnos ...syscall.Errno) bool {
	for _, n := range errnos {
		if errors.Is(err, n) {
			return true
		}
	}
	return false
}
