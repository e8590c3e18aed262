package stagtab

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/regs"
)

// Config places and sizes the placement block a Programmer drives.
type Config struct {
	// Base is the byte offset of the block's registers in the Regs space
	// (a multiple of 4).
	Base uint32
	// TableDepth and PBLDepth are the engine's STag table entries and
	// page-list slots (hw/gen.PlacementConfig).
	TableDepth, PBLDepth int
	// InitDone reports whether the engine has cleared its table since
	// reset (its init_done output). Init polls it.
	InitDone func() (bool, error)
}

// Programmed is what the card holds at one table index, as the Programmer
// wrote it.
type Programmed struct {
	Entry       mem.Entry
	Translation Translation
	Slot        uint32 // first page-list slot (paged)
}

// Programmer writes STag table entries and page lists to a card. It is
// safe for concurrent use: each entry's register sequence is written under
// one lock, since the staging registers are shared.
type Programmer struct {
	regs driver.Regs
	cfg  Config

	mu      sync.Mutex
	ready   bool
	entries map[uint32]*Programmed
	slots   slotAlloc
	buf     []Write
}

// New returns a Programmer for the block at cfg.Base of r. It writes
// nothing; call Init before the first Write.
func New(r driver.Regs, cfg Config) (*Programmer, error) {
	switch {
	case r == nil:
		return nil, fmt.Errorf("%w: no register space", ErrConfig)
	case cfg.TableDepth < 1 || cfg.TableDepth > MaxTableDepth:
		return nil, fmt.Errorf("%w: table depth %d (1 to %d)", ErrConfig, cfg.TableDepth, MaxTableDepth)
	case cfg.PBLDepth < 1 || cfg.PBLDepth > MaxPBLDepth:
		return nil, fmt.Errorf("%w: page-list depth %d (1 to %d)", ErrConfig, cfg.PBLDepth, MaxPBLDepth)
	case cfg.Base%4 != 0 || uint64(cfg.Base)+1<<regs.AddrBits > 1<<32:
		return nil, fmt.Errorf("%w: base offset %#x (4-byte aligned, the %d-byte block inside 32-bit offsets)", ErrConfig, cfg.Base, 1<<regs.AddrBits)
	case cfg.InitDone == nil:
		return nil, fmt.Errorf("%w: no way to read init_done", ErrConfig)
	}
	return &Programmer{regs: r, cfg: cfg, entries: map[uint32]*Programmed{}, slots: newSlotAlloc(cfg.PBLDepth)}, nil
}

// Config returns the configuration the Programmer was made with.
func (p *Programmer) Config() Config { return p.cfg }

// Init waits until the engine reports init_done (polling InitDone with a
// growing pause, up to 1 ms) or ctx ends. Writes are refused until then.
func (p *Programmer) Init(ctx context.Context) error {
	pause := time.Microsecond
	for {
		done, err := p.cfg.InitDone()
		if err != nil {
			return fmt.Errorf("stagtab: reading init_done: %w", err)
		}
		if done {
			p.mu.Lock()
			p.ready = true
			p.mu.Unlock()
			return nil
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: init_done still low: %w", ErrNotReady, ctx.Err())
		case <-t.C:
		}
		pause = min(2*pause, time.Millisecond)
	}
}

// Reset forgets every entry and page-list slot: call it when the card has
// been reset (its table is then all invalid), then Init again.
func (p *Programmer) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ready = false
	clear(p.entries)
	p.slots = newSlotAlloc(p.cfg.PBLDepth)
}

// emit writes p.buf to the card. Called with mu held.
func (p *Programmer) emit(what string) error {
	for _, w := range p.buf {
		if err := p.regs.Write32(p.cfg.Base+w.Off, w.Val); err != nil {
			return fmt.Errorf("stagtab: %s: register %#x: %w", what, p.cfg.Base+w.Off, err)
		}
	}
	return nil
}

