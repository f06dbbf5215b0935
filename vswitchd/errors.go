package vswitchd

import (
	"context"
	"errors"
	"fmt"

	"github.com/ovsplane/ovsplane/model"
	"github.com/ovsplane/ovsplane/ovsdb"
	"github.com/ovsplane/ovsplane/vswitchd/batch"
)

// unknownOutcome reports errors after which a commit may or may not have happened.
func unknownOutcome(err error) bool {
	if notSent(err) {
		return false
	}
	return errors.Is(err, ovsdb.ErrTimeout) || errors.Is(err, ovsdb.ErrNotConnected) ||
		errors.Is(err, batch.ErrOutcomeUnknown) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded)
}

// classify wraps an error of a commit about kind/name with the Daemon's error kinds.
func classify(kind, name string, err error) error {
	switch {
	case disconnected(err): // OVSDB stayed down for the reconnect wait; the error says whether anything may be applied
		return fmt.Errorf("%w: %s %q: %w", model.ErrUnavailable, kind, name, err)
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		if unknownOutcome(err) && errors.Is(err, batch.ErrOutcomeUnknown) {
			return fmt.Errorf("%s %q: request ended while being committed (it may still be applied; check its status): %w", kind, name, err)
		}
		return fmt.Errorf("%s %q: %w", kind, name, err)
	case errors.Is(err, model.ErrInvalid): // ovsdb.ErrInvalid is model's: err says its kind already
		return fmt.Errorf("%s %q: %w", kind, name, err)
	case errors.Is(err, ovsdb.ErrNotOwned), errors.Is(err, ovsdb.ErrConstraintViolation):
		return fmt.Errorf("%w: %s %q: %w", model.ErrConflict, kind, name, err)
	case errors.Is(err, model.ErrNotFound): // as model.ErrInvalid
		return fmt.Errorf("%s %q: %w", kind, name, err)
	case errors.Is(err, batch.ErrClosed):
		return fmt.Errorf("%w: %s %q: the daemon is shutting down: %w", model.ErrUnavailable, kind, name, err)
	case unknownOutcome(err):
		return fmt.Errorf("%w: %s %q: %w", model.ErrUnavailable, kind, name, err)
	}
	return fmt.Errorf("%s %q: %w", kind, name, err)
}
