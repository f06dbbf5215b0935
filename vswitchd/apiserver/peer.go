package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// unixPeer reads the credentials of the process at the other end of c as the kernel recorded
// them when it connected: SO_PEERCRED (uid, gid, pid) and SO_PEERGROUPS (supplementary
// groups). A failure is kept in Peer.Err: such a caller is refused, never guessed.
func unixPeer(c net.Conn) *Peer {
	p := &Peer{Transport: "unix"}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		p.Err = fmt.Errorf("not a unix connection (%T)", c)
		return p
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		p.Err = fmt.Errorf("peer credentials: %w", err)
		return p
	}
	var cred *unix.Ucred
	var groups []int
	var credErr, groupsErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if credErr == nil {
			groups, groupsErr = peerGroups(int(fd))
		}
	}); err != nil {
		p.Err = fmt.Errorf("peer credentials: %w", err)
		return p
	}
	if err := errors.Join(credErr, groupsErr); err != nil {
		p.Err = fmt.Errorf("peer credentials (SO_PEERCRED, SO_PEERGROUPS): %w", err)
		return p
	}
	p.UID, p.GID, p.PID, p.Groups = int(cred.Uid), int(cred.Gid), int(cred.Pid), groups
	return p
}

// maxPeerGroups bounds SO_PEERGROUPS' answer (Linux's NGROUPS_MAX).
const maxPeerGroups = 65536

// peerGroups returns the supplementary groups of fd's peer (SO_PEERGROUPS, Linux 4.13+).
func peerGroups(fd int) ([]int, error) {
	buf := make([]uint32, 64)
	for {
		size := uint32(len(buf) * 4)
		_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_PEERGROUPS,
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&size)), 0)
		if errno == unix.ERANGE && int(size/4) > len(buf) && size/4 <= maxPeerGroups {
			buf = make([]uint32, size/4)
			continue
		}
		if errno != 0 {
			return nil, errno
		}
		out := make([]int, 0, size/4)
		for _, g := range buf[:size/4] {
			out = append(out, int(g))
		}
		return out, nil
	}
}

// tlsPeer identifies a TCP caller by the leaf of its verified certificate chain.
func tlsPeer(cs *tls.ConnectionState) *Peer {
	p := &Peer{Transport: "tcp"}
	if cs == nil || len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		p.Err = errors.New("no verified client certificate")
		return p
	}
	leaf := cs.VerifiedChains[0][0]
	p.Subject = leaf.Subject.String()
	if cn := leaf.Subject.CommonName; cn != "" {
		p.Names = append(p.Names, cn)
	}
	p.Names = append(p.Names, leaf.DNSNames...)
	for _, u := range leaf.URIs {
		p.Names = append(p.Names, u.String())
	}
	p.Names = append(p.Names, leaf.EmailAddresses...)
	return p
}

// connContext attaches the peer of a unix connection to the contexts of its requests (TCP
// peers are identified per request, after the TLS handshake: see identify).
func connContext(ctx context.Context, c net.Conn) context.Context {
	if _, ok := c.(*net.UnixConn); ok {
		return withPeer(ctx, unixPeer(c))
	}
	return ctx
}
