package cycle

import "fmt"

// UARTTxIn is one cycle of inputs of uart_tx_d<D>.
type UARTTxIn struct {
	Reset bool
	Data  byte
	Valid bool
}

// UARTTxOut is one cycle of outputs of uart_tx_d<D>.
type UARTTxOut struct {
	Ready bool // s_axis_tready
	TX    bool // the serial line
}

// UARTTx models uart_tx_d<D> (hw/gen.UARTTx): an 8N1 transmitter whose
// bits last D cycles. Ready is 1 while idle; the cycle after a byte is
// accepted the line carries the start bit (0) for D cycles, then the data
// bits least significant first and the stop bit (1), D cycles each; the
// transmitter is idle again the cycle after the stop bit (a byte every
// 10 x D + 1 cycles at most).
type UARTTx struct {
	divisor int
	frame   uint16 // bits still to send, the current one in bit 0
	bits    int    // bits of the frame still on the line, the current one included (0: idle)
	cycle   int    // cycles already spent in the current bit
}

// NewUARTTx models the transmitter with bits of divisor cycles.
func NewUARTTx(divisor int) (*UARTTx, error) {
	if divisor < 2 || divisor > 1<<16 {
		return nil, fmt.Errorf("%w: uart_tx divisor %d (need 2 to 65536)", ErrConfig, divisor)
	}
	return &UARTTx{divisor: divisor}, nil
}

// Step returns the outputs during this cycle, then takes the clock edge.
func (u *UARTTx) Step(in UARTTxIn) UARTTxOut {
	out := UARTTxOut{Ready: u.bits == 0, TX: u.bits == 0 || u.frame&1 == 1}
	switch {
	case in.Reset:
		u.bits, u.frame, u.cycle = 0, 0, 0
	case u.bits == 0:
		if in.Valid {
			u.frame, u.bits, u.cycle = 1<<9|uint16(in.Data)<<1, 10, 0
		}
	default:
		u.cycle++
		if u.cycle == u.divisor {
			u.cycle = 0
			u.bits--
			u.frame >>= 1
		}
	}
	return out
}

// UARTRx decodes an 8N1 serial line sampled once per clock cycle, bits of
// Divisor cycles: it finds each start bit's falling edge, samples every bit
// in its middle, and reports a frame whose stop bit is 0 as an error.
type UARTRx struct {
	Divisor int
	prev    bool
	busy    bool
	n       int // cycles since the start bit's falling edge
	data    byte
}

// ErrFraming is returned by UARTRx.Sample for a frame whose stop bit is 0.
var ErrFraming = fmt.Errorf("cycle: UART framing error (stop bit is 0)")

// Sample takes one cycle of the line; it returns a byte and true in the
// cycle its stop bit is sampled.
func (r *UARTRx) Sample(line bool) (byte, bool, error) {
	defer func() { r.prev = line }()
	if !r.busy {
		if r.prev && !line {
			r.busy, r.n, r.data = true, 0, 0
		}
		return 0, false, nil
	}
	r.n++
	mid := r.n - r.Divisor/2
	if mid < 0 || mid%r.Divisor != 0 {
		return 0, false, nil
	}
	switch k := mid / r.Divisor; {
	case k == 0:
		if line { // a glitch, not a start bit
			r.busy = false
		}
	case k <= 8:
		if line {
			r.data |= 1 << (k - 1)
		}
	default:
		r.busy = false
		if !line {
			return 0, false, ErrFraming
		}
		return r.data, true, nil
	}
	return 0, false, nil
}
