// Package endpoint is the stripe's local endpoint for applications in any language (issue 16,
// "Endpoints for applications"): applications connect over a unix socket, TCP (loopback by
// default) or UDP, register, send messages to a peer application on another node and receive
// the messages addressed to them, in order, each once, carried by the stripe engine over all
// links. Every registered application gets a fair share of the real-time available bandwidth
// and is paced to it.
//
// # Protocol
//
// Every message, in both directions and on every transport, is a 4-byte big-endian length of
// the rest, a type byte, then the type's fixed fields (big-endian) and a variable tail:
//
//	1 register    tag u32, service u16, local port u16, peer node u32, peer port u16,
//	              rate u64 (bytes/s, 0: no demand), name length u8, name
//	2 registered  tag u32, app id u32
//	3 send        tag u32, app id u32, payload
//	4 deliver     app id u32, payload
//	5 deregister  tag u32, app id u32
//	6 ok          tag u32
//	7 error       tag u32, code u16, text (UTF-8)
//
// On a stream (unix, TCP) messages follow each other; over UDP one datagram is one message.
// Register and deregister get a reply with their tag. A send that succeeds gets none (so a
// client can stream); a refused one gets an error reply with its tag. Deliveries arrive at
// any time. Error codes are the Code constants (MALFORMED, TOO_LARGE, UNKNOWN_APP,
// ALREADY_REGISTERED, TOO_MANY_APPS, UNKNOWN_PEER, INVALID, QUEUE_FULL, SEND_FAILED,
// UNEXPECTED, NOT_RUNNING); the text says what was wrong and how to fix it. A message that
// does not decode is answered with MALFORMED and the connection goes on; a stream message
// whose length prefix is above the bound is answered with TOO_LARGE (with its tag) and its
// bytes are skipped.
//
// An application is (name, service, local port, peer node, peer port): the name and the
// (service, local port) pair are unique on the endpoint. Its messages travel on the engine
// connection (service, local port, peer port) and are delivered to the peer node's application
// registered with that service and local port = our peer port, whose peer port is our local
// port. A stream client's applications are deregistered when its connection closes; a datagram
// client (identified by its address) deregisters explicitly.
//
// # Messages over the engine
//
// The engine carries byte streams split into frames. The endpoint sends each message as
// pieces of at most one frame each: a flags byte (1: first piece, 2: last piece), on the first
// piece the message's length (u32), then data. The receiving endpoint puts them together per
// connection; a sequence gap (frames the engine declared lost) or a piece that does not fit
// drops the partial message (Stats.Gaps, Stats.Broken) and resumes at the next first piece.
//
// # Fair shares and pacing
//
// Every Period T, for each peer, the endpoint reads the engine's smoothed per-link send loads
// and computes the available bandwidth Σ(Vmax − V(t)) with fair.SeedShare, where V leaves out
// the registered applications' own smoothed rate (each link's share of it in proportion to
// its load): otherwise every application using its share would shrink everyone's next share.
// The capacity is divided with fair.MaxMin over the applications' demands (no demand: as much
// as possible), which with no demands is the seed's Σ(Vmax − V(t)) / APP_NB. Each
// application's messages go through its own fair.TokenBucket at its share (at least MinShare),
// re-shared on every period and whenever an application registers or leaves.
//
// # Bounds
//
// Config bounds the applications (1024), the message size (65000 bytes, one UDP datagram) and
// each application's queue depth in each direction (256). A full send queue makes a stream
// client wait (Backpressure, only that connection waits) and refuses a datagram client's
// message (QUEUE_FULL, SendDrops). A client that does not read loses the deliveries beyond its
// queue (ReceiveDrops); its writes never hold up other applications.
package endpoint
