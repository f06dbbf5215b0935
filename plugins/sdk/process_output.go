package sdk

import (
	"bufio"
	"errors"
	"os"
	"time"
)

// capture logs the lines of one output stream of a run until it ends: each line (without its
// newline) as one Info record "process output" with the stream, the pid and the line; a line
// longer than MaxLineBytes is cut there (truncated=true) and its rest dropped; past
// MaxLinesPerSecond lines in a second the rest of that second's lines are counted, not logged.
func (p *Process) capture(f *os.File, stream string, r *run) {
	defer r.output.Done()
	defer f.Close()
	br := bufio.NewReaderSize(f, p.opts.MaxLineBytes)
	var (
		window  time.Time
		logged  int
		dropped uint64
	)
	flush := func() {
		if dropped > 0 {
			p.log.Warn("process output: lines dropped over the rate limit", "stream", stream, "pid", r.pid,
				"dropped", dropped, "limit_per_second", p.opts.MaxLinesPerSecond)
			dropped = 0
		}
	}
	defer flush()
	for {
		chunk, err := br.ReadSlice('\n')
		line := string(trimEOL(chunk))
		truncated := false
		for errors.Is(err, bufio.ErrBufferFull) { // drop the rest of an over-long line
			truncated = true
			_, err = br.ReadSlice('\n')
		}
		if len(chunk) > 0 {
			if now := time.Now(); now.Sub(window) >= time.Second {
				flush()
				window, logged = now, 0
			}
			if logged < p.opts.MaxLinesPerSecond {
				logged++
				if truncated {
					p.log.Info("process output", "stream", stream, "pid", r.pid, "line", line, "truncated", true)
				} else {
					p.log.Info("process output", "stream", stream, "pid", r.pid, "line", line)
				}
			} else {
				dropped++
				p.mu.Lock()
				p.st.LinesDropped++
				p.mu.Unlock()
			}
		}
		if err != nil { // io.EOF once every writer is gone, or the pipe closed by wait
			return
		}
	}
}

// trimEOL removes a trailing "\n" or "\r\n".
func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}
