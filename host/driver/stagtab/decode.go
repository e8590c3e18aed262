package stagtab

import (
	"fmt"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/regs"
)

// CommandKind is what a command register does.
type CommandKind uint8

// Commands of the register map.
const (
	CmdNone       CommandKind = iota // a staging write (or an unknown offset)
	CmdCommit                        // STAG_COMMIT: the staged entry goes to STAG_INDEX
	CmdInvalidate                    // STAG_INVALIDATE: the valid bit at Index clears
	CmdPage                          // PBL_COMMIT: the staged page address goes to slot Slot
)

// Command is one table update decoded from register writes.
type Command struct {
	Kind  CommandKind
	Index uint32    // CmdCommit, CmdInvalidate
	Entry mem.Entry // CmdCommit (Kind is always KindMR: the table does not store it)
	Paged bool      // CmdCommit
	Addr  uint64    // CmdCommit: STAG_ADDR; CmdPage: the page address (bits 11:0 clear)
	PBL   uint32    // CmdCommit: first page-list slot
	Slot  uint32    // CmdPage
}

// Decoder turns the register writes of the placement block into table
// updates, as the engine does: staging registers hold the last value
// written, commands act on what is staged. Its zero value is the state
// after reset.
type Decoder struct {
	staged [1 << regs.AddrBits / 4]uint32
}

func field(v uint32, shift, mask uint32) uint32 { return v >> shift & mask }

func (d *Decoder) reg(off uint32) uint32 { return d.staged[off/4] }

func (d *Decoder) reg64(lo, hi uint32) uint64 { return uint64(d.reg(hi))<<32 | uint64(d.reg(lo)) }

// Write applies one register write at byte offset off within the block.
// Offsets outside the block or not 4-byte aligned decode to CmdNone.
func (d *Decoder) Write(off, v uint32) Command {
	if off%4 != 0 || off >= 1<<regs.AddrBits {
		return Command{}
	}
	switch off {
	case regs.StagCommit:
		ctrl := d.reg(regs.StagCtrl)
		return Command{Kind: CmdCommit,
			Index: field(d.reg(regs.StagIndex), regs.StagIndexIndexShift, regs.StagIndexIndexMask),
			Entry: mem.Entry{
				Valid:  field(ctrl, regs.StagCtrlValidShift, regs.StagCtrlValidMask) != 0,
				Key:    uint8(field(ctrl, regs.StagCtrlKeyShift, regs.StagCtrlKeyMask)),
				Access: mem.Access(field(ctrl, regs.StagCtrlAccessShift, regs.StagCtrlAccessMask)),
				PD:     field(d.reg(regs.StagPd), regs.StagPdPdShift, regs.StagPdPdMask),
				QP:     field(d.reg(regs.StagQp), regs.StagQpQpShift, regs.StagQpQpMask),
				Base:   d.reg64(regs.StagBaseLo, regs.StagBaseHi),
				Length: d.reg64(regs.StagLenLo, regs.StagLenHi),
			},
			Paged: field(ctrl, regs.StagCtrlPagedShift, regs.StagCtrlPagedMask) != 0,
			Addr:  d.reg64(regs.StagAddrLo, regs.StagAddrHi),
			PBL:   field(d.reg(regs.StagPbl), regs.StagPblSlotShift, regs.StagPblSlotMask)}
	case regs.StagInvalidate:
		return Command{Kind: CmdInvalidate, Index: field(v, regs.StagInvalidateIndexShift, regs.StagInvalidateIndexMask)}
	case regs.PblCommit:
		lo := field(d.reg(regs.PblAddrLo), regs.PblAddrLoPageShift, regs.PblAddrLoPageMask) << regs.PblAddrLoPageShift
		return Command{Kind: CmdPage, Slot: field(d.reg(regs.PblIndex), regs.PblIndexSlotShift, regs.PblIndexSlotMask),
			Addr: uint64(d.reg(regs.PblAddrHi))<<32 | uint64(lo)}
	}
	d.staged[off/4] = v
	return Command{}
}

// Image is the card's STag table and page list as a Decoder's commands
// leave them: what the engine translates through. Its zero value is
// unusable; use NewImage.
//
// An Image is also a driver.Regs for the block's registers at byte offset
// Base of a register space (write-only, as the block is): tests and
// software cards point a Programmer at it to see what the engine would
// hold.
type Image struct {
	Decoder
	Base                 uint32
	TableDepth, PBLDepth int
	Entries              map[uint32]Command // by index, the last commit (Entry.Valid cleared by an invalidation)
	Pages                []uint64           // by slot
}

// NewImage is a table after reset: no valid entry, every page slot zero.
func NewImage(tableDepth, pblDepth int) *Image {
	return &Image{TableDepth: tableDepth, PBLDepth: pblDepth, Entries: map[uint32]Command{}, Pages: make([]uint64, pblDepth)}
}

// Write applies one register write; commits and invalidations of indexes
// at or beyond the table depth do nothing, as in the engine.
func (t *Image) Write(off, v uint32) {
	c := t.Decoder.Write(off, v)
	switch c.Kind {
	case CmdCommit:
		if c.Index < uint32(t.TableDepth) {
			t.Entries[c.Index] = c
		}
	case CmdInvalidate:
		if e, ok := t.Entries[c.Index]; ok {
			e.Entry.Valid = false
			t.Entries[c.Index] = e
		}
	case CmdPage:
		t.Pages[c.Slot%uint32(t.PBLDepth)] = c.Addr
	}
}

// Lookup returns the entry at index and its translation, reading the page
// list from slot PBL on (wrapping at the page-list depth) for as many pages
// as the entry touches. ok is false for an index never committed.
func (t *Image) Lookup(index uint32) (e mem.Entry, tr Translation, ok bool) {
	c, ok := t.Entries[index]
	if !ok {
		return mem.Entry{}, Translation{}, false
	}
	tr = Translation{Paged: c.Paged, Addr: c.Addr}
	if c.Paged {
		n := PagesFor(c.Addr, c.Entry.Length)
		for k := uint64(0); k < n && k < uint64(t.PBLDepth); k++ {
			tr.Pages = append(tr.Pages, t.Pages[(uint64(c.PBL)+k)%uint64(t.PBLDepth)])
		}
	}
	return c.Entry, tr, true
}

func (t *Image) offset(off uint32, size uint32) (uint32, error) {
	if off < t.Base || off%size != 0 || uint64(off-t.Base)+uint64(size) > 1<<regs.AddrBits {
		return 0, fmt.Errorf("%w: %d-bit write at %#x, outside the placement block at %#x", driver.ErrInvalid, size*8, off, t.Base)
	}
	return off - t.Base, nil
}

// Write32 applies a register write at off (Base included).
func (t *Image) Write32(off, v uint32) error {
	o, err := t.offset(off, 4)
	if err == nil {
		t.Write(o, v)
	}
	return err
}

// Write64 writes the low word at off, then the high word at off+4.
func (t *Image) Write64(off uint32, v uint64) error {
	o, err := t.offset(off, 8)
	if err == nil {
		t.Write(o, uint32(v))
		t.Write(o+4, uint32(v>>32))
	}
	return err
}

// Read32 fails: the block's registers are write-only.
func (t *Image) Read32(off uint32) (uint32, error) {
	return 0, fmt.Errorf("%w: read at %#x: the placement block's registers are write-only", driver.ErrInvalid, off)
}

// Read64 fails: the block's registers are write-only.
func (t *Image) Read64(off uint32) (uint64, error) {
	return 0, fmt.Errorf("%w: read at %#x: the placement block's registers are write-only", driver.ErrInvalid, off)
}
