package gen

import "math/big"

// PlacementMopInvLatency and PlacementMopBindLatency are the numbers of
// cycles from a memory operation's acceptance on s_mop to its m_mop_valid
// pulse, when no register command writes the table in its last cycle
// (each one that does adds a cycle): a Local Invalidate reads one entry,
// a bind two.
const (
	PlacementMopInvLatency  = 2
	PlacementMopBindLatency = 3
)

// mopReqFields are the request fields of placement's mop port (s_mop_*,
// after valid), which card_tx drives as m_mop_*: name, width, meaning.
var mopReqFields = []struct {
	name string
	w    int
	doc  string
}{
	{"bind", 1, "0: Local Invalidate of s_mop_stag; 1: bind the window s_mop_stag (its new STag) to the range of region s_mop_mr"},
	{"stag", 32, "the STag invalidated, or the window's new STag (index 31:8, key 7:0)"},
	{"pd", 32, "the QP's protection domain"},
	{"qp", 32, "the QP (a type 2 window is bound to it)"},
	{"mr", 32, "bind: the region's STag"},
	{"addr", 64, "bind: the window's first tagged offset"},
	{"len", 64, "bind: the window's length"},
	{"access", 4, "bind: the window's rights (remote read, remote write)"},
	{"type2", 1, "bind: a type 2 window"},
}

// mopWires are the mop port's writes into the STag table, declared before
// the table's write muxes are built and driven by placementMopPort.
type mopWires struct {
	entWr, tagWr *Signal // a bind writes a word; a bind or Local Invalidate a valid bit and key
	idx          *Signal // at this index
	ent, tag     *Signal // the window's word, the valid bit and key
}

func newMopWires(m *Module, iw, entryW int) *mopWires {
	return &mopWires{
		entWr: m.Wire("mop_ent_wr", 1, "a bind writes its window's table word"),
		tagWr: m.Wire("mop_tag_wr", 1, "a bind or Local Invalidate writes a valid bit and key"),
		idx:   m.Wire("mop_wr_index", iw, ""),
		ent:   m.Wire("mop_wr_entry", entryW, ""),
		tag:   m.Wire("mop_wr_tag", 9, ""),
	}
}

// mopPort is the memory-operation port while it is built: it borrows the
// check port's read port (rd, rdIdx) while busy, and reads what that port
// returns (entries).
type mopPort struct {
	m        *Module
	t        chkTable
	busy, rd *Signal
	take     *Signal
	rdIdx    *Signal
	st       *Signal
	stIs     func(int) Expr
	bind, qp *Signal
	stag, pd *Signal
	mr, addr *Signal
	end, acc *Signal
	type2    *Signal
	wraps    *Signal // ADDR + LEN wraps 2^64
}

const (
	mopIdle  = 0
	mopFirst = 1 // the target's entry (Local Invalidate) or the region's (bind) is read
	mopWin   = 2 // bind: the window's entry is read
	mopWrite = 3 // the verdict is known: write (when the table is free) and answer
)

// placementMopPort adds card_tx's memory operations to placement (the
// s_mop port): a Local Invalidate of one of the QP's STags, or a bind of a
// memory window to a range of a region, with the card model's rules
// (host/driver/cardmodel: start and bindMW). One operation at a time,
// taken while the check port's pipeline is empty; it reads the check
// port's copies of the table and writes every copy in one cycle, after
// which a check, a segment or a Send with Invalidate sees the new entry.
func placementMopPort(m *Module, t chkTable, pipeBusy Expr) *mopPort {
	valid := m.Input("s_mop_valid", 1, "a memory operation of card_tx (a Local Invalidate or bind WQE)")
	ready := m.Output("s_mop_ready", 1, "taken while no operation is under way and the check port's pipeline is empty")
	in := map[string]*Signal{}
	for _, f := range mopReqFields {
		in[f.name] = m.Input("s_mop_"+f.name, f.w, f.doc)
	}
	bind, stag, pd, qp, mr := in["bind"], in["stag"], in["pd"], in["qp"], in["mr"]
	addr, ln, acc, type2 := in["addr"], in["len"], in["access"], in["type2"]
	m.Output("m_mop_valid", 1, "the operation is done (one pulse; no ready): its table write, if any, is in")
	m.Output("m_mop_ok", 1, "it succeeded (0: Local Invalidate of an STag that is not a valid one of the PD; a bind the rules refuse)")

	p := &mopPort{m: m, t: t}
	p.st = m.RegDecl("mop_state", 2, "0 idle, 1 first entry read, 2 window entry read, 3 write")
	p.stIs = func(s int) Expr { return Eq(p.st, C(2, uint64(s))) }
	take := m.WireOf("mop_take", And(valid, p.stIs(mopIdle), t.initDone, Not(pipeBusy)), "an operation is accepted")
	m.Assign(ready, take)
	p.take = take
	r := func(name string, w int, d Expr) *Signal { return m.Reg("mop_"+name, w, nil, d, take, "") }
	p.bind, p.stag, p.pd, p.qp = r("bind", 1, bind), r("stag", 32, stag), r("pd", 32, pd), r("qp", 32, qp)
	p.mr, p.addr, p.acc, p.type2 = r("mr", 32, mr), r("addr", 64, addr), r("access", 4, acc), r("type2", 1, type2)
	p.end = r("end", 64, Add(addr, ln))
	p.wraps = r("wraps", 1, Lt(Add(addr, ln), addr))
	p.busy = m.WireOf("mop_busy", Or(take, Not(p.stIs(mopIdle))), "the check port's read port is the mop port's")
	// Reads: the region (bind) or the target as the operation is taken,
	// the window in the cycle after.
	first := Sel(bind, Bits(mr, t.iw+7, 8), Bits(stag, t.iw+7, 8))
	p.rd = m.WireOf("mop_rd", Or(take, And(p.stIs(mopFirst), p.bind)), "")
	p.rdIdx = m.WireOf("mop_rd_index", Sel(take, first, Bits(p.stag, t.iw+7, 8)), "")
	return p
}

