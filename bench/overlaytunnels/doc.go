// Package overlaytunnels compares the overlay's tunnel choices (issue 17) between two network
// namespaces joined by one veth underlay: OVS-native vxlan and geneve on the userspace
// datapath (the br-phy/br-int recipe), the EthUDP engine (overlay/ethudp, plain and LZ4)
// bridged into OVS through a tap port, WireGuard in userspace (overlay/wg, IP only), and the
// EthUDP engine inside WireGuard (the encrypted layer-2 attachment). For each it measures TCP
// throughput with iperf3 and the CPU seconds per Gbit carried. The code is in the _test files:
// TestTunnelsCarryTraffic is the short CI form (every tunnel carries a ping and a TCP transfer)
// and `make bench-overlay-tunnels` runs BenchmarkOverlayTunnels, which prints a markdown table.
package overlaytunnels
