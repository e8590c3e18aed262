package vfio

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/stagtab"
)

// userMemory is memory mapped for the device: a *MappedMemory on a board.
type userMemory interface {
	Pages4K() (offset uint64, pages []uint64)
	Unmap() error
}

// stagTable is the card's STag table: a mem.Table mirror on the host, and
// the placement engine's table, written through a stagtab.Programmer.
// Every memory region is pinned and mapped into the IOMMU and described to
// the card as a page list of those IOVAs.
type stagTable struct {
	board  Board
	prog   *stagtab.Programmer
	tab    *mem.Table
	mapMem func(buf []byte) (userMemory, error)
	flush  func() error // makes earlier register writes reach the card
	limit  int          // most regions (Board.maxMR)

	mu  sync.Mutex
	mrs map[*mem.MR]*cardMR
}

// cardMR is a registered region: its mapping, and the buffer, kept
// referenced while the card may write it.
type cardMR struct {
	mapping userMemory
	buf     []byte
}

func newStagTable(b Board, r driver.Regs, opened time.Time, mapMem func([]byte) (userMemory, error), flush func() error) (*stagTable, error) {
	prog, err := stagtab.New(r, stagtab.Config{Base: b.PlacementBase, TableDepth: b.TableDepth, PBLDepth: b.PBLDepth,
		InitDone: func() (bool, error) { return time.Since(opened) >= b.InitWait, nil }})
	if err != nil {
		return nil, err
	}
	return &stagTable{board: b, prog: prog, tab: mem.NewTable(), mapMem: mapMem, flush: flush, limit: b.maxMR(), mrs: map[*mem.MR]*cardMR{}}, nil
}

// init waits for the engine (see Board.InitWait).
func (s *stagTable) init() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.board.InitWait+time.Second)
	defer cancel()
	return s.prog.Init(ctx)
}

func (s *stagTable) allocPD() *mem.PD { return s.tab.AllocPD() }

func (s *stagTable) ownPD(pd *mem.PD) error {
	if pd == nil || pd.Table() != s.tab {
		return fmt.Errorf("%w: protection domain is not one of this card's", driver.ErrInvalid)
	}
	return nil
}

// register maps buf, registers it in the mirror under an STag the card's
// table can hold, and writes the entry with the mapping's page list.
func (s *stagTable) register(pd *mem.PD, buf []byte, addr uint64, access mem.Access, qp uint32) (*mem.MR, error) {
	if err := s.ownPD(pd); err != nil {
		return nil, err
	}
	what := fmt.Sprintf("registering %d bytes at tagged offset %#x", len(buf), addr)
	// One registration at a time: the limit holds, and the Programmer
	// serialises the card's writes anyway.
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.mrs); n >= s.limit {
		return nil, fmt.Errorf("%s: %w: the card holds %d regions, its limit", what, mem.ErrFull, n)
	}
	tr := stagtab.Paged(0, nil)
	if need := stagtab.PagesFor(uint64(0), uint64(len(buf))); need > uint64(s.board.PBLDepth) {
		// Even at offset 0 it cannot fit: refuse before pinning anything.
		return nil, fmt.Errorf("%w: %s: %d pages, the card's page list has %d slots: %w", driver.ErrInvalid, what, need, s.board.PBLDepth, stagtab.ErrLength)
	}
	var m userMemory
	if len(buf) > 0 {
		var err error
		if m, err = s.mapMem(buf); err != nil {
			return nil, fmt.Errorf("%s: mapping it for DMA: %w", what, cardErr(err))
		}
		tr.Addr, tr.Pages = m.Pages4K()
	}
	unmap := func(err error) error {
		if m != nil {
			err = errors.Join(err, m.Unmap())
		}
		return err
	}
	mr, err := stagtab.RegisterMirror(pd, s.board.TableDepth, buf, addr, access, qp)
	if err != nil {
		if errors.Is(err, mem.ErrArgument) {
			err = fmt.Errorf("%w: %w", driver.ErrInvalid, err)
		}
		return nil, unmap(fmt.Errorf("%s: %w", what, err))
	}
	e, _ := s.tab.Lookup(mr.STag)
	if err := s.prog.Write(mr.STag.Index(), e, tr); err != nil {
		if errors.Is(err, stagtab.ErrLength) || errors.Is(err, stagtab.ErrPageListFull) {
			err = fmt.Errorf("%w: %w", driver.ErrInvalid, err)
		}
		return nil, unmap(errors.Join(fmt.Errorf("%s: %w", what, err), mr.Deregister()))
	}
	s.mrs[mr] = &cardMR{mapping: m, buf: buf}
	return mr, nil
}

// deregister stops the card using the region (invalidation, flushed), then
// removes it from the mirror and unmaps it: a segment still in flight
// through the old entry meets the IOMMU, not memory.
func (s *stagTable) deregister(mr *mem.MR) error {
	s.mu.Lock()
	c := s.mrs[mr]
	delete(s.mrs, mr)
	s.mu.Unlock()
	if c == nil {
		return fmt.Errorf("%w: memory region is not registered on this card", driver.ErrInvalid)
	}
	err := s.prog.Remove(mr.STag.Index())
	if err == nil {
		err = s.flush()
	}
	if err != nil {
		// The card may still use the entry: keep the memory mapped and referenced.
		s.mu.Lock()
		s.mrs[mr] = c
		s.mu.Unlock()
		return fmt.Errorf("deregistering %v: %w", mr.STag, err)
	}
	err = mr.Deregister()
	if c.mapping != nil {
		err = errors.Join(err, c.mapping.Unmap())
	}
	if err != nil {
		return fmt.Errorf("deregistering %v: %w", mr.STag, cardErr(err))
	}
	return nil
}

// count is the number of registered regions.
func (s *stagTable) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mrs)
}

// close unmaps every region (the card is going away; its table with it).
func (s *stagTable) close() error {
	s.mu.Lock()
	mrs := s.mrs
	s.mrs = map[*mem.MR]*cardMR{}
	s.mu.Unlock()
	var errs []error
	for mr, c := range mrs {
		errs = append(errs, s.prog.Remove(mr.STag.Index()))
		if c.mapping != nil {
			errs = append(errs, c.mapping.Unmap())
		}
	}
	return errors.Join(errs...)
}
