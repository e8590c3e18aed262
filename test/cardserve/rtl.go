package cardserve

import (
	"fmt"

	"github.com/openiwarp/openiwarp/host/driver/cardcheck"
	"github.com/openiwarp/openiwarp/host/driver/simcard"
	hwsim "github.com/openiwarp/openiwarp/hw/sim"
)

// RTLTiming is how guest RAM answers the Verilated card's AXI4 master:
// at once and in order. The guest's RAM is mapped here, so any latency
// would be made up; the AXI rules are still checked every cycle.
var RTLTiming = hwsim.AXITiming{}

// RTL is the Verilated card top iwcard_w<width> (hw/sim.Card, built by
// make hw-sim-libs; width 64 or 512) as a NewCard, with the card's golden
// model beside it checking every DMA write (host/driver/cardcheck, the
// check the sim card runs). A BAR0 access is an AXI4-Lite transaction
// clocked until its response (read side effects exact); Step clocks a
// batch of 64 cycles and reports false once the card has been quiet for
// 4096 cycles since the last access. The card's DMA master reaches guest
// RAM (a DMA outside it is refused: an error response, a *DMAError
// reported), its interrupt vectors go out through ivshmem. Each
// disagreement with the model is reported (Config.Report) as a
// *cardcheck.MismatchError naming the transaction; the RTL's write is then
// dropped (data) or its CQE marked FATAL_ERR, as in the sim card.
func RTL(width int) NewCard {
	return func(h Host) (Card, error) {
		if width != 64 && width != 512 {
			return nil, fmt.Errorf("cardserve: the RTL card's width is 64 or 512, not %d", width)
		}
		p, err := cardcheck.New(cardcheck.Config{Width: width}, pairHost{h}, func(w int, bus cardcheck.Bus) (cardcheck.Device, error) {
			return simcard.NewIWCard(w, bus, RTLTiming, 1)
		})
		if err != nil {
			return nil, fmt.Errorf("cardserve: the RTL card: %w", err)
		}
		p.OnMismatch(func(_ uint32, err error) { h.Report(err) })
		return &rtlCard{p}, nil
	}
}

// rtlCard is the checked pair as a Card.
type rtlCard struct{ *cardcheck.Pair }

// Checked is what the model has checked so far.
func (c *rtlCard) Checked() CheckStats {
	n := c.Counts()
	return CheckStats{Cycles: c.Cycles(), Checked: n.Total(), Bytes: n.Bytes, Loose: n.Loose, Mismatches: n.Mismatches}
}

// pairHost is the Host as the checked pair sees it: the model reads guest
// RAM without counting as the card.
type pairHost struct{ Host }

func (h pairHost) ModelReadMem(addr uint64, p []byte) error { return h.Peek(addr, p) }

// CheckStats counts what the model beside an RTL card checked.
type CheckStats struct {
	Cycles     uint64 // RTL cycles simulated
	Checked    uint64 // the RTL's DMA writes found equal to the model's
	Bytes      uint64 // stream and payload bytes among them
	Loose      uint64 // writes accepted without a counterpart (timing-decided events)
	Mismatches uint64 // disagreements
}

// checkedCard is a Card with a model checking it.
type checkedCard interface{ Checked() CheckStats }

var _ checkedCard = (*rtlCard)(nil)
