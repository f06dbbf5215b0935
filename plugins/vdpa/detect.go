package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ovsplane/ovsplane/plugins/vdpa/internal/vdpaplugin"
	"github.com/ovsplane/ovsplane/vdpa"
)

// detectOptions are the command line's --detect settings.
type detectOptions struct {
	Root, Simulate string
	JSON           bool
}

// runDetect prints the library's read-only Detect report of the machine o names. It changes
// nothing; Ctrl-C or 30 seconds end it.
func runDetect(o detectOptions, stdout, stderr io.Writer) error {
	ctx, done, err := openCLIHost(o.Root, o.Simulate, stderr)
	if err != nil {
		return err
	}
	defer done()
	h, k := ctx.host, ctx.kernel
	// Run by hand the plugin has no facts about OVS (the daemon hands them over): the report
	// says so and the modes are judged on the host alone.
	r, err := h.Detect(ctx, vdpa.OVSState{})
	if err != nil {
		return fmt.Errorf("detect: %w", err)
	}
	return printResult(stdout, o.JSON, k, r, func() string { return reportText(r) })
}

// reportText renders a Detect report for people: the kernel, each mlx5 PF with its VFs, OVS,
// then per mode whether it works here and, if not, each reason with its code.
func reportText(r *vdpa.Report) string {
	var b strings.Builder
	k := r.Kernel
	fmt.Fprintf(&b, "kernel %s\n", orDash(k.Release))
	var mods []string
	for _, m := range slices.Sorted(maps.Keys(k.Modules)) {
		mods = append(mods, m+" "+yesNo(k.Modules[m]))
	}
	fmt.Fprintf(&b, "  modules: %s\n", orDash(strings.Join(mods, ", ")))
	fmt.Fprintf(&b, "  vdpa bus drivers: %s\n", orDash(strings.Join(k.BusDrivers, ", ")))
	support(&b, "  vdpa netlink", k.VDPANetlink)
	support(&b, "  set mac/mtu", k.MACMTU)
	support(&b, "  set max_vqp", k.MaxVQP)
	if len(r.PFs) == 0 {
		b.WriteString("no NVIDIA/Mellanox SR-IOV PF found\n")
	}
	for _, pr := range r.PFs {
		pfText(&b, pr)
	}
	if !r.OVS.Known {
		b.WriteString("ovs: not known here (ovsplaned hands the plugin these facts; by hand: ovs-vsctl get Open_vSwitch . dpdk_initialized iface_types other_config:hw-offload)\n")
	} else {
		fmt.Fprintf(&b, "ovs %s, dpdk %s, hw-offload %s\n", orDash(r.OVS.OVSVersion), orDash(r.OVS.DPDKVersion), yesNo(r.OVS.HWOffload))
		support(&b, "  dpdk", r.OVS.DPDK)
		support(&b, "  dpdkvdpa (NVIDIA OVS)", r.OVS.DPDKVDPA)
	}
	b.WriteString("modes:\n")
	for _, m := range vdpa.Modes {
		s := r.Modes[m]
		if !r.OVS.Known { // judged on the host alone: drop the "OVS unknown" reason
			s.Why = slices.DeleteFunc(slices.Clone(s.Why), func(w vdpa.Warning) bool { return w.Code == vdpa.CodeOVSNoDPDK })
			s.OK = len(s.Why) == 0
		}
		support(&b, "  "+string(m), s)
	}
	if !r.OVS.Known {
		b.WriteString("  (OVS not checked: every mode also needs ovs-vswitchd with DPDK initialized)\n")
	}
	return b.String()
}

func pfText(b *strings.Builder, pr vdpa.PFReport) {
	pf := pr.PF
	fmt.Fprintf(b, "PF %s (vendor %s device %s, driver %s), uplink %s, eswitch %s, VFs %d of %d\n",
		pf.Addr, pf.Vendor, pf.Device, orDash(pf.Driver), orDash(pf.Uplink), orDash(pf.Eswitch), pf.NumVFs, pf.TotalVFs)
	support(b, "  switchdev", pr.Switchdev)
	for _, vf := range pf.VFs {
		fmt.Fprintf(b, "  VF %d %s: driver %s, representor %s", vf.Index, vf.Addr, orDash(vf.Driver), orDash(vf.Representor))
		if vf.MgmtDev != nil {
			fmt.Fprintf(b, ", mgmtdev %s (max_vqp %d)", vf.MgmtDev, vf.MgmtDev.MaxVQP())
		} else {
			b.WriteString(", no mgmtdev")
		}
		fmt.Fprintf(b, ", vdpa devices %s\n", orDash(strings.Join(vf.Devices, " ")))
	}
	for _, d := range pr.Devices {
		fmt.Fprintf(b, "  vdpa %s on %s: bus driver %s", d.Name, d.Parent, orDash(d.BusDriver))
		if d.CharDev != "" {
			fmt.Fprintf(b, ", %s", d.CharDev)
		}
		if d.Netdev != "" {
			fmt.Fprintf(b, ", netdev %s", d.Netdev)
		}
		b.WriteString("\n")
	}
}

// support writes "label: ok" or "label: no" followed by one line per reason.
func support(b *strings.Builder, label string, s vdpa.Support) {
	if s.OK {
		fmt.Fprintf(b, "%s: ok\n", label)
		return
	}
	fmt.Fprintf(b, "%s: no\n", label)
	indent := strings.Repeat(" ", len(label)-len(strings.TrimLeft(label, " ")))
	for _, w := range s.Why {
		// Some reasons carry the library's whole error text, which starts with the code again.
		msg := strings.TrimPrefix(w.Message, string(w.Code)+": ")
		fmt.Fprintf(b, "%s    %s: %s\n", indent, w.Code, msg)
	}
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// cliHost is what --detect and --plan run on: a vdpa host on the machine (or the simulated
// one) the options name, with a context that Ctrl-C or 30 seconds end.
type cliHost struct {
	context.Context
	host   *vdpa.Host
	kernel *vdpaplugin.Kernel
}

// printResult prints a command's result v: as indented JSON with --json, otherwise as text,
// after a banner when the kernel is a simulation.
func printResult(stdout io.Writer, asJSON bool, k *vdpaplugin.Kernel, v any, text func() string) error {
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	if k.Simulated != "" {
		fmt.Fprintf(stdout, "SIMULATED host from fixture %s (no hardware read)\n", k.Simulated)
	}
	_, err := io.WriteString(stdout, text())
	return err
}

// openCLIHost opens the kernel of root (or the fixture simulate names) for a command run by
// hand; done releases it.
func openCLIHost(root, simulate string, stderr io.Writer) (c cliHost, done func(), err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	release := func() { cancel(); stop() }
	if simulate != "" {
		if simulate, err = filepath.Abs(simulate); err != nil {
			release()
			return cliHost{}, nil, err
		}
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	k, err := vdpaplugin.OpenKernel(vdpaplugin.Config{Root: root, Simulate: simulate}, log)
	if err != nil {
		release()
		return cliHost{}, nil, err
	}
	h := vdpa.New(vdpa.Config{FS: k.FS, VDPA: k.VDPA, Devlink: k.Devlink})
	return cliHost{Context: ctx, host: h, kernel: k}, func() { _ = k.Close(); release() }, nil
}
