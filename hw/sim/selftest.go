package sim

import (
	"errors"
	"fmt"
	"strings"

	"github.com/openiwarp/openiwarp/golden/cycle"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// SelftestRun is what the Verilated board self-test printed and showed.
type SelftestRun struct {
	Lines  []string // report lines, CR LF included
	LED    uint8    // the LEDs when the last line had been received
	Cycles uint64
}

// ErrSelftest is wrapped by errors of a self-test run (a UART framing
// error, a line that never came).
var ErrSelftest = errors.New("sim: self-test")

// RunSelftest runs the Verilated self-test top of cfg (its library built
// from hw/rtl) until it has printed lines report lines on its UART, decoding
// the tx line as a terminal would (8N1 at the configured baud, sampled
// mid-bit). restartAfter > 0 holds the rx line low for 64 cycles right
// after that many lines, as a key typed in the terminal does; maxCycles
// bounds the run.
func RunSelftest(cfg gen.SelftestConfig, lines, restartAfter int, maxCycles uint64) (SelftestRun, error) {
	var r SelftestRun
	top, _, err := gen.SelftestModules(cfg)
	if err != nil {
		return r, err
	}
	div, err := gen.UARTTxDivisor(cfg.ClockHz, cfg.Baud)
	if err != nil {
		return r, err
	}
	l := LayoutOf(top)
	rxP, err := l.In("rx")
	if err != nil {
		return r, err
	}
	txP, err := l.Out("tx")
	if err != nil {
		return r, err
	}
	ledP, err := l.Out("led")
	if err != nil {
		return r, err
	}
	lib, err := Load(LibPath(top.Name, false))
	if err != nil {
		return r, err
	}
	inst := lib.New()
	defer inst.Close()
	const chunk = 1 << 14
	in := make([]uint32, chunk*l.InWords)
	out := make([]uint32, chunk*l.OutWords)
	dec := cycle.UARTRx{Divisor: div}
	var cur strings.Builder
	lowFrom, lowUntil := uint64(0), uint64(16) // rx low in [lowFrom, lowUntil): power-up
	for r.Cycles < maxCycles {
		for c := 0; c < chunk; c++ {
			at := r.Cycles + uint64(c)
			rxP.Set(in[c*l.InWords:], b2u(at < lowFrom || at >= lowUntil))
		}
		if err := inst.Run(in, out); err != nil {
			return r, err
		}
		for c := 0; c < chunk; c++ {
			o := out[c*l.OutWords:]
			b, ok, err := dec.Sample(txP.Get(o) != 0)
			if err != nil {
				return r, fmt.Errorf("%w: cycle %d: %v (line so far %q)", ErrSelftest, r.Cycles+uint64(c), err, cur.String())
			}
			if !ok {
				continue
			}
			cur.WriteByte(b)
			if b != '\n' {
				continue
			}
			r.Lines = append(r.Lines, cur.String())
			cur.Reset()
			if len(r.Lines) == lines {
				r.LED = uint8(ledP.Get(o))
				r.Cycles += uint64(c + 1)
				return r, nil
			}
			if len(r.Lines) == restartAfter {
				// Takes effect from the next chunk: the test is printing
				// nothing now, and will not for many thousand cycles.
				lowFrom = r.Cycles + chunk
				lowUntil = lowFrom + 64
			}
		}
		r.Cycles += chunk
	}
	return r, fmt.Errorf("%w: %d of %d lines in %d cycles (line so far %q)", ErrSelftest, len(r.Lines), lines, r.Cycles, cur.String())
}
