//go:build !linux

package gen

import "fmt"

// NewGenerator fails: AF_PACKET sockets exist on Linux only.
func NewGenerator(spec Spec) (*Generator, error) {
	return nil, fmt.Errorf("generator on %s: AF_PACKET needs Linux", spec.Interface)
}

// Receiver is unavailable: AF_PACKET sockets exist on Linux only.
type Receiver struct{}

// NewReceiver fails: AF_PACKET sockets exist on Linux only.
func NewReceiver(spec ReceiverSpec) (*Receiver, error) {
	return nil, fmt.Errorf("receiver on %s: AF_PACKET needs Linux", spec.Interface)
}