// entries completes the port once the check port's copies exist: ent and
// tg are their read data, a cycle after each read.
func (p *mopPort) entries(ent, tg *Signal) {
	m, t := p.m, p.t
	ef := stagEntryOf(ent, t.pw)
	idxOK := func(s *Signal) Expr { return Not(RedOr(Bits(s, 31, t.iw+8))) }
	remote := C(4, AccessRemoteRead|AccessRemoteWrite)
	// First entry. Local Invalidate (the model's start): a valid entry of
	// the STag's key in the QP's PD. Bind, the region (bindMW): a valid
	// region of its key in the QP's PD with the bind right, the window's
	// rights remote ones the region has, [ADDR, ADDR+LEN) inside it.
	invOK := And(Not(keyBad(idxOK(p.stag), tg, Bits(p.stag, 7, 0))), Eq(ef.pd, p.pd))
	mrOK := And(Not(keyBad(idxOK(p.mr), tg, Bits(p.mr, 7, 0))), Not(ef.mw), Eq(ef.pd, p.pd),
		Ne(And(ef.acc, C(4, AccessBind)), C(4, 0)), Eq(And(p.acc, Not(remote)), C(4, 0)), Eq(And(p.acc, Not(ef.acc)), C(4, 0)),
		Not(Lt(p.addr, ef.base)), Not(p.wraps), Not(Lt(ef.end, p.end)))
	inFirst := p.stIs(mopFirst)
	ok := m.RegDecl("mop_ok", 1, "the verdict so far")
	// The window's word takes the region's translation as it is: DELTA
	// and the page-list slot map the window's offsets exactly as the
	// region's (the card model's window ADDR and PBL describe the same
	// bytes).
	pDelta := m.Reg("mop_delta", 64, nil, ef.delta, inFirst, "the region's DELTA")
	pPBL := m.Reg("mop_pbl", t.pw, nil, ef.pbl, inFirst, "the region's first page-list slot")
	pPaged := m.Reg("mop_paged", 1, nil, ef.paged, inFirst, "the region is paged")
	// The window's entry (bindMW): not a valid region, and a window of
	// another PD is not taken over; its index is in the table.
	winOK := And(idxOK(p.stag), Not(And(Bit(tg, 8), Not(ef.mw))), Not(And(ef.mw, Ne(ef.pd, p.pd))))
	m.Drive(ok, nil, Sel(inFirst, Sel(p.bind, mrOK, invOK), And(ok, winOK)), Or(inFirst, p.stIs(mopWin)))
	// Write and answer: when no register command writes the table.
	free := m.WireOf("mop_write_free", And(p.stIs(mopWrite), Not(t.regCmd)), "the operation ends this cycle")
	wr := m.WireOf("mop_write", And(free, ok), "its table write")
	next := Sel(p.stIs(mopIdle), Sel(p.take, C(2, mopFirst), C(2, mopIdle)),
		Sel(inFirst, Sel(p.bind, C(2, mopWin), C(2, mopWrite)),
			Sel(p.stIs(mopWin), C(2, mopWrite), Sel(free, C(2, mopIdle), C(2, mopWrite)))))
	m.Drive(p.st, big.NewInt(mopIdle), next, nil)
	w := t.mop
	m.Assign(w.entWr, And(wr, p.bind))
	m.Assign(w.tagWr, wr)
	m.Assign(w.idx, Bits(p.stag, t.iw-1+8, 8))
	m.Assign(w.ent, Cat(C(1, 1), pPBL, pDelta, C(1, 0), p.end, p.addr, Sel(p.type2, p.qp, C(32, 0)), p.pd, pPaged, p.acc))
	m.Assign(w.tag, Cat(p.bind, gate(p.bind, Bits(p.stag, 7, 0))))
	m.WireOf("mop_unused", RedOr(Bits(p.mr, t.iw+7, 8)), "the region's index was read as the operation was taken (keeps lint quiet on purpose)")
	m.Assign(m.Port("m_mop_valid"), free)
	m.Assign(m.Port("m_mop_ok"), And(free, ok))
}
