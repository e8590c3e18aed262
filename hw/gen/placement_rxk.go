package gen

import "math/big"

// Uses of placement's check port (s_rxk_use): golden/iwarp/mem.Use's
// numbering, and the remote invalidation check of a Send with Invalidate
// (mem.CanInvalidate).
const (
	RxkUseRemoteWrite  = 0
	RxkUseReadResponse = 1
	RxkUseRemoteRead   = 2
	RxkUseLocalRead    = 3
	RxkUseLocalWrite   = 4
	RxkUseInvalidate   = 5
)

// PlacementRxkLatency is the number of cycles from the cycle a check
// request is taken to the cycle its m_rxk_valid shows.
const PlacementRxkLatency = 2

// rxkPort is placement's STag check port: a second read port on copies of
// the STag table and page list, for the engines' lkey checks, and an
// invalidation input (Send with Invalidate).
type rxkPort struct {
	m              *Module
	iw, pw         int
	inv            *Signal // an engine's invalidation is written this cycle
	invIdx         Expr
	rdEn           *Signal
	idx            *Signal
	pblAddr        *Signal
	entry, tag, pb *Signal
}

// placementRxKeyPort declares the check port's inputs and outputs and its
// invalidation input (taken while no register command, regWr, writes the
// valid bits).
func placementRxKeyPort(m *Module, iw, pw int, initDone *Signal, regWr Expr) *rxkPort {
	c := &rxkPort{m: m, iw: iw, pw: pw}
	valid := m.Input("s_rxk_valid", 1, "an STag check request (an engine's lkey check, a Send with Invalidate's STag)")
	ready := m.Output("s_rxk_ready", 1, "init_done: a request is taken every cycle")
	stag := m.Input("s_rxk_stag", 32, "the STag (index 31:8, key 7:0)")
	m.Input("s_rxk_pd", 32, "the stream's protection domain")
	m.Input("s_rxk_qp", 32, "the stream")
	m.Input("s_rxk_to", 64, "tagged offset")
	m.Input("s_rxk_len", 32, "length in bytes")
	m.Input("s_rxk_use", 3, "0 remote write, 1 Read Response, 2 remote read, 3 local read, 4 local write (golden/iwarp/mem.Use), 5 remote invalidation (mem.CanInvalidate)")
	m.Output("m_rxk_valid", 1, "the answer, 2 cycles after the request was taken (no backpressure)")
	m.Output("m_rxk_fault", 3, "mem.Fault: 0 OK, 1 invalid STag, 2 not associated, 3 access rights, 4 TO wrap, 5 base or bounds")
	m.Output("m_rxk_addr", 64, "host address of the tagged offset (through the page list for a paged entry); meaningful when the fault is 0")
	invV := m.Input("s_inv_valid", 1, "invalidate an entry (a Send with Invalidate the engine has checked)")
	invR := m.Output("s_inv_ready", 1, "no register command writes the table this cycle")
	invIdx := m.Input("s_inv_index", 24, "the STag's index (one past the table: taken, no effect)")
	c.invIdx = m.WireOf("rxk_inv_index", Bits(invIdx, iw-1, 0), "")
	c.inv = m.Wire("rxk_inv", 1, "an engine's invalidation is written")
	m.Assign(ready, initDone)
	c.rdEn = m.WireOf("rxk_take", And(valid, initDone), "a check request is taken")
	c.idx = m.WireOf("rxk_index", Bits(stag, iw+7, 8), "")
	m.Assign(invR, And(Not(regWr), initDone))
	m.Assign(c.inv, And(invV, invR, Not(RedOr(Bits(invIdx, 23, iw)))))
	return c
}

