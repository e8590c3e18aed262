package gen

import (
	"fmt"
	"math/big"
)

// UARTTxDivisor is the bit time, in clock cycles, of a UART running at baud
// from a clock of clockHz, rounded to the nearest cycle; an error names a
// rate the clock cannot make within 2% (a receiver samples mid-bit, so the
// ten bits of a frame tolerate about 5% in all).
func UARTTxDivisor(clockHz, baud int) (int, error) {
	if clockHz <= 0 || baud <= 0 {
		return 0, fmt.Errorf("%w: uart_tx: clock %d Hz, baud %d: both must be positive", ErrInvalid, clockHz, baud)
	}
	d := (clockHz + baud/2) / baud
	if d < 2 || d > 1<<16 {
		return 0, fmt.Errorf("%w: uart_tx: a bit of %d baud is %d cycles of %d Hz (need 2 to 65536)", ErrInvalid, baud, d, clockHz)
	}
	actual := float64(clockHz) / float64(d)
	if e := (actual - float64(baud)) / float64(baud); e > 0.02 || e < -0.02 {
		return 0, fmt.Errorf("%w: uart_tx: %d baud from %d Hz is off by %.1f%% (more than 2%%)", ErrInvalid, baud, clockHz, 100*e)
	}
	return d, nil
}

// UARTTx builds uart_tx_d<divisor>: an 8N1 UART transmitter whose bits last
// divisor clock cycles. Its timing contract (golden/cycle.UARTTx models it):
// s_axis_tready is 1 while idle; the cycle after a byte is accepted the
// line goes low for the start bit, then carries the eight data bits, least
// significant first, and a stop bit (1), each divisor cycles long; the
// transmitter is idle again the cycle after the stop bit, so back-to-back
// bytes take 10 x divisor + 1 cycles each. tx reads 1 while idle and
// during reset.
func UARTTx(divisor int) (*Module, error) {
	if divisor < 2 || divisor > 1<<16 {
		return nil, fmt.Errorf("%w: uart_tx divisor %d (need 2 to 65536)", ErrInvalid, divisor)
	}
	m := NewModule(fmt.Sprintf("uart_tx_d%d", divisor), "",
		fmt.Sprintf("UART transmitter, 8 data bits, no parity, 1 stop bit, each bit %d clock cycles long (115200 baud from 12 MHz at divisor 104).", divisor),
		"Input: one byte per s_axis beat; s_axis_tready is 1 while the transmitter is idle. The cycle after a byte is accepted tx goes low for the start bit; the eight data bits follow, least significant first, then the stop bit (1). The transmitter is idle again the cycle after the stop bit: back-to-back bytes take 10 x divisor + 1 cycles each. tx is 1 while idle and during reset.")
	m.Clock()
	m.ResetPort()
	data := m.Input("s_axis_tdata", 8, "byte to send")
	valid := m.Input("s_axis_tvalid", 1, "")
	ready := m.Output("s_axis_tready", 1, "idle: a byte is taken")
	tx := m.Output("tx", 1, "serial line, idle high")

	bw := addrWidth(divisor)
	if bw < 2 {
		bw = 2
	}
	busy := m.RegDecl("busy", 1, "a frame is on the line")
	shreg := m.RegDecl("shreg", 10, "the frame's bits still to send, the current one in bit 0")
	left := m.RegDecl("left", 4, "bits after the current one")
	baud := m.RegDecl("baud", bw, "cycles left in the current bit, minus one")

	take := m.WireOf("take", And(Not(busy), valid), "a byte is accepted")
	bitEnd := m.WireOf("bit_end", And(busy, Eq(baud, C(bw, 0))), "the current bit's last cycle")
	last := m.WireOf("frame_end", And(bitEnd, Eq(left, C(4, 0))), "the stop bit's last cycle")
	m.Drive(busy, big.NewInt(0), Sel(take, C(1, 1), Sel(last, C(1, 0), busy)), nil)
	m.Drive(shreg, big.NewInt(0x3ff),
		Sel(take, Cat(C(1, 1), data, C(1, 0)), Cat(C(1, 1), Bits(shreg, 9, 1))),
		Or(take, bitEnd))
	m.Drive(left, big.NewInt(0), Sel(take, C(4, 9), Sub(left, C(4, 1))), Or(take, And(bitEnd, Not(last))))
	m.Drive(baud, big.NewInt(0), Sel(Or(take, bitEnd), C(bw, uint64(divisor-1)), Sub(baud, C(bw, 1))), Or(take, busy))
	m.Assign(ready, Not(busy))
	m.Assign(tx, Or(Not(busy), Bit(shreg, 0)))
	return m, m.Validate()
}
