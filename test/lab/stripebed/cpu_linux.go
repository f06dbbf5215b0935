//go:build linux

package stripebed

import (
	"syscall"
	"time"
)

// processCPU is the test process's user plus system CPU time so far (getrusage RUSAGE_SELF):
// the traffic sockets' work and, in the stripe arms, both nodes' engines and tunnels, including
// the kernel work done in their system calls.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
