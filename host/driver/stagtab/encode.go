package stagtab

import (
	"errors"
	"fmt"
	"math/bits"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/host/driver/regs"
)

// PageShift is the page size of page-list translation: a page address keeps
// bits 63:12 (PBL_ADDR_LO ignores bits 11:0).
const PageShift = regs.PblAddrLoPageShift

// PageSize is the size of a page-list page, 4 KiB.
const PageSize = 1 << PageShift

// Limits of the register map's fields.
const (
	// MaxTableDepth is the most STag table entries an index can name.
	MaxTableDepth = regs.StagIndexIndexMask + 1
	// MaxPBLDepth is the most page-list slots a slot number can name.
	MaxPBLDepth = regs.StagPblSlotMask + 1
)

// Sentinel errors (match with errors.Is); the returned errors wrap them with
// the index, value and limit that was wrong.
var (
	// ErrIndex: a table index at or beyond the table depth.
	ErrIndex = errors.New("stagtab: index beyond the STag table")
	// ErrPageListFull: no run of free page-list slots is long enough.
	ErrPageListFull = errors.New("stagtab: page list full")
	// ErrMisaligned: a page address that is not 4 KiB aligned.
	ErrMisaligned = errors.New("stagtab: page address not 4 KiB aligned")
	// ErrLength: a range that wraps 64 bits, or a paged region longer than
	// the whole page list can describe.
	ErrLength = errors.New("stagtab: length overflow")
	// ErrField: a value that does not fit its register field, or a page
	// list whose length does not match the region.
	ErrField = errors.New("stagtab: value does not fit the register map")
	// ErrNotReady: the engine has not cleared its table since reset (Init
	// has not seen init_done), so it would ignore the write.
	ErrNotReady = errors.New("stagtab: placement engine not initialised")
	// ErrConfig: a Config the register map cannot address.
	ErrConfig = errors.New("stagtab: bad configuration")
)

// Translation says where a region's bytes are in the card's address space
// (IOVAs on a board).
type Translation struct {
	// Paged selects page-list translation.
	Paged bool
	// Addr is, contiguous, the address of the entry's Base; paged, the
	// offset of Base in Pages[0] (below PageSize).
	Addr uint64
	// Pages are the page addresses, 4 KiB aligned, one per page the
	// region touches from Addr on (paged only).
	Pages []uint64
}

// Contiguous is the translation of a region that is one address range
// starting at addr.
func Contiguous(addr uint64) Translation { return Translation{Addr: addr} }

// Paged is the translation of a region through a page list: pages[k] is the
// address of its k-th 4 KiB page and offset is where its first byte lies in
// pages[0].
func Paged(offset uint64, pages []uint64) Translation {
	return Translation{Paged: true, Addr: offset, Pages: pages}
}

// PagesFor is the number of 4 KiB pages a region of length bytes starting
// at offset in its first page touches.
func PagesFor(offset, length uint64) uint64 {
	end, carry := bits.Add64(offset, length, 0)
	n := end >> PageShift
	if end&(PageSize-1) != 0 {
		n++
	}
	if carry != 0 {
		n += 1 << (64 - PageShift)
	}
	return n
}

// Validate checks that e and tr can be written at index of a table of
// tableDepth entries with a page list of pblDepth slots.
func Validate(index uint32, e mem.Entry, tr Translation, tableDepth, pblDepth int) error {
	if uint64(index) >= uint64(tableDepth) {
		return fmt.Errorf("%w: index %d, table depth %d", ErrIndex, index, tableDepth)
	}
	if e.Access&^mem.Access(regs.StagCtrlAccessMask) != 0 {
		return fmt.Errorf("%w: access rights %#x wider than STAG_CTRL.ACCESS (%#x)", ErrField, uint8(e.Access), regs.StagCtrlAccessMask)
	}
	if _, carry := bits.Add64(e.Base, e.Length, 0); carry != 0 {
		return fmt.Errorf("%w: tagged range [%#x, +%#x) wraps 2^64", ErrLength, e.Base, e.Length)
	}
	if !tr.Paged {
		if len(tr.Pages) != 0 {
			return fmt.Errorf("%w: contiguous translation with %d pages", ErrField, len(tr.Pages))
		}
		if _, carry := bits.Add64(tr.Addr, e.Length, 0); carry != 0 {
			return fmt.Errorf("%w: host range [%#x, +%#x) wraps 2^64", ErrLength, tr.Addr, e.Length)
		}
		return nil
	}
	if tr.Addr >= PageSize {
		return fmt.Errorf("%w: paged offset %#x is not below the page size %#x", ErrField, tr.Addr, PageSize)
	}
	need := PagesFor(tr.Addr, e.Length)
	if need > uint64(pblDepth) {
		return fmt.Errorf("%w: %d bytes from offset %#x need %d pages, the page list has %d slots", ErrLength, e.Length, tr.Addr, need, pblDepth)
	}
	if uint64(len(tr.Pages)) != need {
		return fmt.Errorf("%w: %d bytes from offset %#x need %d pages, got %d", ErrField, e.Length, tr.Addr, need, len(tr.Pages))
	}
	for k, pg := range tr.Pages {
		if pg&(PageSize-1) != 0 {
			return fmt.Errorf("%w: page %d at %#x", ErrMisaligned, k, pg)
		}
	}
	return nil
}

