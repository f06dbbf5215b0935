package ovsproc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestPollKeepsTheLastErrorThatSaysWhatWasMissing: when ctx ends during the last try, that
// try's error says only that; Poll's error quotes the try before it instead. When every try was
// cut short, the last one is quoted.
func TestPollKeepsTheLastErrorThatSaysWhatWasMissing(t *testing.T) {
	end := errors.New("the deadline")
	t.Run("an earlier try failed while ctx was live", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(t.Context())
		defer cancel(nil)
		tries := 0
		err := Poll(ctx, func(ctx context.Context) error {
			tries++
			if tries < 3 {
				return fmt.Errorf("not past 4 yet: [b1 at %d]", tries)
			}
			cancel(end) // the deadline passes in the middle of the third try
			return fmt.Errorf("transact: %w", ctx.Err())
		})
		if !errors.Is(err, end) || !strings.Contains(err.Error(), "last try: not past 4 yet: [b1 at 2]") || strings.Contains(err.Error(), "transact") {
			t.Errorf("Poll: %v; want the deadline's cause and the second try's error", err)
		}
	})
	t.Run("every try was cut short", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(t.Context())
		defer cancel(nil)
		err := Poll(ctx, func(ctx context.Context) error {
			cancel(end)
			return fmt.Errorf("transact: %w", ctx.Err())
		})
		if !errors.Is(err, end) || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "last try: transact: context canceled") {
			t.Errorf("Poll: %v; want the only try's error", err)
		}
	})
}
