// Package modelcard is the "model" card, the default: the one driver of
// the openiwarp card (host/driver/rnic) over the card's transaction-level
// model (host/driver/cardmodel), in process and in pure Go, so every
// `go test` drives the real driver's rings, doorbells, STag table
// programming and stream bridge. The verbs suite and the fault-injection
// runs (verbstest.Run, verbstest.RunFaults) pass on it.
//
// Phys is the physical view it gives the driver: BAR0 accesses call the
// model (serialised, as a bus does), a goroutine steps the model after
// every doorbell (each burst of steps locked to its OS thread, whose CPU
// time Phys.ModelCPU reports so that host-side costs can be measured
// without it), DMA memory
// and mapped user buffers are reached through an IOVA table
// (host/driver/simhost, shared with the sim card) that refuses any
// address not mapped (the model sees a refused DMA as an error
// response and reports a DMA fault, as an IOMMU makes a real card do),
// and interrupts are channels. The model reads host memory in place
// (cardmodel.Viewer), and Phys announces every CQE the model writes to
// the driver (driver.Announcer), so that a waiter wakes without a
// CQ_NOTIFY event.
package modelcard

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/cardmodel"
	"github.com/openiwarp/openiwarp/host/driver/simhost"
)

// Phys is the card model behind driver.Phys.
type Phys struct {
	busMu sync.Mutex // the model: Write32, Read32 and Step
	card  *cardmodel.Card

	*simhost.Host // DMA, Map, Unmap, Revoke, Vectors, WaitInterrupt

	inline int // model steps a register write runs in the writer's goroutine

	cqe      bool   // the model wrote a CQE since the last announcement (busMu)
	announce func() // driver.Announcer's function, or nil

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
	cpu  atomic.Int64 // the model thread's CPU time, in ns
}

// Config shapes a card model behind its physical view.
type Config struct {
	// Width is the data path width in bits (0: 64).
	Width int
	// InlineSteps is how many steps of the model a register write runs in
	// the writer's goroutine before it hands the rest to the model's
	// goroutine (0: DefaultInlineSteps; negative: none, so that every step
	// runs on the model's thread and ModelCPU accounts for all of the
	// card's work).
	InlineSteps int
}

// DefaultInlineSteps is Config.InlineSteps's default: a doorbell's first
// FPDU or completion comes without a goroutine handoff, a long transfer
// runs beside the bridge.
const DefaultInlineSteps = 4

// NewPhys returns a card model of the given data path width with its
// physical view, and starts the goroutine that steps it.
func NewPhys(width int) (*Phys, error) { return NewPhysWith(Config{Width: width}) }

// NewPhysWith is NewPhys with a Config.
func NewPhysWith(cfg Config) (*Phys, error) {
	p := &Phys{Host: simhost.NewHost(), kick: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{}), inline: max(cfg.InlineSteps, 0)}
	if cfg.InlineSteps == 0 {
		p.inline = DefaultInlineSteps
	}
	c, err := cardmodel.New(cardmodel.Config{Width: cfg.Width, Host: viewHost{p.Host}, Observe: p.observe})
	if err != nil {
		return nil, err
	}
	p.card = c
	go p.run()
	return p, nil
}

// run steps the model whenever a register write may have given it work,
// until it is idle. Each such burst runs locked to its OS thread, whose CPU
// time it adds to ModelCPU; between bursts the goroutine is unlocked, so
// waking it costs no handoff of a locked thread.
func (p *Phys) run() {
	defer close(p.done)
	for {
		select {
		case <-p.kick:
		case <-p.stop:
			return
		}
		runtime.LockOSThread()
		t0 := simhost.ThreadCPU()
		for {
			p.busMu.Lock()
			did := p.card.Step()
			cqe := p.tookCQE()
			p.busMu.Unlock()
			if cqe {
				p.announce()
			}
			if !did {
				break
			}
		}
		if t1 := simhost.ThreadCPU(); t0 >= 0 && t1 >= t0 {
			p.cpu.Add(t1 - t0)
		}
		runtime.UnlockOSThread()
	}
}

// ModelCPU is the CPU time the model's goroutine has used stepping the
// model (added up at the end of each burst of steps; the steps a register
// write runs inline, Config.InlineSteps, are not in it): the card's work,
// which a board does in hardware, to subtract from the host's.
func (p *Phys) ModelCPU() time.Duration { return time.Duration(p.cpu.Load()) }

// OnCompletions is driver.Announcer: announce is called after every
// step of the model, inline or on its goroutine, that wrote a CQE.
func (p *Phys) OnCompletions(announce func()) {
	p.busMu.Lock()
	p.announce = announce
	p.busMu.Unlock()
}

// observe sees the model's DMA writes (busMu held): it notes the CQEs.
func (p *Phys) observe(w cardmodel.DMAWrite) {
	if w.Kind == cardmodel.WriteCQE {
		p.cqe = true
	}
}

// tookCQE reports (once) that the model wrote a CQE and the driver wants
// to hear of it. Called with busMu held.
func (p *Phys) tookCQE() bool {
	cqe := p.cqe && p.announce != nil
	p.cqe = false
	return cqe
}

func (p *Phys) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// viewHost is the model's host: the IOVA space, which the model may read
// in place (cardmodel.Viewer) as it runs in this process.
type viewHost struct{ *simhost.Host }

// ViewMem is cardmodel.Viewer: the mapped memory itself.
func (h viewHost) ViewMem(addr uint64, n int) ([]byte, error) { return h.Lookup(addr, n) }

// Regs is BAR0.
func (p *Phys) Regs() driver.Regs { return driver.Split64{Regs32: (*bar)(p)} }

// Describe says what runs where.
func (p *Phys) Describe() string {
	return "the card's Go transaction-level model (host/driver/cardmodel) in process, stepped by its own goroutine"
}

// Close stops the model's goroutine.
func (p *Phys) Close() error {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
	p.Clear() // what the driver did not free goes with the model
	return nil
}

// bar is BAR0: each access is one bus transaction on the model.
type bar Phys

func (b *bar) Read32(off uint32) (uint32, error) {
	b.busMu.Lock()
	v, err := b.card.Read32(off)
	b.busMu.Unlock()
	if err != nil {
		return 0, fmt.Errorf("%w: %w", driver.ErrInvalid, err)
	}
	return v, nil
}

func (b *bar) Write32(off, v uint32) error {
	b.busMu.Lock()
	err := b.card.Write32(off, v)
	busy := true
	for range b.inline {
		if !b.card.Step() {
			busy = false
			break
		}
	}
	cqe := (*Phys)(b).tookCQE()
	b.busMu.Unlock()
	if cqe {
		b.announce()
	}
	if busy {
		(*Phys)(b).wake()
	}
	// A refused command is answered as a board answers it: the write is
	// posted, its verdict is in CMD_STATUS.
	if err != nil && !errors.Is(err, cardmodel.ErrRefused) {
		return fmt.Errorf("%w: %w", driver.ErrInvalid, err)
	}
	return nil
}
