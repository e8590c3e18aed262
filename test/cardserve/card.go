package cardserve

import (
	"fmt"

	"github.com/openiwarp/openiwarp/host/driver/cardmodel"
	"github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// Host is the card's view of the machine it sits in: DMA to and from
// guest-physical addresses and interrupt delivery. It is what the Server
// hands a card when it creates one. An error from ReadMem or WriteMem is an
// error response on the bus: the card reports it as a DMA fault.
type Host interface {
	ReadMem(addr uint64, p []byte) error
	WriteMem(addr uint64, p []byte) error
	Interrupt(vector int)
	// Peek reads guest RAM as ReadMem does, but for a model beside the
	// card, not as the card: it is neither counted nor reported.
	Peek(addr uint64, p []byte) error
	// Reachable reports why a DMA of n bytes at addr would be refused
	// (a *DMAError), or nil.
	Reachable(addr uint64, n int) error
	// Report tells the Server's Config.Report a problem the guest cannot
	// see (a card checked by a model: a disagreement).
	Report(err error)
}

// Card is what the Server serves: the card's register bus and a way to let
// it work. The Server serialises every call (one bus).
//
// Read32 and Write32 are one complete BAR0 access each: they return once
// the card has answered (for an RTL card: the AXI4-Lite port clocked until
// its response), so the side effects of a read happen exactly once, before
// the guest's vCPU goes on. An error is an error response (SLVERR): a read
// then reads as all ones on PCI, a write is dropped.
//
// Step advances the card's own work (DMA, transmit, completions) by one
// unit and reports whether there was any; the Server calls it until it
// reports false after every access, from its own goroutine.
type Card interface {
	Read32(off uint32) (uint32, error)
	Write32(off, v uint32) error
	Step() bool
}

// NewCard returns a card fresh from power-on reset, wired to h. The Server
// calls it at the start and on every PCI reset of the device; a card with
// a Close method is closed when it is replaced and when the Server closes.
type NewCard func(h Host) (Card, error)

// Model is the card's transaction-level golden model (host/driver/cardmodel)
// of the given data path width in bits (0: 64), as a NewCard. The model's
// behaviour does not depend on the width; CAPS_DATAPATH reports it.
func Model(width int) NewCard {
	return func(h Host) (Card, error) {
		c, err := cardmodel.New(cardmodel.Config{Width: width, Host: h})
		if err != nil {
			return nil, fmt.Errorf("cardserve: card model: %w", err)
		}
		return c, nil
	}
}

// BARSize is the size of the card's BAR0: every register address the card
// decodes (cardspec.AddrBits).
const BARSize = 1 << cardspec.AddrBits

// The card's golden model is a Card as it is.
var _ Card = (*cardmodel.Card)(nil)
