package vfio

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/host/driver"
)

// The "vfio" backend of host/driver: driver.Open("vfio:0000:03:00.0") opens
// the board at that address (import this package for its side effect).
func init() { driver.Register("vfio", openCard) }

// Card is the board backend: the generic VFIO layer under the Card
// interface. Its physical view is complete: Regs is BAR0 through the
// mmapped accessors, DMA hands out IOMMU-mapped buffers, Info names the
// device.
//
// Its operational view is what the register map defines so far. On an
// openiwarp board (recognised by its PCI IDs, see Board) the STag table
// works: AllocPD, RegisterMR and DeregisterMR keep a mem.Table mirror and
// write the placement engine's table through host/driver/stagtab, each
// region pinned, mapped into the IOMMU page by page and described to the
// card as a page list of those IOVAs. CreateCQ and Attach need the queue
// and doorbell registers, which the map does not define yet: they fail
// with ErrNotSupported saying so, rather than pretend. On any other device
// every operational method fails with ErrNotSupported and no register is
// written.
type Card struct {
	name   string
	dev    *Device
	bar    *BAR
	events chan driver.Event
	stags  *stagTable // nil: not an openiwarp board
	dma    *dmaSet

	mu     sync.Mutex
	closed bool
}

func openCard(name, arg string) (driver.Card, error) {
	if arg == "" {
		return nil, fmt.Errorf("%w: the vfio card needs a PCI address, e.g. vfio:0000:03:00.0", driver.ErrInvalid)
	}
	dev, err := Open(arg)
	if err != nil {
		return nil, err
	}
	c := &Card{name: name, dev: dev, events: make(chan driver.Event, 64), dma: newDMASet(dev, "vfio card")}
	if err := dev.EnableBusMaster(); err != nil {
		dev.Close()
		return nil, err
	}
	if c.bar, err = dev.MapBAR(0); err != nil {
		dev.Close()
		return nil, err
	}
	if b := DefaultBoard; dev.pci.Vendor == b.Vendor && dev.pci.DeviceID == b.Device {
		if err := c.openSTagTable(b); err != nil {
			dev.Close()
			return nil, err
		}
	}
	return c, nil
}

// openSTagTable sets up the STag table of board b on BAR0.
func (c *Card) openSTagTable(b Board) error {
	if uint64(b.PlacementBase)+256 > c.bar.Size() {
		return fmt.Errorf("%w: vfio card %s: BAR0 of %d bytes has no placement block at %#x", ErrNotSupported, c.dev, c.bar.Size(), b.PlacementBase)
	}
	// A read from the device completes only after the writes posted
	// before it: it makes an invalidation reach the card.
	flush := func() error {
		_, err := c.bar.Read32(uint64(b.PlacementBase))
		return cardErr(err)
	}
	mapMem := func(buf []byte) (userMemory, error) { return c.dev.MapMemory(buf) }
	s, err := newStagTable(b, barRegs{c.bar}, time.Now(), mapMem, flush)
	if err == nil {
		err = s.init()
	}
	if err != nil {
		return fmt.Errorf("vfio card %s: STag table: %w", c.dev, err)
	}
	c.stags = s
	return nil
}

// Device is the VFIO device under the card.
func (c *Card) Device() *Device { return c.dev }

// Info describes the board.
func (c *Card) Info() driver.Info {
	in := driver.Info{
		Name: c.name,
		Kind: "vfio",
		Detail: fmt.Sprintf("board %s [%04x:%04x] through VFIO, IOMMU group %d, BAR0 %d KiB",
			c.dev, c.dev.pci.Vendor, c.dev.pci.DeviceID, c.dev.IOMMUGroup(), c.bar.Size()>>10),
	}
	if c.stags != nil {
		in.MaxMR = c.stags.board.maxMR()
	}
	return in
}

// Regs is BAR0.
func (c *Card) Regs() driver.Regs { return barRegs{c.bar} }

// DMA allocates IOMMU-mapped buffers.
func (c *Card) DMA() driver.DMA { return c.dma }

// Events delivers asynchronous events; the board raises none until its
// register map defines the interrupt causes.
func (c *Card) Events() <-chan driver.Event { return c.events }

// errNoRegisterMap explains the operational methods the register map does
// not define yet.
func (c *Card) errNoRegisterMap(what string) error {
	if err := c.live(); err != nil {
		return err
	}
	return fmt.Errorf("%w: vfio card %s: %s needs the queue and doorbell registers, which the board's register map "+
		"(hw/gen, generated as docs/regmap.md) does not define yet", ErrNotSupported, c.dev, what)
}

// stagTable is the STag table, if the device is an openiwarp board.
func (c *Card) stagTable() (*stagTable, error) {
	if err := c.live(); err != nil {
		return nil, err
	}
	if c.stags == nil {
		b := DefaultBoard
		return nil, fmt.Errorf("%w: vfio card %s: device [%04x:%04x] is not an openiwarp board [%04x:%04x] "+
			"(provisional IDs, see vfio.Board), so its registers are not an STag table", ErrNotSupported, c.dev,
			c.dev.pci.Vendor, c.dev.pci.DeviceID, b.Vendor, b.Device)
	}
	return c.stags, nil
}

// AllocPD creates a protection domain in the host mirror (the card's table
// stores each entry's PD number; there is nothing to write yet).
func (c *Card) AllocPD() (*mem.PD, error) {
	s, err := c.stagTable()
	if err != nil {
		return nil, err
	}
	return s.allocPD(), nil
}

// RegisterMR pins buf, maps its pages into the IOMMU and writes its STag
// table entry (a page list of those IOVAs, bounded to buf's bytes). The
// card may write buf until DeregisterMR returns.
func (c *Card) RegisterMR(pd *mem.PD, buf []byte, addr uint64, access mem.Access, qp uint32) (*mem.MR, error) {
	s, err := c.stagTable()
	if err != nil {
		return nil, err
	}
	return s.register(pd, buf, addr, access, qp)
}

// DeregisterMR invalidates the region's entry, makes sure the card has
// seen it, and unmaps the buffer from the IOMMU.
func (c *Card) DeregisterMR(mr *mem.MR) error {
	s, err := c.stagTable()
	if err != nil {
		return err
	}
	if mr == nil {
		return fmt.Errorf("%w: nil memory region", driver.ErrInvalid)
	}
	return s.deregister(mr)
}

// CreateCQ and Attach need registers the map does not define yet.
func (c *Card) CreateCQ(int) (driver.CQ, error) {
	return nil, c.errNoRegisterMap("a completion queue")
}
func (c *Card) Attach(conn net.Conn, _ mpa.Params, _ driver.QPConfig) (driver.QP, error) {
	return nil, c.errNoRegisterMap("a queue pair")
}

func (c *Card) live() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("%w: vfio card %s", driver.ErrClosed, c.dev)
	}
	return nil
}

// Close frees the card's DMA buffers and closes the device.
func (c *Card) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	var errs []error
	if c.stags != nil {
		errs = append(errs, c.stags.close())
	}
	errs = append(errs, c.dma.close())
	errs = append(errs, c.dev.Close())
	close(c.events)
	return errors.Join(errs...)
}

// cardErr maps this package's errors onto the driver's sentinels, keeping
// both matchable.
func cardErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrClosed):
		return fmt.Errorf("%w: %w", driver.ErrClosed, err)
	case errors.Is(err, ErrOutOfRange):
		return fmt.Errorf("%w: %w", driver.ErrInvalid, err)
	}
	return err
}
