#!/usr/bin/env bash
# Prepares this machine for ovsplane's integration tests: installs the Debian packages they use
# and reserves hugepages for OVS-DPDK. Needs root; idempotent; changes nothing that is already in
# place. Called by `make test`.
set -euo pipefail

PACKAGES=(openvswitch-switch-dpdk dpdk librte-net-af-packet23 librte-mempool-ring23 iproute2 ethtool iputils-ping iperf3 tcpdump python3-ovsdbapp python3-os-vif chromium-headless-shell postgresql-15 libdpdk-dev librte-dma-idxd23 gcc pkg-config curl man-db groff-base systemd make)
HUGEPAGES=${OVSPLANE_HUGEPAGES:-1024}   # 2 MiB pages: 2 GiB, enough for one DPDK vswitchd

if [ "$(id -u)" -ne 0 ]; then
	echo "lab-setup: not root: integration tests will be skipped (run 'sudo make test' to run them)" >&2
	exit 0
fi

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "lab-setup: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The packages' own services are not wanted: tests start private instances in temp dirs.
for svc in openvswitch-switch ovs-vswitchd ovsdb-server; do
	if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
		systemctl stop "$svc" || true
	fi
done

cur=$(cat /proc/sys/vm/nr_hugepages)
if [ "$cur" -lt "$HUGEPAGES" ]; then
	echo "$HUGEPAGES" > /proc/sys/vm/nr_hugepages
	cur=$(cat /proc/sys/vm/nr_hugepages)
	[ "$cur" -ge "$HUGEPAGES" ] || echo "lab-setup: warning: only $cur of $HUGEPAGES hugepages could be reserved" >&2
fi
if ! grep -qs ' /dev/hugepages hugetlbfs ' /proc/mounts; then
	mkdir -p /dev/hugepages
	mount -t hugetlbfs none /dev/hugepages
fi
echo "lab-setup: OVS $(ovs-vsctl --version | head -1 | awk '{print $NF}'), hugepages $cur x 2 MiB on /dev/hugepages"
