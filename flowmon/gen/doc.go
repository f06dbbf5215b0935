// Package gen is flowmon's traffic generator and receiver: it writes UDP/IPv4 frames of one size
// for a set of distinct flows (5-tuples) into a Linux interface through an AF_PACKET socket with
// a TX ring (TPACKET_V2, PACKET_TX_RING over mmap; plain send(2) when the kernel refuses the
// ring), paced by a token bucket, and counts them per flow on another interface with an
// AF_PACKET receiver. A Report puts what was sent next to what was received, per flow: packets,
// L3 bytes (what NetFlow's dOctets count), loss, duplicates, reordering and throughput, as a
// plain struct, a text table or JSON.
//
// Every frame carries a 22-byte payload header right after the UDP header (see Header): a magic
// number, the flow index, the flow's sequence number and the send time, so the receiver can tell
// its own frames from foreign ones and count loss and reordering per flow.
//
// Sockets are created in the network namespace of the calling thread: open a Generator or a
// Receiver from inside the namespace that holds its interface (a test's lab.Netns.Do); Run may
// be called from any goroutine afterwards. Opening AF_PACKET sockets needs CAP_NET_RAW.
package gen
