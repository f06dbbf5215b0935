package dsaplugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/ovsplane/ovsplane/dsa"
	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/plugins/sdk"
)

// Bounds of the configuration, checked before anything is decoded or applied.
const (
	// MaxConfigBytes bounds the configuration's JSON text.
	MaxConfigBytes = 64 << 10
	// MaxDevices bounds the devices of a configuration (a 2-socket host has at most 8 DSA
	// instances today).
	MaxDevices = 32
	// MaxThreshold bounds ovs.threshold, in bytes (a jumbo frame is 9000; 64 KiB is a TSO
	// segment).
	MaxThreshold = 65536
	// MaxSocketPath bounds ovs.unixctl: the longest unix socket path the kernel accepts
	// (sun_path's 108 bytes less the terminating NUL).
	MaxSocketPath = 107
)

// Async modes (Config.OVS.AsyncMode).
const (
	// AsyncOff leaves OVS alone: devices are prepared, vhost async is never asked for.
	AsyncOff = "off"
	// AsyncAuto asks OVS for vhost async when the running ovs-vswitchd has it; otherwise the
	// devices are prepared, unused, and every status and Health says so.
	AsyncAuto = "auto"
	// AsyncRequire refuses the configuration (OVS_NO_VHOST_ASYNC) when the running
	// ovs-vswitchd has no vhost async support.
	AsyncRequire = "require"
)

// Drivers a device may be given (DeviceConfig.Driver).
const (
	DriverIDXD = "idxd"
	DriverVFIO = "vfio-pci"
)

// DefaultRoot is Config.Root's default.
const DefaultRoot = "/"

// Config is the plugin's configuration, the JSON object the daemon hands to Configure (the
// `config:` of the plugin's entry in ovsplaned's configuration); docs/dsa.md is its reference.
// Unknown fields are refused.
type Config struct {
	// Devices are the DSA devices to provision, at most MaxDevices, each named once.
	Devices []DeviceConfig `json:"devices,omitempty"`
	// OVS is what the plugin asks of Open vSwitch.
	OVS OVSConfig `json:"ovs"`
	// AllowReconfigure lets the plugin reconfigure an enabled device whose configuration
	// differs from the one asked for (it is refused otherwise, so an accel-config setup is
	// adopted rather than overwritten). A device with clients is never reconfigured.
	AllowReconfigure bool `json:"allowReconfigure,omitempty"`
	// Root is the machine's root directory, below which the plugin reads and writes sys/ and
	// dev/ (default "/").
	Root string `json:"root,omitempty"`
	// Simulate, when set, is the absolute path of a directory holding a simulated idxd kernel
	// (laid out by dsa/simidxd.Write): the plugin then provisions it and touches no hardware.
	// For tests only; excludes Root.
	Simulate string `json:"simulate,omitempty"`
}

// DeviceConfig is one DSA device to provision.
type DeviceConfig struct {
	// DSA names the device: its idxd name ("dsa0") or its PCI address ("0000:6a:01.0").
	DSA string `json:"dsa"`
	// Driver is idxd (default: the kernel's idxd driver, user work queues under /dev/dsa) or
	// vfio-pci (the whole device to DPDK, which configures its queues itself).
	Driver string `json:"driver,omitempty"`
	// WQs are the work queues to configure.
	WQs WQConfig `json:"wqs"`
	// Engines is how many engines to put in the work queues' group (0: the library's default).
	Engines int `json:"engines,omitempty"`
	// NUMA, when set, is the NUMA node the device is expected on; a device elsewhere is a
	// DSA_NUMA warning (its DMA crosses sockets for that node's PMD threads).
	NUMA *int `json:"numa,omitempty"`
}

// WQConfig are the work queues of a device; zero fields take the library's defaults.
type WQConfig struct {
	Count        int    `json:"count,omitempty"`
	Mode         string `json:"mode,omitempty"`
	Size         int    `json:"size,omitempty"`
	Priority     int    `json:"priority,omitempty"`
	MaxBatchSize int    `json:"maxBatchSize,omitempty"`
	ATSDisable   bool   `json:"atsDisable,omitempty"`
	// NamePrefix starts the queues' names (<prefix>_wqD.Q); DPDK only takes queues named
	// dpdk_… or <file-prefix>_… (default dpdk).
	NamePrefix string `json:"namePrefix,omitempty"`
}

// OVSConfig is what the plugin asks of Open vSwitch.
type OVSConfig struct {
	// AsyncMode is off, auto (default) or require.
	AsyncMode string `json:"asyncMode,omitempty"`
	// Threshold, when not 0, is the copy size in bytes from which a capable ovs-vswitchd
	// offloads to DSA (netdev-dpdk/set-vhost-async-thresh; its default is 128).
	Threshold int `json:"threshold,omitempty"`
	// User is the user ovs-vswitchd runs as, who must be able to open /dev/dsa/wq*: a user
	// name or "uid:gid". Default: the owner of ovs-vswitchd's pidfile in its run directory.
	User string `json:"user,omitempty"`
	// Unixctl, when set, is the absolute path of ovs-vswitchd's unixctl socket, used instead of
	// finding ovs-vswitchd.<pid>.ctl or ovs-vswitchd.ctl in the daemon's OVS run directory: for
	// an ovs-vswitchd started with --unixctl=PATH (ZStack's
	// /var/run/openvswitch/ovs-vswitchd.zs.ctl). At most MaxSocketPath bytes. The plugin then
	// also reads ovs-vswitchd's commands (its vhost async capability) through it.
	Unixctl string `json:"unixctl,omitempty"`
}

