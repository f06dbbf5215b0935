#!/usr/bin/env bash
# capture-fixture.sh: record what the ovsplane vdpa library reads on this host — mlx5 PFs, their
# VFs and representors, auxiliary vnet devices, vdpa devices with their bus drivers and
# character devices, the loaded modules, the kernel release, the devlink eswitch modes and
# `vdpa -j` output — as an ovsplane vdpa fixture (vdpa/simhost's format) on stdout. Attach the
# file to a bug report; it becomes a test (vdpa/testdata). Read-only; no secrets are read (MACs
# of VF netdevs and vdpa devices are included: edit them out if they matter to you).
#
#   sudo examples/vdpa/capture-fixture.sh > myhost.fixture            all mlx5 PFs
#   sudo examples/vdpa/capture-fixture.sh 0000:65:00.0 > myhost.fixture   one PF
#
# Environment: SYSFS_ROOT (default /) is the root the tree is read from; DEVLINK and VDPA name
# the devlink and vdpa commands (iproute2), or "none" to skip them.
set -euo pipefail

ROOT=$(cd "${SYSFS_ROOT:-/}" && pwd -P)
DEVLINK=${DEVLINK:-devlink}
VDPA=${VDPA:-vdpa}
MARKER="ovsplane-fixture-chardev "

out() { printf '%s\n' "$*"; }

# abs PATH: root-relative path -> host path
abs() { if [ "$ROOT" = / ]; then printf '/%s' "$1"; else printf '%s/%s' "$ROOT" "$1"; fi; }

# rel HOSTPATH: host path (already resolved) -> root-relative path
rel() {
	local p=$1
	if [ "$ROOT" = / ]; then printf '%s' "${p#/}"; else printf '%s' "${p#"$ROOT"/}"; fi
}

real() { rel "$(readlink -f "$(abs "$1")")"; }

file() {
	local p=$1 v
	[ -f "$(abs "$p")" ] || return 0
	v=$(cat "$(abs "$p")" 2>/dev/null) || return 0
	v=${v//\\/\\\\}
	v=${v//$'\n'/\\n}
	out "file $p $v"
}

# wfile PATH: a write-only attribute (bind, unbind): present, content irrelevant
wfile() { [ -e "$(abs "$1")" ] && out "file $1" || true; }

link() { [ -L "$(abs "$1")" ] && out "link $1 $(readlink "$(abs "$1")")" || true; }

dir() { [ -d "$(abs "$1")" ] && out "dir $1" || true; }

children() { local d; d=$(abs "$1"); [ -d "$d" ] && ls -1 "$d" 2>/dev/null || true; }

chardev() {
	local p=$1 h mm
	h=$(abs "$p")
	if [ -c "$h" ]; then
		mm=$(stat -c '%t %T' "$h")
		out "chardev $p $((16#${mm% *})):$((16#${mm#* }))"
	elif [ -f "$h" ] && mm=$(cat "$h") && [ "${mm#"$MARKER"}" != "$mm" ]; then
		out "chardev $p ${mm#"$MARKER"}"
	fi
}

# driver DEVDIR BUS NAME: the device's driver link and the driver's link back
driver() {
	local d=$1 bus=$2 name=$3 drv
	link "$d/driver"
	[ -L "$(abs "$d/driver")" ] || return 0
	drv=$(basename "$(readlink "$(abs "$d/driver")")")
	link "sys/bus/$bus/drivers/$drv/$name"
	DRIVERS="$DRIVERS $bus/$drv"
}

netdevs() {
	local d=$1 n
	for n in $(children "$d/net"); do
		file "$d/net/$n/phys_port_name"
		file "$d/net/$n/phys_switch_id"
		file "$d/net/$n/address"
		link "sys/class/net/$n"
	done
}

vdpadev() {
	local d=$1 name=$2 c
	dir "$d"
	link "sys/bus/vdpa/devices/$name"
	driver "$d" vdpa "$name"
	for c in $(children "$d"); do
		case $c in vhost-vdpa-*)
			file "$d/$c/dev"
			link "sys/class/vhost-vdpa/$c"
			chardev "dev/$c"
			;;
		esac
	done
}

vf() {
	local vf=$1 d c
	d=$(real "sys/bus/pci/devices/$vf")
	link "sys/bus/pci/devices/$vf"
	for a in vendor device class numa_node; do file "$d/$a"; done
	link "$d/physfn"
	driver "$d" pci "$vf"
	netdevs "$d"
	for c in $(children "$d"); do
		case $c in
		mlx5_core.*)
			dir "$d/$c"
			link "$d/$c/driver"
			link "sys/bus/auxiliary/devices/$c"
			;;
		virtio[0-9]*)
			dir "$d/$c"
			link "sys/bus/virtio/devices/$c"
			netdevs "$d/$c"
			;;
		*)
			if [ -L "$(abs "sys/bus/vdpa/devices/$c")" ]; then vdpadev "$d/$c" "$c"; fi
			;;
		esac
	done
}

