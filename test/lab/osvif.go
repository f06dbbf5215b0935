//go:build linux

package lab

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// OSVIFPython is the interpreter OSVIFPlug runs: Debian's, by path, because it is the one
// python3-os-vif and python3-ovsdbapp install into (a python3 earlier in $PATH, such as pyenv's,
// does not have them).
const OSVIFPython = "/usr/bin/python3"

// osvifScript is osvif_plug.py, embedded so that OSVIFPlug works from any package's test binary
// whatever its working directory.
//
//go:embed osvif_plug.py
var osvifScript string

// Bounds of OSVIFPlug's input and output.
const (
	// osvifTimeout bounds one run of the script when ctx has no earlier deadline; it is also
	// os-vif's ovs_vsctl_timeout, the wait for the OVSDB transaction.
	osvifTimeout = 60 * time.Second
	// osvifSlack is added to the OVSDB timeout to bound one run: the interpreter's start and
	// os-vif's imports take seconds on a loaded machine, and os-vif makes several transactions.
	osvifSlack = 30 * time.Second
	// osvifMaxOutput bounds what is kept of the script's stdout and of its stderr.
	osvifMaxOutput = 64 << 10
	// maxSocketPath is the longest unix socket path the kernel accepts (sun_path less its NUL).
	maxSocketPath = 107
)

// VIFKind selects the os-vif VIF object OSVIFPlug builds.
type VIFKind string

const (
	// VIFVhostUser is os-vif's VIFVHostUser, as Nova builds it for a Neutron port bound with
	// vif_type vhostuser: an OVS port "vhu"+ID[:11] of type dpdkvhostuserclient (VhostMode
	// "server", QEMU owns the socket) or dpdkvhostuser ("client"), on a bridge with
	// datapath_type netdev.
	VIFVhostUser VIFKind = "vhostuser"
	// VIFOpenVSwitch is os-vif's VIFOpenVSwitch with the port profile's create_port set: a plain
	// OVS port "tap"+ID[:11] (type empty, i.e. a system/tap netdev) with the same external_ids.
	VIFOpenVSwitch VIFKind = "ovs"
)

// VIF describes one virtual interface the way Nova hands it to os-vif. Zero fields take the
// defaults documented on each; OSVIFPlug validates all of them.
type VIF struct {
	// Kind is required.
	Kind VIFKind
	// ID is the Neutron port UUID: external_ids:iface-id, and the source of the port name.
	ID string
	// Address is the MAC of the guest's NIC: external_ids:attached-mac.
	Address string
	// InstanceUUID is the Nova instance: external_ids:vm-uuid.
	InstanceUUID string
	// InstanceName is the instance's name (default "instance-lab").
	InstanceName string
	// NetworkID is the Neutron network UUID (default a fixed lab UUID).
	NetworkID string
	// Bridge is the integration bridge (default "br-int"); os-vif creates it when missing.
	Bridge string
	// DatapathType is the port profile's datapath_type (default "netdev" for VIFVhostUser,
	// os-vif's "system" for VIFOpenVSwitch).
	DatapathType string
	// VhostMode is QEMU's side of the vhost-user socket for VIFVhostUser: "server" (default;
	// OVS type dpdkvhostuserclient with options:vhost-server-path=SocketPath) or "client"
	// (OVS type dpdkvhostuser; OVS creates its socket in its run directory).
	VhostMode string
	// SocketPath is the vhost-user socket path for VhostMode "server" (required there).
	SocketPath string
	// MTU is the network's MTU (0: os-vif's default 1500); os-vif writes it to
	// Interface:mtu_request for vhost-user ports.
	MTU int
}

// PortName returns the OVS port name os-vif gives v: "vhu" or "tap" followed by the first 11
// characters of v.ID (os-vif's 14-character limit).
func (v VIF) PortName() string {
	prefix := "tap"
	if v.Kind == VIFVhostUser {
		prefix = "vhu"
	}
	return prefix + v.ID[:min(len(v.ID), 11)]
}

