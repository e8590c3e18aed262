package gen

import "math/big"

// Faults of placement's check port (m_chk_fault), in the order and with the
// values of golden/iwarp/mem.Fault.
const (
	ChkOK            = 0
	ChkInvalidSTag   = 1 // index past the table, not valid, wrong key
	ChkNotAssociated = 2 // another PD, or bound to another QP
	ChkAccessRights  = 3 // a right the request needs is missing
	ChkTOWrap        = 4 // TO + length wraps 2^64
	ChkBaseBounds    = 5 // outside [BASE, BASE+LEN)
)

// PlacementChkLatency is the number of cycles from a check request's
// acceptance to its verdict on m_chk (when m_chk_ready stays high).
const PlacementChkLatency = 2

// chkTable is what the check port needs of placement's STag table: the
// write side of its three memories, so that the port keeps its own copies
// (a second read port that never takes a cycle from the receive path).
type chkTable struct {
	iw, pw                  int // index and page-list slot bits
	depth, pblDepth         int
	entryW                  int
	entEn, entAddr, entData Expr
	tagEn, tagAddr, tagData Expr
	pblEn, pblAddr, pblData Expr
	initDone                Expr
	mop                     *mopWires // the mop port's table writes (placementMopPort drives them)
	regCmd                  Expr      // a register command writes the table this cycle
}

