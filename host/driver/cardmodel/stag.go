package cardmodel

import (
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	pr "github.com/openiwarp/openiwarp/host/driver/regs"
)

// pblDepth is the page list of the card's placement engine (its
// generator's default, as hw/rtl/iwcard uses it).
const pblDepth = 4096

// stagEntry is one STag table entry: what mem.Check needs, and the
// translation to host addresses (docs/regmap.md). Entries written through
// STAG_COMMIT are memory regions; BIND_MW writes window entries.
type stagEntry struct {
	mem.Entry
	paged bool
	addr  uint64 // contiguous: host address of Base; paged: offset of Base in its first page
	pbl   uint32 // paged: first page-list slot
}

// stagTable is the placement engine's table, its page list and its
// staging registers.
type stagTable struct {
	e   [cs.STags]stagEntry
	pbl [pblDepth]uint64

	idx, ctrl, pd, qp  uint32
	base, length, addr uint64
	slot               uint32
	pblIdx             uint32
	pblAddr            uint64
	engineCtrl         uint32
}

func (t *stagTable) reset() { *t = stagTable{} }

func (t *stagTable) read(off uint32) (uint32, bool) {
	switch off {
	case pr.StagIndex:
		return t.idx, true
	case pr.StagCtrl:
		return t.ctrl, true
	case pr.StagPd:
		return t.pd, true
	case pr.StagQp:
		return t.qp, true
	case pr.StagBaseLo:
		return uint32(t.base), true
	case pr.StagBaseHi:
		return uint32(t.base >> 32), true
	case pr.StagLenLo:
		return uint32(t.length), true
	case pr.StagLenHi:
		return uint32(t.length >> 32), true
	case pr.StagAddrLo:
		return uint32(t.addr), true
	case pr.StagAddrHi:
		return uint32(t.addr >> 32), true
	case pr.StagPbl:
		return t.slot, true
	case pr.PblIndex:
		return t.pblIdx, true
	case pr.PblAddrLo:
		return uint32(t.pblAddr), true
	case pr.PblAddrHi:
		return uint32(t.pblAddr >> 32), true
	case pr.Ctrl:
		return t.engineCtrl, true
	case pr.StagCommit, pr.StagInvalidate, pr.PblCommit, pr.ConnClear:
		return 0, true
	}
	return 0, false
}

func (t *stagTable) write(off, v uint32) bool {
	switch off {
	case pr.StagIndex:
		t.idx = v & pr.StagIndexIndexMask
	case pr.StagCtrl:
		t.ctrl = v
	case pr.StagPd:
		t.pd = v
	case pr.StagQp:
		t.qp = v
	case pr.StagBaseLo:
		lo32(&t.base, v)
	case pr.StagBaseHi:
		hi32(&t.base, v)
	case pr.StagLenLo:
		lo32(&t.length, v)
	case pr.StagLenHi:
		hi32(&t.length, v)
	case pr.StagAddrLo:
		lo32(&t.addr, v)
	case pr.StagAddrHi:
		hi32(&t.addr, v)
	case pr.StagPbl:
		t.slot = v & pr.StagPblSlotMask
	case pr.StagCommit:
		if t.idx < cs.STags {
			t.e[t.idx] = stagEntry{
				Entry: mem.Entry{
					Valid:  t.ctrl>>pr.StagCtrlValidShift&1 != 0,
					Key:    uint8(t.ctrl),
					Kind:   mem.KindMR,
					PD:     t.pd,
					QP:     t.qp,
					Base:   t.base,
					Length: t.length,
					Access: mem.Access(t.ctrl >> pr.StagCtrlAccessShift & pr.StagCtrlAccessMask),
				},
				paged: t.ctrl>>pr.StagCtrlPagedShift&1 != 0,
				addr:  t.addr,
				pbl:   t.slot,
			}
		}
	case pr.StagInvalidate:
		if i := v & pr.StagInvalidateIndexMask; i < cs.STags {
			t.e[i].Valid = false
		}
	case pr.PblIndex:
		t.pblIdx = v & pr.PblIndexSlotMask
	case pr.PblAddrLo:
		lo32(&t.pblAddr, v)
	case pr.PblAddrHi:
		hi32(&t.pblAddr, v)
	case pr.PblCommit:
		t.pbl[t.pblIdx%pblDepth] = t.pblAddr &^ (pageSize - 1)
	case pr.ConnClear:
		// The card puts a QP whose segment failed in error and stops its
		// receive path, so there is nothing to forget.
	case pr.Ctrl:
		t.engineCtrl = v & 1
	default:
		return false
	}
	return true
}

// lookup returns the entry stag names, or nil past the table.
func (t *stagTable) lookup(stag mem.STag) *stagEntry {
	if stag.Index() >= cs.STags {
		return nil
	}
	return &t.e[stag.Index()]
}

// check is mem.Check on the table.
func (t *stagTable) check(req mem.Request) mem.Fault {
	e := t.lookup(req.STag)
	if e == nil {
		return mem.Check(nil, req)
	}
	return mem.Check(&e.Entry, req)
}

// ranges calls fn for the host address ranges of [to, to+n) of e, in
// order: one range for a contiguous entry, one per page for a paged one.
// The caller has checked the access.
func (t *stagTable) ranges(e *stagEntry, to, n uint64, fn func(addr uint64, off, k uint64) error) error {
	v := e.addr + (to - e.Base)
	if !e.paged {
		return fn(v, 0, n)
	}
	for off := uint64(0); off < n; {
		page := t.pbl[(uint64(e.pbl)+v>>12)%pblDepth]
		k := min(n-off, pageSize-v%pageSize)
		if err := fn(page+v%pageSize, off, k); err != nil {
			return err
		}
		off += k
		v += k
	}
	return nil
}

// check runs mem.Check on every piece of the next n bytes of sgl (req
// makes each piece's request) without moving the cursor: a segment is
// checked whole before any byte of it is read or written. It returns the
// first fault, or OK (also when sgl ends first: the caller's next finds
// that).
func (c sgCursor) check(t *stagTable, sgl []sge, n uint64, req func(s sge, off, k uint32) mem.Request) mem.Fault {
	f := mem.OK
	c.next(sgl, n, func(s sge, off, k uint32) bool {
		f = t.check(req(s, off, k))
		return f == mem.OK
	})
	return f
}