// Write is one 32-bit register write, at a byte offset within the block.
type Write struct {
	Off, Val uint32
}

func (w Write) String() string { return fmt.Sprintf("[%#02x]=%#08x", w.Off, w.Val) }

// AppendWrites appends the register writes that program entry e with
// translation tr at index, its page list (if paged) going to the slots
// from slot on. The pages come first, so the entry is committed only once
// its page list is in place; every staging register is written, so nothing
// staged earlier leaks into the entry. It does not validate (see Validate).
func AppendWrites(dst []Write, index uint32, e mem.Entry, tr Translation, slot uint32) []Write {
	for k, pg := range tr.Pages {
		dst = append(dst,
			Write{regs.PblIndex, (slot + uint32(k)) & regs.PblIndexSlotMask << regs.PblIndexSlotShift},
			Write{regs.PblAddrLo, uint32(pg>>regs.PblAddrLoPageShift) & regs.PblAddrLoPageMask << regs.PblAddrLoPageShift},
			Write{regs.PblAddrHi, uint32(pg >> 32)},
			Write{regs.PblCommit, 0})
	}
	ctrl := uint32(e.Key)&regs.StagCtrlKeyMask<<regs.StagCtrlKeyShift |
		uint32(e.Access)&regs.StagCtrlAccessMask<<regs.StagCtrlAccessShift
	if tr.Paged {
		ctrl |= 1 << regs.StagCtrlPagedShift
	} else {
		slot = 0
	}
	if e.Valid {
		ctrl |= 1 << regs.StagCtrlValidShift
	}
	return append(dst,
		Write{regs.StagIndex, index & regs.StagIndexIndexMask << regs.StagIndexIndexShift},
		Write{regs.StagCtrl, ctrl},
		Write{regs.StagPd, e.PD & regs.StagPdPdMask << regs.StagPdPdShift},
		Write{regs.StagQp, e.QP & regs.StagQpQpMask << regs.StagQpQpShift},
		Write{regs.StagBaseLo, uint32(e.Base)},
		Write{regs.StagBaseHi, uint32(e.Base >> 32)},
		Write{regs.StagLenLo, uint32(e.Length)},
		Write{regs.StagLenHi, uint32(e.Length >> 32)},
		Write{regs.StagAddrLo, uint32(tr.Addr)},
		Write{regs.StagAddrHi, uint32(tr.Addr >> 32)},
		Write{regs.StagPbl, slot & regs.StagPblSlotMask << regs.StagPblSlotShift},
		Write{regs.StagCommit, 0})
}

// AppendInvalidate appends the write that clears the valid bit at index.
func AppendInvalidate(dst []Write, index uint32) []Write {
	return append(dst, Write{regs.StagInvalidate, index & regs.StagInvalidateIndexMask << regs.StagInvalidateIndexShift})
}

// Translate is the host address that tagged offset to of entry e with
// translation tr maps to, as the engine computes it. ok is false if to is
// outside [Base, Base+Length).
func Translate(e mem.Entry, tr Translation, to uint64) (addr uint64, ok bool) {
	if to < e.Base || to-e.Base >= e.Length {
		return 0, false
	}
	v := tr.Addr + (to - e.Base)
	if !tr.Paged {
		return v, true
	}
	k := v >> PageShift
	if k >= uint64(len(tr.Pages)) {
		return 0, false
	}
	return tr.Pages[k] | v&(PageSize-1), true
}
