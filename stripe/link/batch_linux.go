//go:build linux

package link

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// batchScratch is the sendmmsg vectors of one link, reused by every SendBatch.
type batchScratch struct {
	addrs [MaxBatch]unix.RawSockaddrLinklayer
	iovs  [MaxBatch]unix.Iovec
	msgs  [MaxBatch]unix.Mmsghdr
}

// SendBatch implements Batcher with sendmmsg: one system call for as many frames as the
// socket's send buffer takes.
func (l *packetLink) SendBatch(ctx context.Context, frames []Outgoing) (int, error) {
	if len(frames) > MaxBatch {
		return 0, fmt.Errorf("link %s: batch of %d frames: at most %d", l.name, len(frames), MaxBatch)
	}
	for _, f := range frames {
		if len(f.Dst) != 6 {
			return 0, fmt.Errorf("link %s: destination %v: want a 6-byte MAC", l.name, f.Dst)
		}
		if len(f.B) > l.mtu {
			return 0, fmt.Errorf("link %s: frame of %d bytes, MTU %d: %w", l.name, len(f.B), l.mtu, ErrTooLong)
		}
	}
	l.batchMu.Lock()
	defer l.batchMu.Unlock()
	if l.batch == nil {
		l.batch = &batchScratch{}
	}
	addrs, iovs, msgs := &l.batch.addrs, &l.batch.iovs, &l.batch.msgs
	defer clear(iovs[:len(frames)]) // keep no frame alive
	for i, f := range frames {
		a := &addrs[i]
		a.Family, a.Protocol, a.Ifindex, a.Halen = unix.AF_PACKET, htons(l.ethertype), int32(l.ifindex), 6
		copy(a.Addr[:], f.Dst)
		if len(f.B) > 0 {
			iovs[i].Base = &f.B[0]
		}
		iovs[i].SetLen(len(f.B))
		m := &msgs[i].Hdr
		m.Name, m.Namelen = (*byte)(unsafe.Pointer(a)), unix.SizeofSockaddrLinklayer
		m.Iov = &iovs[i]
		m.SetIovlen(1)
	}
	sent := 0
	staleDown, armed := false, false
	for sent < len(frames) {
		if err := ctx.Err(); err != nil {
			return sent, fmt.Errorf("link %s: send: %w", l.name, err)
		}
		stop := noStop
		if armed {
			stop = l.deadline(ctx, l.f.SetWriteDeadline)
		}
		var n int
		var serr error
		err := l.rc.Write(func(fd uintptr) bool {
			r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&msgs[sent])), uintptr(len(frames)-sent), 0, 0, 0)
			n, serr = int(r), nil
			if e != 0 {
				n, serr = 0, e
			}
			return serr != unix.EAGAIN || !armed
		})
		stop()
		switch {
		case err == nil && serr == unix.EAGAIN:
			armed = true
			continue
		case errors.Is(err, os.ErrDeadlineExceeded):
			armed = true
			continue
		case errors.Is(err, os.ErrClosed) || (err != nil && l.isClosed()):
			return sent, fmt.Errorf("link %s: send: %w", l.name, ErrClosed)
		case err != nil:
			return sent, fmt.Errorf("link %s: send: %w", l.name, err)
		}
		if serr != nil && isDown(serr) && !staleDown {
			if st, err := l.State(); err == nil && st.Usable() {
				staleDown = true // a down event's stale error: retry once (see Send)
				continue
			}
		}
		l.mu.Lock()
		for _, f := range frames[sent : sent+n] {
			l.stats.TxFrames++
			l.stats.TxBytes += uint64(len(f.B))
		}
		if serr != nil {
			l.stats.TxErrors++
		}
		l.mu.Unlock()
		sent += n
		if n == 0 && serr == nil {
			armed = true // nothing taken: wait for room
			continue
		}
		if serr != nil {
			return sent, fmt.Errorf("link %s: send %d bytes to %v: %w", l.name, len(frames[sent].B), frames[sent].Dst, serr)
		}
		armed = false
	}
	runtime.KeepAlive(frames)
	return sent, nil
}