// tables builds the copies of the table, valid bits and page list (written
// exactly as the originals) and the check logic.
func (c *rxkPort) tables(entWr, entAddr, entData, tagWr, tagAddr, tagData, pblWr, pblIdx, pblData Expr) {
	m := c.m
	IW, PW := c.iw, c.pw
	entryW := entData.Width()
	e := m.Mem("rxk_table", entryW, 1<<IW, entWr, entAddr, entData, c.rdEn, Bits(c.idx, IW-1, 0), "copy of stag_table for the check port")
	tg := m.Mem("rxk_tag", 9, 1<<IW, tagWr, tagAddr, tagData, c.rdEn, Bits(c.idx, IW-1, 0), "copy of stag_tag for the check port")

	// Stage 1: the request beside the entry it read.
	v1 := m.Reg("rxk1_v", 1, big.NewInt(0), c.rdEn, nil, "")
	r := func(name string, w int) *Signal {
		return m.Reg("rxk1_"+name, w, nil, m.Port("s_rxk_"+name), c.rdEn, "")
	}
	stag, pd, qp, to, ln, use := r("stag", 32), r("pd", 32), r("qp", 32), r("to", 64), r("len", 32), r("use", 3)
	idxOK := Not(RedOr(Bits(stag, 31, IW+8)))
	ef := stagEntryOf(e, PW)
	acc := m.WireOf("rxk1_access", ef.acc, "")
	ePaged, ePD, eQP, ePBL := ef.paged, ef.pd, ef.qp, ef.pbl
	uIs := func(u uint64) Expr { return Eq(use, C(3, u)) }
	end := m.WireOf("rxk1_end", Add(to, zext(ln, 64)), "TO + length")
	zeroOK := And(Eq(ln, C(32, 0)), Or(uIs(RxkUseRemoteWrite), uIs(RxkUseReadResponse), uIs(RxkUseRemoteRead)))
	invalid := Or(keyBad(idxOK, tg, Bits(stag, 7, 0)), And(ef.mw, Or(uIs(RxkUseLocalRead), uIs(RxkUseLocalWrite)))) // windows are for remote access only
	assoc := Sel(uIs(RxkUseInvalidate), Or(Ne(ePD, pd), Eq(eQP, C(32, 0)), Ne(eQP, qp)), ef.foreign(pd, qp))
	need := Sel(uIs(RxkUseRemoteWrite), Bit(acc, 2), Sel(uIs(RxkUseRemoteRead), Bit(acc, 1),
		Sel(Or(uIs(RxkUseReadResponse), uIs(RxkUseLocalWrite)), Bit(acc, 0), C(1, 1))))
	wrap := Lt(end, to)
	bounds := ef.outside(to, end)
	f := func(v uint64) Expr { return C(3, v) }
	fault := m.WireOf("rxk1_fault", Sel(zeroOK, f(0), Sel(invalid, f(1), Sel(assoc, f(2),
		Sel(uIs(RxkUseInvalidate), f(0), Sel(Not(need), f(3), Sel(wrap, f(4), Sel(bounds, f(5), f(0)))))))), "mem.Check's verdict")
	vaddr := m.WireOf("rxk1_vaddr", ef.translate(to), "ADDR + (TO - BASE): the host address, or the offset into the page list's pages")
	m.Assign(c.pblAddrWire(), pageSlot(ePBL, vaddr, PW))

	// Stage 2: the page list read, the answer.
	v2 := m.Reg("rxk2_v", 1, big.NewInt(0), v1, nil, "")
	f2 := m.Reg("rxk2_fault", 3, nil, fault, nil, "")
	a2 := m.Reg("rxk2_vaddr", 64, nil, vaddr, nil, "")
	p2 := m.Reg("rxk2_paged", 1, nil, ePaged, nil, "")
	pg := m.Mem("rxk_page_list", 64-PageShift, 1<<PW, pblWr, pblIdx, pblData, v1, c.pblAddr, "copy of page_list for the check port")
	m.Assign(m.Port("m_rxk_valid"), v2)
	m.Assign(m.Port("m_rxk_fault"), gate(v2, f2))
	m.Assign(m.Port("m_rxk_addr"), gate(v2, hostAddr(p2, pg, a2)))
	m.WireOf("rxk_unused", RedOr(Cat(Bit(acc, 3), Bits(stag, IW+7, 8))), "bits no logic reads (keeps lint quiet on purpose)")
}

func (c *rxkPort) pblAddrWire() *Signal {
	if c.pblAddr == nil {
		c.pblAddr = c.m.Wire("rxk_pbl_addr", c.pw, "page-list slot of the checked offset")
	}
	return c.pblAddr
}
