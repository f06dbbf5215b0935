package ethudp

// Link-state thresholds of the reference, in ticks (one tick = one PING interval, 1 s there).
const (
	// DownAfterTicks: an up link goes down at a tick more than this many ticks after the last
	// PONG.
	DownAfterTicks = 5
	// UpWithinTicks: a down link comes up at a tick less than this many ticks after the last
	// PONG.
	UpWithinTicks = 4
)

// Monitor is the reference's link-state machine, driven by ticks and PONGs; it reads no clock.
// Each tick the tick counter advances and then: an up link whose last PONG is more than
// DownAfterTicks ticks old goes down; a down link whose last PONG is less than UpWithinTicks
// ticks old comes up. One deliberate difference: the reference starts as if a PONG had come at
// tick 0 (so it reports up for its first 3 seconds with no peer); a Monitor starts down and
// needs a real PONG. The zero value is a down link at tick 0. Not safe for concurrent use.
type Monitor struct {
	ticks    uint64
	lastPong uint64
	havePong bool
	up       bool
}

// Tick advances one interval and returns the state after it and whether it changed.
func (m *Monitor) Tick() (up, changed bool) {
	m.ticks++
	switch {
	case m.up && m.ticks > m.lastPong+DownAfterTicks:
		m.up = false
		return false, true
	case !m.up && m.havePong && m.ticks < m.lastPong+UpWithinTicks:
		m.up = true
		return true, true
	}
	return m.up, false
}

// Pong records a PONG at the current tick; the state changes at the next Tick.
func (m *Monitor) Pong() {
	m.lastPong, m.havePong = m.ticks, true
}

// Up reports whether the link is up.
func (m *Monitor) Up() bool { return m.up }

// Ticks returns the number of ticks so far.
func (m *Monitor) Ticks() uint64 { return m.ticks }
