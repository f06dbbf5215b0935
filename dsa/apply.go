package dsa

import (
	"context"
	"errors"
)

// Result is what Apply did: the plan it carried out, whether it changed anything, and the
// dmadevs now usable.
type Result struct {
	Plan    *Plan   `json:"plan"`
	Changed bool    `json:"changed"`
	WQs     []WQRef `json:"wqs"`
}

// Apply makes req true: it plans, carries out the steps and verifies the outcome.
func (h *Host) Apply(ctx context.Context, req Request) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("dsa: Apply not implemented yet")
}

// Reset unbinds a device's work queues and the device from idxd, leaving it disabled. It refuses
// a device with clients (CodeBusy).
func (h *Host) Reset(ctx context.Context, device string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.New("dsa: Reset not implemented yet")
}
