package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ovsplane/ovsplane/dsa"
	"github.com/ovsplane/ovsplane/internal/ovsproc"
	"github.com/ovsplane/ovsplane/plugins/dsa/internal/dsaplugin"
)

// detectOptions are the command line's --detect settings.
type detectOptions struct {
	Root, Simulate, OVSRunDir string
	// OVSCtl, when set, is ovs-vswitchd's unixctl socket, used instead of finding one in
	// OVSRunDir.
	OVSCtl string
	JSON   bool
}

// Report is what --detect prints (as JSON with --json).
type Report struct {
	// Simulated is the simulated kernel's directory; "" for a real host.
	Simulated string `json:"simulated,omitempty"`
	// Host is the dsa bus as the library discovered it.
	Host *dsa.Inventory `json:"host"`
	// Problems are what keeps each device from serving DPDK, by code.
	Problems []dsa.Warning `json:"problems,omitempty"`
	// OVS is the running ovs-vswitchd as its unixctl socket tells.
	OVS OVSReport `json:"ovs"`
}

// OVSReport is the running ovs-vswitchd, read through its unixctl socket.
type OVSReport struct {
	// RunDir is the run directory the socket was looked for in; "" when --ovs-ctl named it.
	RunDir string `json:"run_dir,omitempty"`
	// Socket is ovs-vswitchd's unixctl socket; "" when none was found.
	Socket string `json:"socket,omitempty"`
	// Running is false when no unixctl socket answers in RunDir; Error says what was tried.
	Running bool   `json:"running"`
	Error   string `json:"error,omitempty"`
	// Version is ovs-vswitchd's version ("3.1.0"); DPDK whether the build has DPDK (its
	// dpdk/… commands).
	Version string `json:"version,omitempty"`
	DPDK    bool   `json:"dpdk"`
	// Capability is dsa.ProbeOVS's verdict on the build's commands.
	Capability *dsa.OVSCapability `json:"capability,omitempty"`
	// PMDs are its PMD threads (pmd-rxq-show), PMDError why they could not be read, and
	// Assignment the work queue each would use among the enabled user work queues.
	PMDs       []dsa.PMD       `json:"pmds,omitempty"`
	PMDError   string          `json:"pmd_error,omitempty"`
	Assignment *dsa.Assignment `json:"assignment,omitempty"`
}

// cliContext is a context that Ctrl-C or 30 seconds end.
func cliContext() (context.Context, func()) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	return ctx, func() { cancel(); stop() }
}

