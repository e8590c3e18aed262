package simcard

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/cardcheck"
	"github.com/openiwarp/openiwarp/host/driver/rnic"
	hwsim "github.com/openiwarp/openiwarp/hw/sim"
)

// DefaultWidth is the data path width of "sim" without an argument.
const DefaultWidth = 64

func init() {
	driver.Register(Kind, func(name, arg string) (driver.Card, error) {
		a, err := driver.ParseCardArg(Kind, arg, []int{64, 512})
		if err != nil {
			return nil, err
		}
		if a.Width == 0 {
			a.Width = DefaultWidth
		}
		return Open(name, Config{Width: a.Width}, rnic.Options{StreamLog: a.RingLog})
	})
}

// Open opens the sim card: the Verilated iwcard_w<cfg.Width> behind a
// Phys of cfg, the driver over it.
func Open(name string, cfg Config, opt rnic.Options) (*Card, error) {
	c, err := OpenWith(name, cfg, NewIWCard, opt)
	if err == nil {
		c.Phys.totals = &totals
	}
	return c, err
}

// NewIWCard is the NewDevice of the Verilated card top (hw/sim.Card):
// BAR0 accesses are AXI4-Lite transactions clocked until they complete,
// its DMA master is served from bus with timing t, and its interrupts go
// to bus. The library is built with make on first use.
func NewIWCard(width int, bus Bus, t hwsim.AXITiming, seed uint64) (Device, error) {
	path := hwsim.LibPath(fmt.Sprintf("iwcard_w%d", width), false)
	if err := hwsim.Build(path); err != nil {
		return nil, fmt.Errorf("building the Verilated iwcard_w%d (make, verilator and g++ are needed, inside the repository): %w", width, err)
	}
	c, err := hwsim.NewCard(hwsim.CardConfig{Width: width, Seed: seed, Mem: bus, Timing: t, Interrupt: bus.Interrupt})
	if err != nil {
		return nil, err
	}
	return iwcard{c}, nil
}

// iwcard is the Verilated card as a Device: an access that fails for
// another reason than an error response (an AXI protocol violation of the
// card, an access it never answers) stops the simulation.
type iwcard struct{ *hwsim.Card }

func (d iwcard) Read32(off uint32) (uint32, error) {
	v, err := d.Card.Read32(off)
	return v, regErr(err)
}

func (d iwcard) Write32(off, v uint32) error { return regErr(d.Card.Write32(off, v)) }

func (d iwcard) Describe() string {
	return fmt.Sprintf("the Verilated card top iwcard_w%d (every byte moved by RTL)", d.Width())
}

// regErr keeps an error response as the access's error; any other
// failure is a *cardcheck.SimFailure (the simulation stops).
func regErr(err error) error {
	if err == nil || errors.Is(err, hwsim.ErrRegResp) {
		return err
	}
	return &cardcheck.SimFailure{Err: err}
}

// Totals counts the work of every sim card of the process.
type Totals struct {
	Cycles     uint64 // RTL cycles simulated
	Checked    uint64 // the RTL's DMA writes found equal to the model's
	Bytes      uint64 // stream and payload bytes among them
	Mismatches uint64 // disagreements
}

// processTotals are the running sums behind ProcessTotals, and the
// first disagreements behind ProcessMismatches.
type processTotals struct {
	cycles, checked, bytes, mismatches atomic.Uint64

	mu       sync.Mutex
	reported []*MismatchError // the first maxProcessReported, in the order found
}

const maxProcessReported = 256

// ProcessMismatches are the first disagreements (256 at most) reported
// by any sim card of the process, in the order found: what a test that
// sees Totals.Mismatches move can log, whichever QP it ended.
func ProcessMismatches() []*MismatchError {
	totals.mu.Lock()
	defer totals.mu.Unlock()
	return append([]*MismatchError(nil), totals.reported...)
}

var totals processTotals

// ProcessTotals is the sum over every sim card this process opened.
func ProcessTotals() Totals {
	return Totals{Cycles: totals.cycles.Load(), Checked: totals.checked.Load(), Bytes: totals.bytes.Load(), Mismatches: totals.mismatches.Load()}
}