// placementCheckPort adds the lkey/STag check port to placement: a request
// (STag, PD, QP, rights needed, TO, length, tag) in, and after
// PlacementChkLatency cycles its verdict (a mem.Fault code) with the host
// address of TO and the bytes contiguous in host memory from there. Both
// directions use it: card_tx for gathers (lkey, no right needed) and Read
// Response sources (remote read), card_rx for receive buffers (local
// write). The verdict is mem.Check's for the same entry, but a zero-length
// request is checked like any other (mem.Check skips it for remote uses:
// callers skip those themselves). The port reads copies of the table's
// memories, written with the table, so a commit or invalidation is seen by a
// request accepted in the cycle after the register write.
func placementCheckPort(m *Module, t chkTable) {
	valid := m.Input("s_chk_valid", 1, "a check request (lkey of a gather, source of a Read Response, receive buffer...)")
	ready := m.Output("s_chk_ready", 1, "the port takes a request (high while m_chk is free or taken, after init_done)")
	stag := m.Input("s_chk_stag", 32, "the STag (index 31:8, key 7:0)")
	pd := m.Input("s_chk_pd", 32, "the requester's protection domain")
	qp := m.Input("s_chk_qp", 32, "the requester's QP (stream); an entry bound to another QP is not associated")
	need := m.Input("s_chk_need", 4, "rights the entry must hold (STAG_CTRL.ACCESS bits: 0 local write, 1 remote read, 2 remote write, 3 bind); 0 for a local read")
	to := m.Input("s_chk_to", 64, "tagged offset of the first byte")
	ln := m.Input("s_chk_len", 32, "bytes")
	tag := m.Input("s_chk_tag", 8, "the caller's tag, returned with the verdict")
	oValid := m.Output("m_chk_valid", 1, "a verdict")
	oReady := m.Input("m_chk_ready", 1, "")
	oTag := m.Output("m_chk_tag", 8, "the request's tag")
	oFault := m.Output("m_chk_fault", 3, "0 OK; 1 invalid STag, 2 not associated, 3 access rights, 4 TO wraps, 5 base and bounds (golden/iwarp/mem.Fault)")
	oAddr := m.Output("m_chk_addr", 64, "OK: host address of TO")
	oRun := m.Output("m_chk_run", 32, "OK: bytes from TO that are contiguous in host memory (the length, or to the end of TO's 4 KiB page for a paged region); the caller asks again at TO + run for the rest")

	c2v := m.RegDecl("chk_c2_v", 1, "stage 2 holds a verdict")
	c1v := m.RegDecl("chk_c1_v", 1, "stage 1 holds a request")
	adv := m.WireOf("chk_adv", Or(Not(c2v), oReady), "the check pipeline moves")
	// The mop port borrows the copies' read port while the pipeline is empty.
	mp := placementMopPort(m, t, Or(c1v, c2v))
	take := m.WireOf("chk_take", And(valid, adv, t.initDone, Not(mp.busy)), "a request is accepted")
	m.Assign(ready, And(adv, t.initDone, Not(mp.busy)))
	idx := m.WireOf("chk_index", Bits(stag, 31, 8), "STag index")
	rdEn := m.WireOf("chk_rd", Or(take, mp.rd), "the copies are read")
	rdAddr := m.WireOf("chk_rd_index", Sel(mp.rd, mp.rdIdx, Bits(idx, t.iw-1, 0)), "")
	ent := m.Mem("stag_table_chk", t.entryW, t.depth, t.entEn, t.entAddr, t.entData, rdEn, rdAddr, "copy of stag_table for the check port")
	tg := m.Mem("stag_tag_chk", 9, t.depth, t.tagEn, t.tagAddr, t.tagData, rdEn, rdAddr, "copy of stag_tag for the check port")
	mp.entries(ent, tg)

	// Stage 1: the request with its entry.
	m.Drive(c1v, big.NewInt(0), take, adv)
	r := func(name string, w int, d Expr) *Signal { return m.Reg("chk_c1_"+name, w, nil, d, take, "") }
	kIdxOK := r("index_ok", 1, Not(RedOr(Bits(idx, 23, t.iw))))
	kKey, kPD, kQP, kNeed := r("key", 8, Bits(stag, 7, 0)), r("pd", 32, pd), r("qp", 32, qp), r("need", 4, need)
	kTO, kLen, kTag := r("to", 64, to), r("len", 32, ln), r("tag", 8, tag)
	ef := stagEntryOf(ent, t.pw)
	eAcc, ePaged, ePBL := ef.acc, ef.paged, ef.pbl
	end := m.WireOf("chk_end", Add(kTO, zext(kLen, 64)), "TO + length")
	fInv := Or(keyBad(kIdxOK, tg, kKey), And(ef.mw, Eq(And(kNeed, C(4, AccessRemoteRead|AccessRemoteWrite)), C(4, 0)))) // a window serves no local use
	fAssoc := ef.foreign(kPD, kQP)
	fRights := Ne(And(eAcc, kNeed), kNeed)
	fWrap := Lt(end, kTO)
	fBounds := ef.outside(kTO, end)
	fault := m.WireOf("chk_fault", Sel(fInv, C(3, ChkInvalidSTag), Sel(fAssoc, C(3, ChkNotAssociated), Sel(fRights, C(3, ChkAccessRights),
		Sel(fWrap, C(3, ChkTOWrap), Sel(fBounds, C(3, ChkBaseBounds), C(3, ChkOK)))))), "the verdict")
	vm := m.WireOf("chk_vm", ef.translate(kTO), "translated TO (contiguous: its host address)")
	toPage := m.WireOf("chk_to_page", Sub(C(13, 1<<PageShift), zext(Bits(vm, PageShift-1, 0), 13)), "bytes to the end of TO's page")
	pageRun := Sel(Lt(zext(toPage, 32), kLen), zext(toPage, 32), kLen)
	pbl := m.Mem("page_list_chk", 64-PageShift, t.pblDepth, t.pblEn, t.pblAddr, t.pblData, adv,
		pageSlot(ePBL, vm, t.pw), "copy of page_list for the check port")

	// Stage 2: the verdict.
	m.Drive(c2v, big.NewInt(0), c1v, adv)
	q := func(name string, w int, d Expr) *Signal { return m.Reg("chk_c2_"+name, w, nil, d, adv, "") }
	qFault, qTag, qPaged := q("fault", 3, fault), q("tag", 8, kTag), q("paged", 1, ePaged)
	qVM, qRun := q("vm", 64, vm), q("run", 32, Sel(ePaged, pageRun, kLen))
	m.Assign(oValid, c2v)
	m.Assign(oTag, gate(c2v, qTag))
	m.Assign(oFault, gate(c2v, qFault))
	okV := m.WireOf("chk_ok", Eq(qFault, C(3, ChkOK)), "")
	m.Assign(oAddr, gate(okV, gate(c2v, hostAddr(qPaged, pbl, qVM))))
	m.Assign(oRun, gate(okV, gate(c2v, qRun)))
}
