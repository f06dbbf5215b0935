package daemoncmd

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// progress draws "ports [=====>     ] 120/500" on a terminal, redrawn at most every 100ms and
// erased by done. On anything but a terminal it draws nothing. Not safe for concurrent use:
// the caller serialises add.
type progress struct {
	w          io.Writer
	on         bool
	total, n   int
	last       time.Time
	drawnWidth int
}

const barWidth = 40

func newProgress(w io.Writer, terminal bool, total int) *progress {
	p := &progress{w: w, on: terminal && total > 0, total: total}
	p.draw()
	return p
}

func (p *progress) add(n int) {
	p.n += n
	if time.Since(p.last) >= 100*time.Millisecond || p.n == p.total {
		p.draw()
	}
}

func (p *progress) draw() {
	if !p.on {
		return
	}
	p.last = time.Now()
	filled := barWidth * p.n / p.total
	bar := strings.Repeat("=", filled)
	if filled < barWidth {
		bar += ">" + strings.Repeat(" ", barWidth-filled-1)
	}
	line := fmt.Sprintf("ports [%s] %d/%d", bar, p.n, p.total)
	p.drawnWidth = len(line)
	fmt.Fprintf(p.w, "\r%s", line)
}

// done erases the bar, leaving the line for the summary.
func (p *progress) done() {
	if p.on && p.drawnWidth > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.drawnWidth))
	}
}
