package daemoncmd

import (
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress shows how many of an apply's ports are done as a bar on a terminal
// (github.com/schollz/progressbar/v3, docs/decisions/progress-bars.md), redrawn at most every
// 100ms and erased when every port is done, leaving the line for the summary. On anything but
// a terminal it writes nothing at all, so piped or logged output stays the summary alone. Not
// safe for concurrent use: the caller serialises add.
type progress struct {
	bar *progressbar.ProgressBar // nil: draw nothing
}

// barWidth is the bar's width in cells, not counting its label and counters.
const barWidth = 40

func newProgress(w io.Writer, terminal bool, total int) *progress {
	if !terminal || total <= 0 {
		return &progress{}
	}
	bar := progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("ports"),
		progressbar.OptionSetWidth(barWidth),
		progressbar.OptionSetTheme(progressbar.ThemeASCII),
		progressbar.OptionShowCount(),
		progressbar.OptionSetItsString("ports"),
		progressbar.OptionShowIts(),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetRenderBlankState(true),
	)
	return &progress{bar: bar}
}

// add counts n more ports done.
func (p *progress) add(n int) {
	if p.bar != nil {
		// The bar writes to the terminal; a failed write to stderr has nowhere to be reported.
		_ = p.bar.Add(n)
	}
}

// done erases the bar (it is erased already when every port was counted).
func (p *progress) done() {
	if p.bar != nil && !p.bar.IsFinished() {
		_ = p.bar.Clear()
	}
}