// Write programs entry e with translation tr at index: a paged entry gets
// len(tr.Pages) consecutive page-list slots, written before the entry is
// committed. The entry that was at index (if any) is replaced in one
// cycle, and its slots are freed once the commit is written. e.Kind is not
// stored (the engine needs only what Check tests for remote access).
//
// A failed register write leaves the card's entry as it was, as long as
// the Regs performs no access it reports as failed.
func (p *Programmer) Write(index uint32, e mem.Entry, tr Translation) error {
	if err := Validate(index, e, tr, p.cfg.TableDepth, p.cfg.PBLDepth); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.ready {
		return fmt.Errorf("%w: writing index %d", ErrNotReady, index)
	}
	var slot uint32
	if tr.Paged && len(tr.Pages) > 0 {
		s, ok := p.slots.alloc(len(tr.Pages))
		if !ok {
			return fmt.Errorf("%w: no %d consecutive free slots of %d (%d free in all) for index %d",
				ErrPageListFull, len(tr.Pages), p.cfg.PBLDepth, p.slots.free, index)
		}
		slot = s
	}
	p.buf = AppendWrites(p.buf[:0], index, e, tr, slot)
	if err := p.emit(fmt.Sprintf("writing index %d", index)); err != nil {
		if tr.Paged {
			p.slots.release(slot, len(tr.Pages))
		}
		return err
	}
	if old := p.entries[index]; old != nil && old.Translation.Paged {
		p.slots.release(old.Slot, len(old.Translation.Pages))
	}
	e.Kind = mem.KindMR
	tr.Pages = slices.Clone(tr.Pages)
	p.entries[index] = &Programmed{Entry: e, Translation: tr, Slot: slot}
	return nil
}

// Invalidate clears the valid bit of the entry at index in one write. The
// entry keeps its page-list slots (Write it again to revalidate it, Remove
// it to free them).
func (p *Programmer) Invalidate(index uint32) error {
	if uint64(index) >= uint64(p.cfg.TableDepth) {
		return fmt.Errorf("%w: invalidating index %d, table depth %d", ErrIndex, index, p.cfg.TableDepth)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.invalidate(index); err != nil {
		return err
	}
	if e := p.entries[index]; e != nil {
		e.Entry.Valid = false
	}
	return nil
}

// invalidate writes STAG_INVALIDATE. Called with mu held.
func (p *Programmer) invalidate(index uint32) error {
	if !p.ready {
		return fmt.Errorf("%w: invalidating index %d", ErrNotReady, index)
	}
	p.buf = AppendInvalidate(p.buf[:0], index)
	return p.emit(fmt.Sprintf("invalidating index %d", index))
}

// Remove invalidates the entry at index and frees its page-list slots:
// the index is empty afterwards.
func (p *Programmer) Remove(index uint32) error {
	if uint64(index) >= uint64(p.cfg.TableDepth) {
		return fmt.Errorf("%w: removing index %d, table depth %d", ErrIndex, index, p.cfg.TableDepth)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.invalidate(index); err != nil {
		return err
	}
	if old := p.entries[index]; old != nil {
		if old.Translation.Paged {
			p.slots.release(old.Slot, len(old.Translation.Pages))
		}
		delete(p.entries, index)
	}
	return nil
}

// Lookup returns what the Programmer wrote at index (ok false if nothing,
// or if it was removed).
func (p *Programmer) Lookup(index uint32) (Programmed, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entries[index]
	if e == nil {
		return Programmed{}, false
	}
	c := *e
	c.Translation.Pages = slices.Clone(e.Translation.Pages)
	return c, true
}

// FreeSlots is the number of page-list slots not in use.
func (p *Programmer) FreeSlots() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.slots.free
}

// slotAlloc hands out runs of consecutive page-list slots, next-fit: the
// search starts after the last run handed out, so a freed slot is reused
// only once the allocator has gone round the whole list. Runs never wrap
// past the last slot.
type slotAlloc struct {
	used []bool
	next int
	free int
}

func newSlotAlloc(n int) slotAlloc { return slotAlloc{used: make([]bool, n), free: n} }

func (a *slotAlloc) alloc(n int) (uint32, bool) {
	depth := len(a.used)
	if n > a.free {
		return 0, false
	}
	for _, from := range [2]int{a.next, 0} {
		run := 0
		for i := from; i < depth; i++ {
			if a.used[i] {
				run = 0
				continue
			}
			run++
			if run == n {
				start := i - n + 1
				for k := start; k <= i; k++ {
					a.used[k] = true
				}
				a.free -= n
				a.next = (i + 1) % depth
				return uint32(start), true
			}
		}
	}
	return 0, false
}

func (a *slotAlloc) release(start uint32, n int) {
	for k := int(start); k < int(start)+n; k++ {
		if a.used[k] {
			a.used[k] = false
			a.free++
		}
	}
}