// asyncMode returns AsyncMode with its default.
func (c Config) asyncMode() string {
	if c.OVS.AsyncMode == "" {
		return AsyncAuto
	}
	return c.OVS.AsyncMode
}

// sameMachine reports whether c and o name the same machine (so an open one can be kept).
func (c Config) sameMachine(o Config) bool { return c.Root == o.Root && c.Simulate == o.Simulate }

// driver returns Driver with its default.
func (d DeviceConfig) driver() string {
	if d.Driver == "" {
		return DriverIDXD
	}
	return d.Driver
}

var (
	dsaNameRE = regexp.MustCompile(`^dsa[0-9]{1,4}$`)
	bdfRE     = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)
	userRE    = regexp.MustCompile(`^([a-z_][a-z0-9_.-]{0,31}\$?|[0-9]{1,10}:[0-9]{1,10})$`)
)

// ParseConfig decodes and checks a configuration, filling defaults; errors are *api.Error
// InvalidArgument with one Problem per field ("config.devices[0].driver").
func ParseConfig(raw []byte) (Config, error) {
	if len(raw) > MaxConfigBytes {
		return Config{}, sdk.Invalid(api.Problem{Field: "config",
			Message: fmt.Sprintf("%d bytes, more than %d: list fewer devices", len(raw), MaxConfigBytes)})
	}
	if err := unknownFields(raw); err != nil {
		return Config{}, err
	}
	var c Config
	if err := sdk.DecodeConfig(raw, &c); err != nil {
		return Config{}, indexPaths(err)
	}
	var problems []api.Problem
	add := func(field, format string, args ...any) {
		problems = append(problems, api.Problem{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if c.Root == "" {
		c.Root = DefaultRoot
	}
	if !filepath.IsAbs(c.Root) {
		add("config.root", "%q must be an absolute path (the directory holding sys/ and dev/)", c.Root)
	} else if fi, err := os.Stat(c.Root); err != nil || !fi.IsDir() {
		add("config.root", "%q is not a directory", c.Root)
	}
	if c.Simulate != "" {
		if !filepath.IsAbs(c.Simulate) {
			add("config.simulate", "%q must be an absolute path to a simulated kernel's directory (dsa/simidxd)", c.Simulate)
		}
		if c.Root != DefaultRoot {
			add("config.root", "root and simulate exclude each other: a simulation has its own root")
		}
	}
	switch c.OVS.AsyncMode {
	case "", AsyncOff, AsyncAuto, AsyncRequire:
	default:
		add("config.ovs.asyncMode", "%q: want off, auto or require", c.OVS.AsyncMode)
	}
	if c.OVS.Threshold < 0 || c.OVS.Threshold > MaxThreshold {
		add("config.ovs.threshold", "%d bytes: want 0 (OVS's default) to %d", c.OVS.Threshold, MaxThreshold)
	}
	if c.OVS.User != "" && !userRE.MatchString(c.OVS.User) {
		add("config.ovs.user", "%q: want a user name or uid:gid", c.OVS.User)
	}
	if u := c.OVS.Unixctl; u != "" {
		switch {
		case len(u) > MaxSocketPath:
			add("config.ovs.unixctl", "%d bytes, more than %d (the longest unix socket path): give a shorter path or a symlink", len(u), MaxSocketPath)
		case !filepath.IsAbs(u) || strings.ContainsFunc(u, unicode.IsControl):
			add("config.ovs.unixctl", "%.120q: want the absolute path of ovs-vswitchd's unixctl socket (its --unixctl=PATH), like /var/run/openvswitch/ovs-vswitchd.zs.ctl", u)
		}
	}
	if len(c.Devices) > MaxDevices {
		add("config.devices", "%d devices, more than %d", len(c.Devices), MaxDevices)
		return Config{}, sdk.Invalid(problems...)
	}
	seen := map[string]int{}
	for i, d := range c.Devices {
		f := fmt.Sprintf("config.devices[%d]", i)
		switch {
		case d.DSA == "":
			add(f+".dsa", "is required: the device's idxd name (dsa0) or PCI address (0000:6a:01.0)")
		case !dsaNameRE.MatchString(d.DSA) && !bdfRE.MatchString(d.DSA):
			add(f+".dsa", "%.64q: want an idxd name (dsa0) or a PCI address in lower case (0000:6a:01.0)", d.DSA)
		default:
			if j, dup := seen[d.DSA]; dup {
				add(f+".dsa", "%s is configured twice (devices[%d] too): merge the two entries", d.DSA, j)
			}
			seen[d.DSA] = i
		}
		switch d.Driver {
		case "", DriverIDXD, DriverVFIO:
		default:
			add(f+".driver", "%.64q: want idxd or vfio-pci", d.Driver)
		}
		if d.Engines < 0 {
			add(f+".engines", "%d: must not be negative", d.Engines)
		}
		if d.NUMA != nil && (*d.NUMA < 0 || *d.NUMA > 1023) {
			add(f+".numa", "%d: want a NUMA node number 0-1023", *d.NUMA)
		}
		w := d.WQs
		for name, v := range map[string]int{"count": w.Count, "size": w.Size, "priority": w.Priority, "maxBatchSize": w.MaxBatchSize} {
			if v < 0 {
				add(f+".wqs."+name, "%d: must not be negative (0 takes the default)", v)
			}
		}
		if len(w.NamePrefix) > 64 {
			add(f+".wqs.namePrefix", "%d bytes, more than 64", len(w.NamePrefix))
		}
	}
	if len(problems) > 0 {
		return Config{}, sdk.Invalid(problems...)
	}
	c.Root = filepath.Clean(c.Root)
	if c.Simulate != "" {
		c.Simulate = filepath.Clean(c.Simulate)
	}
	if c.OVS.Unixctl != "" {
		c.OVS.Unixctl = filepath.Clean(c.OVS.Unixctl)
	}
	return c, nil
}

// Request is the library's request for the configuration's devices, for the OVS user owner
// (nil: no permission steps; the device nodes keep the kernel's owner and mode).
func (c Config) Request(owner *dsa.Owner) dsa.Request {
	req := dsa.Request{OVSUser: owner, AllowReconfigure: c.AllowReconfigure}
	for _, d := range c.Devices {
		req.Devices = append(req.Devices, dsa.DeviceRequest{
			Device: d.DSA, Driver: d.driver(), Engines: d.Engines, NUMA: d.NUMA,
			WQs: dsa.WQRequest{Count: d.WQs.Count, Mode: d.WQs.Mode, Size: d.WQs.Size, Priority: d.WQs.Priority,
				MaxBatchSize: d.WQs.MaxBatchSize, ATSDisable: d.WQs.ATSDisable, NamePrefix: d.WQs.NamePrefix},
		})
	}
	return req
}

// parseUser parses OVSConfig.User: "uid:gid", or a user name looked up in root's etc/passwd
// (its primary group).
func parseUser(root, user string) (*dsa.Owner, error) {
	if u, g, ok := strings.Cut(user, ":"); ok {
		uid, err1 := strconv.Atoi(u)
		gid, err2 := strconv.Atoi(g)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%q: want uid:gid in decimal", user)
		}
		return &dsa.Owner{UID: uid, GID: gid, Name: user}, nil
	}
	f, err := os.Open(filepath.Join(root, "etc", "passwd"))
	if err != nil {
		return nil, fmt.Errorf("look up user %q: %w", user, err)
	}
	defer f.Close()
	return lookupPasswd(f, user)
}

// indexPaths rewrites the list indices of an *api.Error's problem fields from the SDK's
// "config.devices.0.wqs" to "config.devices[0].wqs", as the plugin's own checks name them.
func indexPaths(err error) error {
	var e *api.Error
	if !errors.As(err, &e) {
		return err
	}
	ps := slices.Clone(e.Problems)
	for i := range ps {
		ps[i].Field = dottedIndex.ReplaceAllString(ps[i].Field, "[$1]")
	}
	return sdk.Invalid(ps...)
}

var dottedIndex = regexp.MustCompile(`\.([0-9]+)\b`)

// unknownFields refuses a configuration with a field Config does not have, naming its whole
// path ("config.devices[0].wqs.colour") and the fields that exist there. Text that is not JSON
// is left to the decoder, which says so.
func unknownFields(raw []byte) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil
	}
	var problems []api.Problem
	walkFields(v, reflect.TypeFor[Config](), "config", &problems)
	if len(problems) > 0 {
		return sdk.Invalid(problems...)
	}
	return nil
}

// walkFields checks the JSON value v against the Go type t (structs by their json tags).
func walkFields(v any, t reflect.Type, path string, problems *[]api.Problem) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		fields := map[string]reflect.Type{}
		var names []string
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if name != "" && name != "-" {
				fields[name] = t.Field(i).Type
				names = append(names, name)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			ft, ok := fields[k]
			if !ok {
				*problems = append(*problems, api.Problem{Field: path + "." + k,
					Message: "unknown field (the fields here are " + strings.Join(names, ", ") + ")"})
				continue
			}
			walkFields(obj[k], ft, path+"."+k, problems)
		}
	case reflect.Slice:
		list, ok := v.([]any)
		if !ok {
			return
		}
		for i, e := range list {
			walkFields(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), problems)
		}
	}
}