pf() {
	local pf=$1 d v
	d=$(real "sys/bus/pci/devices/$pf")
	link "sys/bus/pci/devices/$pf"
	for a in vendor device class numa_node sriov_totalvfs sriov_numvfs sriov_offset sriov_stride \
		sriov_drivers_autoprobe sriov_vf_device; do file "$d/$a"; done
	driver "$d" pci "$pf"
	netdevs "$d"
	for v in $(children "$d"); do
		case $v in virtfn*)
			link "$d/$v"
			vf "$(basename "$(readlink "$(abs "$d/$v")")")"
			;;
		esac
	done
	# devlink's answer matters only for mlx5 PFs (the library refuses others)
	if [ "$(cat "$(abs "$d/vendor")" 2>/dev/null)" = 0x15b3 ]; then eswitch "$pf"; fi
}

eswitch() {
	local pf=$1 j
	[ "$DEVLINK" = none ] && return 0
	if j=$("$DEVLINK" -j dev eswitch show "pci/$pf" 2>/dev/null); then
		out "json devlink-eswitch $(printf '%s' "$j" | tr -d '\n')"
	else
		out "# devlink dev eswitch show pci/$pf failed: not host-owned (DPU mode) or no devlink"
		out "eswitch pci/$pf unsupported"
	fi
}

vdpa_json() {
	local kind=$1 j
	shift
	[ "$VDPA" = none ] && return 0
	if j=$("$VDPA" -j "$@" 2>/dev/null); then
		out "json $kind $(printf '%s' "$j" | tr -d '\n')"
	else
		out "# $VDPA -j $* failed (no vdpa netlink family?)"
	fi
}

main() {
	local pfs=("$@") p m d
	if [ ${#pfs[@]} -eq 0 ]; then
		for p in $(children sys/bus/pci/devices); do
			[ "$(cat "$(abs "sys/bus/pci/devices/$p/vendor")" 2>/dev/null)" = 0x15b3 ] || continue
			[ -e "$(abs "sys/bus/pci/devices/$p/sriov_totalvfs")" ] || continue
			[ -e "$(abs "sys/bus/pci/devices/$p/physfn")" ] && continue
			pfs+=("$p")
		done
	fi
	out "ovsplane-vdpa-fixture 1"
	out "# captured by capture-fixture.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ), PFs: ${pfs[*]:-none}"
	file proc/sys/kernel/osrelease
	dir dev
	for m in mlx5_core vdpa mlx5_vdpa vhost_vdpa virtio_vdpa; do dir "sys/module/$m"; done
	DRIVERS=""
	for p in "${pfs[@]}"; do pf "$p"; done
	for d in $(printf '%s\n' $DRIVERS pci/vfio-pci vdpa/vhost_vdpa vdpa/virtio_vdpa | sort -u); do
		wfile "sys/bus/${d%%/*}/drivers/${d#*/}/bind"
		wfile "sys/bus/${d%%/*}/drivers/${d#*/}/unbind"
	done
	dir sys/bus/auxiliary/devices
	for d in $(children sys/bus/auxiliary/drivers); do
		case $d in mlx5_vdpa*) dir "sys/bus/auxiliary/drivers/$d" ;; esac
	done
	file sys/bus/vdpa/drivers_autoprobe
	dir sys/bus/vdpa/devices
	dir sys/bus/virtio/devices
	dir sys/class/vhost-vdpa
	vdpa_json vdpa-mgmtdev mgmtdev show
	vdpa_json vdpa-dev dev show
	vdpa_json vdpa-config dev config show
}

main "$@" | awk '!seen[$0]++'
