package vdpa

import (
	"fmt"
	"net"
)

// planOVS says what to write to OVSDB.
func (pl *planner) planOVS() {
	req, pf := pl.req, pl.pf.Addr
	ifc := OVSInterface{Name: req.Name, Type: "dpdk",
		Options:     map[string]string{"dpdk-devargs": fmt.Sprintf("%s,representor=vf%d", pf, req.VF)},
		ExternalIDs: map[string]string{"vdpa-vf": pl.p.VF, "vdpa-mode": string(req.Mode)}}
	if req.MAC != "" {
		ifc.ExternalIDs["attached-mac"] = req.MAC
	}
	if req.Mode == ModeOVSFork {
		ifc.Type = "dpdkvdpa"
		ifc.Options = map[string]string{
			"vdpa-socket-path":         pl.socketPath(),
			"vdpa-accelerator-devargs": pl.p.VF,
			"dpdk-devargs":             fmt.Sprintf("%s,representor=[%d]", pf, req.VF),
		}
	}
	pl.p.OVS = OVSPlan{Interface: ifc, BridgeDatapathType: "netdev"}
	if *req.HWOffload && pl.ovs.OtherConfig["hw-offload"] != "true" {
		pl.p.OVS.OtherConfig = map[string]string{"hw-offload": "true"}
		pl.p.OVS.RestartRequired = true
		pl.warn(CodeOVSRestartRequired, "other_config:hw-offload changes to true: ovs-vswitchd restart required for flows to be offloaded")
	}
	pl.p.Notes = append(pl.p.Notes, fmt.Sprintf("the bridge needs datapath_type=netdev and, for traffic to leave the host, the uplink as type=dpdk options:dpdk-devargs=%s", pf))
}

func (pl *planner) socketPath() string {
	if pl.req.Mode == ModeDPDKPMD {
		// dpdk-vdpa appends the device's index to its --iface prefix; one device per process.
		return pl.req.SocketDir + "/" + pl.req.Name + "-0"
	}
	return pl.req.SocketDir + "/" + pl.req.Name + ".sock"
}

// planEndpoint reports the guest side and, for dpdk-pmd, the driver process.
func (pl *planner) planEndpoint() {
	req := pl.req
	switch {
	case req.Mode == ModeKernel && req.BusDriver == BusVirtioVDPA:
		pl.p.Endpoint = Endpoint{Kind: "netdev"}
		if d := pl.snap.Device(req.VDPAName); d != nil {
			pl.p.Endpoint.Netdev = d.Netdev
		}
	case req.Mode == ModeKernel:
		pl.p.Endpoint = Endpoint{Kind: "vhost-vdpa"}
		if d := pl.snap.Device(req.VDPAName); d != nil && d.CharDev != "" {
			pl.p.Endpoint.Path = d.CharDev
		}
	default:
		pl.p.Endpoint = Endpoint{Kind: "vhost-user", Path: pl.socketPath()}
	}
	if req.Mode != ModeDPDKPMD {
		return
	}
	pl.p.Process = &Process{
		Argv: append([]string{DPDKVDPAProgram}, DPDKVDPAArgs(req.Name, pl.p.VF, req.SocketDir)...),
		Note: "DPDK mlx5 vDPA driver for the VF (bifurcated: the VF stays on mlx5_core); --client: QEMU creates the socket (server=on)",
	}
}

func parseMAC(s string) net.HardwareAddr {
	if s == "" {
		return nil
	}
	hw, _ := net.ParseMAC(s)
	return hw
}

// DPDKVDPAProgram is the DPDK vDPA driver's program name, argv[0] of Process.Argv in mode
// dpdk-pmd (DPDK's examples/vdpa application).
const DPDKVDPAProgram = "dpdk-vdpa"

// DPDKVDPAArgs returns the arguments after the program of the DPDK vDPA driver process serving
// port name in mode dpdk-pmd: its own EAL file prefix, the VF (a PCI address) probed with
// class=vdpa, and the vhost-user socket prefix in socketDir (the process appends the device's
// index, hence the endpoint <socketDir>/<name>-0), as a client of the socket QEMU creates.
func DPDKVDPAArgs(name, vf, socketDir string) []string {
	return []string{"--file-prefix=ovsplane-vdpa-" + name, "-a", vf + ",class=vdpa",
		"--", "--iface", socketDir + "/" + name + "-", "--client"}
}