var (
	uuidRE   = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	nameRE   = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,15}$`)
	labelRE  = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	endptRE  = regexp.MustCompile(`^(unix:/[^\x00]{1,200}|tcp:[0-9.]{7,15}:[0-9]{1,5})$`)
	dptypeRE = regexp.MustCompile(`^(netdev|system)$`)
)

// withDefaults returns v with its zero fields set to their defaults, or an error naming the
// first invalid field and what it must look like.
func (v VIF) withDefaults() (VIF, error) {
	if v.InstanceName == "" {
		v.InstanceName = "instance-lab"
	}
	if v.NetworkID == "" {
		v.NetworkID = "5d9d0b8a-0e1c-4a52-9d36-7c0e2b1c0001"
	}
	if v.Bridge == "" {
		v.Bridge = "br-int"
	}
	if v.Kind == VIFVhostUser {
		if v.DatapathType == "" {
			v.DatapathType = "netdev"
		}
		if v.VhostMode == "" {
			v.VhostMode = "server"
		}
	}
	bad := func(field, value, want string) (VIF, error) {
		return VIF{}, fmt.Errorf("lab: os-vif VIF %s %q: want %s", field, value, want)
	}
	switch {
	case v.Kind != VIFVhostUser && v.Kind != VIFOpenVSwitch:
		return bad("Kind", string(v.Kind), `"vhostuser" or "ovs"`)
	case !uuidRE.MatchString(v.ID):
		return bad("ID", v.ID, "a lower-case UUID (the Neutron port id)")
	case !uuidRE.MatchString(v.InstanceUUID):
		return bad("InstanceUUID", v.InstanceUUID, "a lower-case UUID")
	case !uuidRE.MatchString(v.NetworkID):
		return bad("NetworkID", v.NetworkID, "a lower-case UUID")
	case !labelRE.MatchString(v.InstanceName):
		return bad("InstanceName", v.InstanceName, "1-64 of [A-Za-z0-9_.-]")
	case !nameRE.MatchString(v.Bridge):
		return bad("Bridge", v.Bridge, "an interface name of 1-15 of [A-Za-z0-9_.-]")
	case v.DatapathType != "" && !dptypeRE.MatchString(v.DatapathType):
		return bad("DatapathType", v.DatapathType, `"netdev" or "system"`)
	case v.MTU < 0 || v.MTU > 65535 || (v.MTU > 0 && v.MTU < 68):
		return bad("MTU", fmt.Sprint(v.MTU), "0 (default) or 68..65535")
	}
	if mac, err := net.ParseMAC(v.Address); err != nil || len(mac) != 6 || v.Address != strings.ToLower(mac.String()) {
		return bad("Address", v.Address, "a lower-case 6-byte MAC like fa:16:3e:00:00:01")
	}
	if v.Kind == VIFVhostUser {
		switch v.VhostMode {
		case "server":
			if !strings.HasPrefix(v.SocketPath, "/") || len(v.SocketPath) > maxSocketPath ||
				strings.ContainsAny(v.SocketPath, "\x00\n") {
				return bad("SocketPath", v.SocketPath, fmt.Sprintf("an absolute path of at most %d bytes", maxSocketPath))
			}
		case "client":
			if v.SocketPath != "" {
				return bad("SocketPath", v.SocketPath, `empty with VhostMode "client" (OVS picks the path)`)
			}
		default:
			return bad("VhostMode", v.VhostMode, `"server" or "client"`)
		}
	} else if v.VhostMode != "" || v.SocketPath != "" {
		return VIF{}, fmt.Errorf("lab: os-vif VIF %s: VhostMode and SocketPath apply to Kind %q only", v.ID, VIFVhostUser)
	}
	return v, nil
}

// osvifRequest is the JSON osvif_plug.py reads on stdin.
type osvifRequest struct {
	Op       string   `json:"op"`
	OVSDB    string   `json:"ovsdb"`
	TimeoutS int      `json:"timeout_s"`
	Backend  string   `json:"backend"`
	VIF      osvifVIF `json:"vif"`
}

// OSVIF backends (os-vif's [os_vif_ovs] ovsdb_interface).
const (
	// OSVIFNative is os-vif's default backend: ovsdbapp's native OVSDB IDL.
	OSVIFNative = "native"
	// OSVIFVsctl runs one ovs-vsctl command line per transaction (deprecated since os-vif
	// 2.2.0, still offered by Debian's 3.0.0).
	OSVIFVsctl = "vsctl"
)

// OSVIFOptions change how OSVIFPlugWith and OSVIFUnplugWith run os-vif. The zero value is
// OSVIFPlug's.
type OSVIFOptions struct {
	// Backend is OSVIFNative (default) or OSVIFVsctl.
	Backend string
	// VsctlDir, if set, is put first on the script's PATH (then /usr/sbin:/usr/bin:/sbin:/bin),
	// so that the "ovs-vsctl" os-vif's vsctl backend runs is the one in that directory (ovsplane's
	// vsctl, linked there under that name). It must be an absolute path of at most 200 bytes.
	VsctlDir string
	// Timeout is os-vif's ovs_vsctl_timeout, the wait for each OVSDB transaction: a whole
	// number of seconds in 1..600 (default 60 s). The run is bounded by it plus 30 s.
	Timeout time.Duration
}

// osvifVIF is the vif object of osvifRequest.
type osvifVIF struct {
	Kind         string `json:"kind"`
	ID           string `json:"id"`
	Address      string `json:"address"`
	InstanceUUID string `json:"instance_uuid"`
	InstanceName string `json:"instance_name"`
	NetworkID    string `json:"network_id"`
	Bridge       string `json:"bridge"`
	DatapathType string `json:"datapath_type"`
	VhostMode    string `json:"vhost_mode"`
	SocketPath   string `json:"socket_path"`
	MTU          int    `json:"mtu"`
}

// osvifReply is the JSON osvif_plug.py prints on stdout.
type osvifReply struct {
	OK    bool   `json:"ok"`
	Port  string `json:"port"`
	Error string `json:"error"`
}

// OSVIFPlug plugs vif into the OVSDB at ovsdbEndpoint ("unix:/path" or "tcp:ip:port") with
// os-vif's OVS plugin on its native (ovsdbapp) backend, exactly as Nova's compute agent does:
// it runs osvif_plug.py under OSVIFPython with the request as JSON on stdin. os-vif adds the
// bridge if missing, then in one transaction the Port and Interface named vif.PortName() with
// external_ids iface-id=ID, iface-status=active, attached-mac=Address, vm-uuid=InstanceUUID
// (plus the type and vhost-server-path of a vhost-user port, then its mtu_request). It returns
// when os-vif's transaction has committed and ovs-vswitchd has applied it (ovsdbapp waits for
// cur_cfg), or an error quoting os-vif's. Each run is bounded by ctx and 90 s. It needs
// python3-os-vif and python3-ovsdbapp (see NeedOSVIF); run as root, os-vif's privileged steps
// (MTU, deleting a kernel netdev of the port's name on unplug) run in-process.
func OSVIFPlug(ctx context.Context, ovsdbEndpoint string, vif VIF) error {
	_, err := runOSVIF(ctx, "plug", ovsdbEndpoint, vif, OSVIFOptions{})
	return err
}

// OSVIFPlugWith is OSVIFPlug with the backend, PATH and timeout of o. It also returns what
// os-vif logged (its stderr, at most 64 KiB), where it reports the errors it ignores: with
// the native backend os-vif runs its steps with check_error=False, so a step that failed (the
// MTU's db_set while OVSDB is away) is only a line "Error executing command (…): IGNORING".
func OSVIFPlugWith(ctx context.Context, ovsdbEndpoint string, vif VIF, o OSVIFOptions) (log string, err error) {
	return runOSVIF(ctx, "plug", ovsdbEndpoint, vif, o)
}

// OSVIFUnplugWith is OSVIFUnplug with the options of o; it returns os-vif's log as
// OSVIFPlugWith does.
func OSVIFUnplugWith(ctx context.Context, ovsdbEndpoint string, vif VIF, o OSVIFOptions) (log string, err error) {
	return runOSVIF(ctx, "unplug", ovsdbEndpoint, vif, o)
}

// OSVIFUnplug removes vif's port as os-vif's unplug does: del-port if it exists (no error when
// it does not), then deletes a kernel netdev of the port's name if there is one. The bridge
// stays. Same bounds and needs as OSVIFPlug.
func OSVIFUnplug(ctx context.Context, ovsdbEndpoint string, vif VIF) error {
	_, err := runOSVIF(ctx, "unplug", ovsdbEndpoint, vif, OSVIFOptions{})
	return err
}

// withDefaults returns o with its zero fields set, or an error naming the invalid field.
func (o OSVIFOptions) withDefaults() (OSVIFOptions, error) {
	if o.Backend == "" {
		o.Backend = OSVIFNative
	}
	if o.Timeout == 0 {
		o.Timeout = osvifTimeout
	}
	switch {
	case o.Backend != OSVIFNative && o.Backend != OSVIFVsctl:
		return o, fmt.Errorf("lab: os-vif Backend %q: want %q or %q", o.Backend, OSVIFNative, OSVIFVsctl)
	case o.Timeout < time.Second || o.Timeout > 600*time.Second || o.Timeout%time.Second != 0:
		return o, fmt.Errorf("lab: os-vif Timeout %v: want whole seconds in 1s..600s", o.Timeout)
	case o.VsctlDir != "" && (!filepath.IsAbs(o.VsctlDir) || len(o.VsctlDir) > 200 || strings.ContainsAny(o.VsctlDir, ":\x00\n")):
		return o, fmt.Errorf("lab: os-vif VsctlDir %q: want an absolute path of at most 200 bytes without ':'", o.VsctlDir)
	}
	return o, nil
}

// runOSVIF validates the request, runs the script once and decodes its reply; it returns the
// script's stderr (os-vif's log).
func runOSVIF(ctx context.Context, op, endpoint string, vif VIF, o OSVIFOptions) (string, error) {
	v, err := vif.withDefaults()
	if err != nil {
		return "", err
	}
	if o, err = o.withDefaults(); err != nil {
		return "", err
	}
	if !endptRE.MatchString(endpoint) {
		return "", fmt.Errorf("lab: os-vif %s %s: OVSDB endpoint %q: want unix:/path or tcp:IP:PORT", op, v.ID, endpoint)
	}
	in, err := json.Marshal(osvifRequest{Op: op, OVSDB: endpoint, TimeoutS: int(o.Timeout / time.Second), Backend: o.Backend,
		VIF: osvifVIF{Kind: string(v.Kind), ID: v.ID, Address: v.Address, InstanceUUID: v.InstanceUUID,
			InstanceName: v.InstanceName, NetworkID: v.NetworkID, Bridge: v.Bridge, DatapathType: v.DatapathType,
			VhostMode: v.VhostMode, SocketPath: v.SocketPath, MTU: v.MTU}})
	if err != nil {
		return "", fmt.Errorf("lab: os-vif %s %s: encode request: %w", op, v.ID, err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout+osvifSlack)
	defer cancel()
	// -I: isolated mode, so PYTHONPATH, PYTHONHOME and the user's site-packages (pyenv's
	// variables among them) cannot swap os-vif or ovsdbapp for another copy.
	cmd := exec.CommandContext(ctx, OSVIFPython, "-I", "-c", osvifScript)
	cmd.WaitDelay = 2 * time.Second
	cmd.Stdin = bytes.NewReader(in)
	if o.VsctlDir != "" {
		cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }),
			"PATH="+o.VsctlDir+":/usr/sbin:/usr/bin:/sbin:/bin")
	}
	stdout, stderr := &capped{max: osvifMaxOutput}, &capped{max: osvifMaxOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	runErr := cmd.Run()
	exit := "exit status 0"
	if runErr != nil {
		exit = runErr.Error()
		if ctx.Err() != nil {
			exit += " (" + context.Cause(ctx).Error() + ")"
		}
	}
	log := stderr.buf.String()
	var reply osvifReply
	if err := json.Unmarshal(bytes.TrimSpace(stdout.buf.Bytes()), &reply); err != nil {
		return log, fmt.Errorf("lab: os-vif %s %s: %s printed %q (%w; %s)\nstderr:\n%s",
			op, v.ID, OSVIFPython, stdout.buf.String(), err, exit, lastLines(log, 20))
	}
	if !reply.OK || runErr != nil {
		return log, fmt.Errorf("lab: os-vif %s %s: %s (%s)\nstderr:\n%s",
			op, v.ID, reply.Error, exit, lastLines(log, 20))
	}
	if reply.Port != v.PortName() {
		return log, fmt.Errorf("lab: os-vif %s %s: os-vif named the port %q, want %q", op, v.ID, reply.Port, v.PortName())
	}
	return log, nil
}

// capped is an io.Writer keeping the first max bytes written to it and dropping the rest.
type capped struct {
	buf bytes.Buffer
	max int
}

// Write keeps what fits under the cap and reports every byte as written, so the child never
// blocks or fails on a full pipe.
func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
