// Package vdpaplugin is the ovsplane plugin for ports of type "vdpa": mlx5 (ConnectX-6 Dx,
// BlueField in NIC mode) vDPA ports for VMs, provisioned by the vdpa host library and attached
// to Open vSwitch as the VF representor (type=dpdk) or, with NVIDIA's OVS, as a type=dpdkvdpa
// interface.
//
// The plugin is a thin layer over package vdpa: Validate parses a port's options with
// vdpa.RequestFromOptions; Attach runs vdpa.Host.Plan and Apply (idempotent, re-verifying every
// step) and returns the plan's OVS shape; the vdpa.State Apply returns is the port's plugin state,
// stored by the daemon in OVSDB and handed back on replay and Detach; Detach runs Teardown on it,
// which undoes exactly what was recorded, newest first. Library errors keep their stable code
// (VF_IN_USE, SRIOV_BUSY, …) and advice in the message and get the contract's code for what the
// daemon should do (api.InvalidArgument, FailedPrecondition, NotFound, AlreadyExists, Unavailable).
//
// Besides port_provider it serves global_config (other_config:hw-offload=true, which every
// representor port's offload needs; configurable) and watcher (the dpdk and dpdkvdpa interfaces
// of the switch, whoever created them, so that a VF another interface already uses is refused)
// and datapath: a dpdk-pmd port's Attach returns its job (type dpdk-vdpa, named
// dpdk-vdpa-<port>), which Start runs as DPDK's dpdk-vdpa program (config dpdk_vdpa) under an
// sdk.Supervisor — restarted when it exits, stopped by Stop and by Close, its output logged and
// its process metrics streamed by Stats.
//
// The configuration names the machine: Root (the sysfs and /dev root, "/" on a host) with the
// real kernel's netlink, or Simulate, a vdpa fixture file (vdpa/simhost) run in the simulated
// kernel of vdpa/simkernel — a clearly labelled simulation in which no hardware is touched, for
// end-to-end tests of the daemon on machines without mlx5 NICs.
package vdpaplugin