// openHost opens the library on the machine root or simulate names.
func openHost(root, simulate string, stderr io.Writer) (*dsa.Host, *dsaplugin.Machine, error) {
	cfg := dsaplugin.Config{Root: root, Simulate: simulate}
	if cfg.Root == "" {
		cfg.Root = dsaplugin.DefaultRoot
	}
	if simulate != "" {
		abs, err := filepath.Abs(simulate)
		if err != nil {
			return nil, nil, err
		}
		cfg.Simulate, cfg.Root = abs, dsaplugin.DefaultRoot
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m, err := dsaplugin.OpenMachine(cfg, log)
	if err != nil {
		return nil, nil, err
	}
	h, err := dsa.New(dsa.Config{FS: m.FS, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	return h, m, nil
}

// runDetect prints what the machine and the running ovs-vswitchd can do. It changes nothing.
func runDetect(o detectOptions, stdout, stderr io.Writer) error {
	ctx, done := cliContext()
	defer done()
	h, m, err := openHost(o.Root, o.Simulate, stderr)
	if err != nil {
		return err
	}
	inv, err := h.Discover(ctx)
	if err != nil {
		return fmt.Errorf("discover: %w", err)
	}
	r := Report{Simulated: m.Simulated, Host: inv, Problems: hostProblems(inv)}
	r.OVS = probeOVS(ctx, o.OVSRunDir, o.OVSCtl, userWQs(inv))
	if o.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	_, err = io.WriteString(stdout, r.Text())
	return err
}

// userWQs are the work queues DPDK's idxd bus would take now: enabled user queues with a
// device node.
func userWQs(inv *dsa.Inventory) []dsa.WQRef {
	var out []dsa.WQRef
	for _, d := range inv.Devices {
		for _, wq := range d.WQs {
			if wq.State == "enabled" && wq.Type == "user" && wq.DevNode != "" {
				out = append(out, dsa.WQRef{Name: wq.Name, Device: d.Name, NUMA: d.NUMA})
			}
		}
	}
	return out
}

// hostProblems are the catalogue's findings on the inventory: no bus or no device
// (DSA_ABSENT), no PASID (DSA_NO_SVA), clients (DSA_BUSY).
func hostProblems(inv *dsa.Inventory) []dsa.Warning {
	var out []dsa.Warning
	switch {
	case !inv.BusPresent:
		return []dsa.Warning{{Code: dsa.CodeAbsent, Object: "sys/bus/dsa",
			Message: "no /sys/bus/dsa: the idxd driver is not loaded (modprobe idxd); DSA needs a 4th-gen Xeon (Sapphire Rapids) or later"}}
	case len(inv.Devices) == 0:
		return []dsa.Warning{{Code: dsa.CodeAbsent, Object: "sys/bus/dsa",
			Message: "the dsa bus has no device: this CPU has no DSA, or it is disabled in the BIOS"}}
	}
	for _, d := range inv.Devices {
		obj := deviceName(d)
		if d.PCIDriver != "vfio-pci" && !d.PASIDEnabled {
			out = append(out, dsa.Warning{Code: dsa.CodeNoSVA, Object: obj,
				Message: "pasid_enabled=0: user work queues need shared virtual addressing, IOMMU scalable mode (boot with intel_iommu=on,sm_on); or give the device to vfio-pci"})
		}
		if d.Clients > 0 {
			out = append(out, dsa.Warning{Code: dsa.CodeBusy, Object: obj,
				Message: fmt.Sprintf("%d clients use the device: it will not be reconfigured until they close it", d.Clients)})
		}
	}
	return out
}

func deviceName(d dsa.Device) string {
	if d.Name != "" {
		return d.Name
	}
	return d.BDF
}

// probeOVS reads the ovs-vswitchd of runDir through its unixctl socket (ctl when set, else the
// one found in runDir): version, commands (dsa.ProbeOVS), PMD threads and the work queue each
// would use among wqs.
func probeOVS(ctx context.Context, runDir, ctl string, wqs []dsa.WQRef) OVSReport {
	r := OVSReport{RunDir: runDir}
	if ctl != "" {
		r.RunDir = ""
	} else {
		var err error
		if ctl, err = ovsproc.VswitchdCtl(runDir); err != nil {
			r.Error = err.Error()
			return r
		}
	}
	r.Socket = ctl
	cmds, err := ovsproc.AppctlCommands(ctx, ctl)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.Running = true
	if out, err := ovsproc.Unixctl(ctx, ctl, "version"); err == nil {
		if f := strings.Fields(out); len(f) > 0 {
			r.Version = f[len(f)-1]
		}
	}
	r.DPDK = slices.ContainsFunc(cmds, func(c string) bool { return strings.HasPrefix(c, "dpdk/") })
	dpdkVersion := ""
	if r.DPDK {
		dpdkVersion = "version-unknown" // unixctl does not tell it; ovs-vsctl get Open_vSwitch . dpdk_version does
	}
	c := dsa.ProbeOVS(cmds, nil, r.Version, dpdkVersion)
	r.Capability = &c
	if !slices.Contains(cmds, dsaplugin.PMDRxqShowCommand) {
		r.PMDError = "this ovs-vswitchd has no " + dsaplugin.PMDRxqShowCommand
		return r
	}
	pmds, err := dsaplugin.ReadPMDs(ctx, ctl)
	if err != nil {
		r.PMDError = err.Error()
		return r
	}
	r.PMDs = pmds
	a := dsa.AssignPMDs(pmds, wqs)
	r.Assignment = &a
	return r
}

// Text renders the report for people.
func (r Report) Text() string {
	var b strings.Builder
	if r.Simulated != "" {
		fmt.Fprintf(&b, "SIMULATED host: the simulated idxd kernel in %s (no hardware read)\n", r.Simulated)
	}
	inv := r.Host
	if inv.BusPresent {
		d := inv.Drivers
		fmt.Fprintf(&b, "dsa bus: present; drivers: idxd %s, user %s, dmaengine %s, dsa (pre-5.19 kernel) %s\n",
			yesNo(d.IDXD), yesNo(d.User), yesNo(d.DMAEngine), yesNo(d.Compat))
	} else {
		b.WriteString("dsa bus: absent\n")
	}
	for _, d := range inv.Devices {
		deviceText(&b, d)
	}
	if len(r.Problems) > 0 {
		b.WriteString("problems:\n")
		for _, p := range r.Problems {
			fmt.Fprintf(&b, "  %s: %s: %s\n", p.Code, p.Object, p.Message)
		}
	}
	ovsText(&b, r.OVS)
	return b.String()
}

func deviceText(b *strings.Builder, d dsa.Device) {
	fmt.Fprintf(b, "%s: PCI %s (%s), PCI driver %s, NUMA node %d, IOMMU group %s\n",
		orDash(d.Name), d.BDF, orDash(d.PCIID), orDash(d.PCIDriver), d.NUMA, orDash(d.IOMMUGroup))
	if d.PCIDriver == "vfio-pci" {
		b.WriteString("  given to vfio-pci: DPDK configures its queues itself (dpdk-extra -a " + d.BDF + ",max_queues=N)\n")
		return
	}
	fmt.Fprintf(b, "  state %s, configurable %s, PASID (shared virtual addressing) %s, clients %d\n",
		orDash(d.State), yesNo(d.Configurable), onOff(d.PASIDEnabled), d.Clients)
	fmt.Fprintf(b, "  capacity: %d groups, %d engines, %d work queues sharing %d descriptors, batches up to %d, transfers up to %d bytes\n",
		d.MaxGroups, d.MaxEngines, d.MaxWQs, d.MaxWQSize, d.MaxBatchSize, d.MaxTransferSize)
	configured := 0
	for _, wq := range d.WQs {
		if wq.Size == 0 && wq.Type == "none" && wq.State != "enabled" {
			continue
		}
		configured++
		fmt.Fprintf(b, "  %s: %s, type %s, name %s, size %d, priority %d, group %d, %s", wq.Name, orDash(wq.Mode), orDash(wq.Type),
			orDash(wq.WQName), wq.Size, wq.Priority, wq.GroupID, orDash(wq.State))
		if wq.DevNode != "" {
			fmt.Fprintf(b, ", /%s", wq.DevNode)
		}
		if wq.Clients > 0 {
			fmt.Fprintf(b, ", %d clients", wq.Clients)
		}
		b.WriteString(dpdkVerdict(wq) + "\n")
	}
	if configured == 0 {
		fmt.Fprintf(b, "  no work queue configured (%d available)\n", len(d.WQs))
	}
}

// dpdkVerdict says whether DPDK's idxd bus takes a work queue, and why not.
func dpdkVerdict(wq dsa.WQ) string {
	switch {
	case wq.State != "enabled":
		return ": not enabled, DPDK will not see it"
	case wq.Type != "user":
		return ": not a user queue, DPDK will not see it"
	case !dsa.DPDKAcceptsName(wq.WQName, ""):
		if prefix, _, ok := strings.Cut(wq.WQName, "_"); ok && prefix != "" {
			return ": DPDK takes it only when run with --file-prefix " + prefix + " (its name does not start with dpdk_)"
		}
		return ": DPDK ignores it (names must start with dpdk_ or <file-prefix>_)"
	case wq.DevNode == "":
		return ": no device node, DPDK cannot open it"
	}
	return ": DPDK takes it"
}

func ovsText(b *strings.Builder, o OVSReport) {
	if !o.Running {
		if o.Socket == "" {
			fmt.Fprintf(b, "ovs: ovs-vswitchd is not running (no unixctl socket in %s; --ovs-rundir names another run directory, --ovs-ctl a socket started with --unixctl=PATH)\n", o.RunDir)
		} else {
			fmt.Fprintf(b, "ovs: ovs-vswitchd's unixctl socket %s does not answer: %s\n", o.Socket, o.Error)
		}
		return
	}
	dpdk := "without DPDK"
	if o.DPDK {
		dpdk = "with DPDK"
	}
	where := "unixctl in " + o.RunDir
	if o.RunDir == "" {
		where = "unixctl " + o.Socket
	}
	fmt.Fprintf(b, "ovs: ovs-vswitchd %s %s (%s)\n", orDash(o.Version), dpdk, where)
	if c := o.Capability; c != nil {
		if c.VhostAsync {
			fmt.Fprintf(b, "  vhost async (DMA copies): yes — %s\n", c.Reason)
		} else {
			fmt.Fprintf(b, "  vhost async (DMA copies): no\n    %s: %s\n", dsa.CodeOVSNoVhostAsync, c.Reason)
		}
	}
	if o.PMDError != "" {
		fmt.Fprintf(b, "  PMD threads: unknown (%s)\n", o.PMDError)
		return
	}
	if len(o.PMDs) == 0 {
		b.WriteString("  PMD threads: none (no DPDK port polled yet)\n")
		return
	}
	for i, p := range o.PMDs {
		var ports []string
		for _, q := range p.Rxqs {
			ports = append(ports, fmt.Sprintf("%s/%d", q.Port, q.Queue))
		}
		fmt.Fprintf(b, "  PMD core %d (NUMA %d): polls %s", p.Core, p.NUMA, orDash(strings.Join(ports, " ")))
		if o.Assignment != nil && i < len(o.Assignment.PMDs) {
			if a := o.Assignment.PMDs[i]; a.WQ != nil {
				fmt.Fprintf(b, "; would use %s (%s, NUMA %d)", a.WQ.Name, a.WQ.Device, a.WQ.NUMA)
			} else {
				b.WriteString("; no work queue for it: CPU copy")
			}
		}
		b.WriteString("\n")
	}
	if o.Assignment != nil {
		for _, w := range o.Assignment.Warnings {
			fmt.Fprintf(b, "  %s: %s: %s\n", w.Code, w.Object, w.Message)
		}
	}
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

func onOff(v bool) string {
	if v {
		return "on"
	}
	return "off"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
