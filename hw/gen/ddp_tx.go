package gen

import (
	"fmt"
	"math/big"
)

// DDPTxWidths lists the data widths ddp_tx ships at.
var DDPTxWidths = []int{64, 128, 256, 512}

// DDP header lengths (RFC 5041 §4.2, §4.3), RDMAP's control octet included.
const (
	DDPTaggedHdr   = 14
	DDPUntaggedHdr = 18
)

// ddpTxPayloadDepth is how many payload beats ddp_tx holds: a beat's
// octets may be split over two output beats, and the third entry lets the
// input keep up while the first two are read.
const ddpTxPayloadDepth = 3

// ddpTxDims are the sizes ddp_tx derives from its width.
type ddpTxDims struct {
	W, L, LB int // data bits, lanes, log2(lanes)
}

// ddpHdrBits is the header register's width: the untagged header, the
// longer one.
const ddpHdrBits = 8 * DDPUntaggedHdr

// ddpTxDesc is a message descriptor as the descriptor queue holds it: the
// port fields, with what the planner would otherwise add as it loads them
// (the header length, MULPDU minus it, the upper parts of TO and of the
// length plus and minus one) formed as it is pushed.
type ddpTxDesc struct {
	tagged, rdmap, dv, stag  Expr
	toLo, toHi, toHiP1       Expr // TO bits 15:0, 63:16, and 63:16 plus one
	qn, msn                  Expr
	leftLo, leftHi, leftHiM1 Expr // length bits 15:0, 31:16, and 31:16 minus one
	maxp, user, hlen         Expr
}

func (ddpTxDesc) names() []string {
	return []string{"tagged", "rdmap", "dv", "stag", "to_lo", "to_hi", "to_hi_p1", "qn", "msn",
		"left_lo", "left_hi", "left_hi_m1", "maxp", "user", "hlen"}
}

func (ddpTxDesc) widths() []int { return []int{1, 8, 2, 32, 16, 48, 48, 32, 32, 16, 16, 16, 16, 16, 5} }

func (x ddpTxDesc) exprs() []Expr {
	return []Expr{x.tagged, x.rdmap, x.dv, x.stag, x.toLo, x.toHi, x.toHiP1, x.qn, x.msn,
		x.leftLo, x.leftHi, x.leftHiM1, x.maxp, x.user, x.hlen}
}

func ddpTxDescOf(f []*Signal) ddpTxDesc {
	return ddpTxDesc{tagged: f[0], rdmap: f[1], dv: f[2], stag: f[3], toLo: f[4], toHi: f[5], toHiP1: f[6], qn: f[7], msn: f[8],
		leftLo: f[9], leftHi: f[10], leftHiM1: f[11], maxp: f[12], user: f[13], hlen: f[14]}
}

// ddpTxSeg is a segment as the planner hands it to the beat former: its
// header (wire order from lane 0), length, L bit and user, and the values
// of its first beat (header and payload octets in it, whether it ends the
// segment), so that the former loads a segment without arithmetic.
type ddpTxSeg struct {
	hdr, slen, last, user Expr
	hl0, k0, end0, hrem0  Expr // first beat: header octets, payload octets, the segment's last; header length
}

func (ddpTxSeg) names() []string {
	return []string{"hdr", "len", "last", "user", "hl0", "k0", "end0", "hrem0"}
}

func (d ddpTxDims) segWidths() []int { return []int{ddpHdrBits, 16, 1, 16, d.LB + 1, d.LB + 1, 1, 5} }

func (x ddpTxSeg) exprs() []Expr {
	return []Expr{x.hdr, x.slen, x.last, x.user, x.hl0, x.k0, x.end0, x.hrem0}
}

func ddpTxSegOf(f []*Signal) ddpTxSeg {
	return ddpTxSeg{hdr: f[0], slen: f[1], last: f[2], user: f[3], hl0: f[4], k0: f[5], end0: f[6], hrem0: f[7]}
}

// DDPTx builds ddp_tx_w<width>: the DDP/RDMAP segmentation of the
// transmit path (RFC 5041 §5.2, §4.2-4.3; RFC 5040 §4.1): a message
// descriptor and its payload in, one ULPDU (DDP segment) per packet out,
// at one output beat per cycle. Three stages, each its own function: the
// descriptor queue (ddpTxDescIn), the segment planner (ddpTxPlan: one
// segment per cycle into a two-entry queue) and the beat former
// (ddpTxForm: one beat per cycle from the segment and the payload beats).
func DDPTx(width int) (*Module, error) {
	if width < 64 || width > 512 || width&(width-1) != 0 {
		return nil, fmt.Errorf("%w: ddp_tx data width %d (need 64, 128, 256 or 512)", ErrInvalid, width)
	}
	d := ddpTxDims{W: width, L: width / 8, LB: log2(width / 8)}
	L := d.L
	m := NewModule(fmt.Sprintf("ddp_tx_w%d", width),
		"RFC 5041 §5.2 (segmentation at the MULPDU, a zero-length message is one segment), §4.2-4.3 (tagged and untagged headers: T, L, DV, STag/TO, QN/MSN/MO); RFC 5040 §4.1 (the RDMAP control octet in DDP's reserved ULP field, the Invalidate STag in the untagged header's second ULP field)",
		fmt.Sprintf("DDP/RDMAP segmentation, %d-bit AXI-Stream (%d byte lanes). Each message descriptor (s_desc_*) and its payload (s_axis_*) become DDP segments: a header of %d octets (tagged: control, RDMAP control, STag, TO) or %d (untagged: control, RDMAP control, Invalidate STag or zero, QN, MSN, MO), then at most MULPDU minus the header of payload; the L bit is set on the message's last segment, TO (tagged) or MO (untagged, from 0) advance by the payload sent.", width, L, DDPTaggedHdr, DDPUntaggedHdr),
		"Descriptor (taken when s_desc_valid and s_desc_ready): tagged, rdmap (the RDMAP control octet: RV and opcode), dv (DDP version: 1 for RFC 5041, 0 for MPA revision 0 peers), stag (tagged: the STag; untagged: the second ULP field, the Invalidate STag of a Send with Invalidate or 0), to (tagged: TO of the first octet), qn and msn (untagged), len (payload octets, 0 allowed), mulpdu (128..64768), user (passed to every segment). Payload: exactly len octets per message (none for len 0) from lane 0, every beat full but the message's last, tlast on the last.",
		fmt.Sprintf("Output: one packet per segment from lane 0, tkeep contiguous, lanes past it zero; m_axis_tuser_len is the segment's length (header and payload, MPA's ULPDU_Length), m_axis_tuser_last the L bit, m_axis_tuser_user the descriptor's user, on every beat. Timing: a descriptor queue of two (s_desc_ready depends on state only); the planner takes the head descriptor when idle or in the cycle it plans the current message's last segment, and plans one segment per cycle into a queue of two while it has room; the beat former takes the head segment when idle or in the cycle it forms the current segment's last beat, so a descriptor taken in cycle t when all is idle has its first beat formed in t+4, and back-to-back messages and segments leave no gap. Up to %d payload beats are held (s_axis_tready depends on state only); a beat carrying payload is formed once two payload beats are held or the one held is the message's last. Formed beats reach m_axis one cycle later; the beat former and the output advance only when the output register is empty or m_axis_tready is 1.", ddpTxPayloadDepth))
	m.Clock()
	m.ResetPort()
	p := ddpTxPortsOf(m, d)
	dq := ddpTxDescIn(m, p)
	sq, sqPop := ddpTxPlan(m, d, dq)
	ddpTxForm(m, d, p, sq, sqPop)
	return m, m.Validate()
}

// ddpTxPorts are ddp_tx's ports.
type ddpTxPorts struct {
	dValid, dReady, dTagged, dRdmap, dDV, dSTag, dTO, dQN, dMSN, dLen, dMULPDU, dUser *Signal
	pData, pValid, pReady, pLast                                                      *Signal
	mData, mKeep, mValid, mReady, mLast, mLen, mMsgLast, mUser                        *Signal
}

func ddpTxPortsOf(m *Module, d ddpTxDims) ddpTxPorts {
	return ddpTxPorts{
		dValid:   m.Input("s_desc_valid", 1, "a message descriptor is offered"),
		dReady:   m.Output("s_desc_ready", 1, ""),
		dTagged:  m.Input("s_desc_tagged", 1, "1: tagged (STag, TO); 0: untagged (QN, MSN, MO)"),
		dRdmap:   m.Input("s_desc_rdmap", 8, "RDMAP control octet (RV, opcode)"),
		dDV:      m.Input("s_desc_dv", 2, "DDP version"),
		dSTag:    m.Input("s_desc_stag", 32, "tagged: STag; untagged: the second ULP field (Invalidate STag or 0)"),
		dTO:      m.Input("s_desc_to", 64, "tagged: TO of the message's first octet"),
		dQN:      m.Input("s_desc_qn", 32, "untagged: queue number"),
		dMSN:     m.Input("s_desc_msn", 32, "untagged: message sequence number"),
		dLen:     m.Input("s_desc_len", 32, "payload octets"),
		dMULPDU:  m.Input("s_desc_mulpdu", 16, "largest segment, header included (128..64768)"),
		dUser:    m.Input("s_desc_user", 16, "passed to every segment"),
		pData:    m.Input("s_axis_tdata", d.W, "payload octets, lane 0 first"),
		pValid:   m.Input("s_axis_tvalid", 1, ""),
		pReady:   m.Output("s_axis_tready", 1, ""),
		pLast:    m.Input("s_axis_tlast", 1, "the message's last payload beat"),
		mData:    m.Output("m_axis_tdata", d.W, "segment octets"),
		mKeep:    m.Output("m_axis_tkeep", d.L, ""),
		mValid:   m.Output("m_axis_tvalid", 1, ""),
		mReady:   m.Input("m_axis_tready", 1, ""),
		mLast:    m.Output("m_axis_tlast", 1, "the segment's last beat"),
		mLen:     m.Output("m_axis_tuser_len", 16, "the segment's length, header included"),
		mMsgLast: m.Output("m_axis_tuser_last", 1, "the segment is the message's last (DDP L bit)"),
		mUser:    m.Output("m_axis_tuser_user", 16, "the descriptor's user field"),
	}
}

// ddpTxDescQueue is a descriptor queue and its pop, which the planner drives.
type ddpTxDescQueue struct {
	q   Queue
	pop *Signal
}

// ddpTxDescIn is the descriptor queue (two entries, s_desc_ready on state
// alone); what the planner needs beyond the ports is formed as a
// descriptor is pushed.
func ddpTxDescIn(m *Module, p ddpTxPorts) ddpTxDescQueue {
	hlen := Sel(p.dTagged, C(5, DDPTaggedHdr), C(5, DDPUntaggedHdr))
	x := ddpTxDesc{
		tagged: p.dTagged, rdmap: p.dRdmap, dv: p.dDV, stag: p.dSTag,
		toLo: Bits(p.dTO, 15, 0), toHi: Bits(p.dTO, 63, 16), toHiP1: IncBits(p.dTO, 63, 16),
		qn: p.dQN, msn: p.dMSN,
		leftLo: Bits(p.dLen, 15, 0), leftHi: Bits(p.dLen, 31, 16), leftHiM1: Sub(Bits(p.dLen, 31, 16), C(16, 1)),
		maxp: Sub(p.dMULPDU, zext(hlen, 16)), user: p.dUser, hlen: hlen,
	}
	pop := m.Wire("dq_pop", 1, "the planner takes the head descriptor")
	push := m.WireOf("dq_push", And(p.dValid, p.dReady), "a descriptor is taken")
	q := LatePopQueue2(m, "dq", x.names(), x.widths(), push, x.exprs(), pop)
	m.Assign(p.dReady, Not(Bit(q.Count, 1)))
	return ddpTxDescQueue{q: q, pop: pop}
}

// beOctets is a field in wire (big-endian) order over ascending lanes.
func beOctets(x *Signal) Expr {
	var parts []Expr
	for i := 0; i < x.W/8; i++ {
		parts = append(parts, Bits(x, 8*i+7, 8*i))
	}
	return Cat(parts...)
}

// ddpTxPlan is the segment planner: the message being segmented, one
// segment per cycle into the segment queue while it has room. A segment
// that is not the message's last carries exactly MULPDU minus the header,
// so TO, MO and the octets left step by that register: each is split at
// bit 16, the low part added with its carry out, the high part picked
// from itself and its precomputed neighbour (plus one, or minus one for
// the octets left), which is stepped the same way. It returns the segment
// queue and its pop (the former drives it).
func ddpTxPlan(m *Module, d ddpTxDims, dq ddpTxDescQueue) (Queue, *Signal) {
	L, LB := d.L, d.LB
	act := m.RegDecl("msg_active", 1, "a message is being planned")
	h := ddpTxDescOf(dq.q.Fields[0])
	var r ddpTxDesc // the message's registers: the descriptor's fields, TO, MO and the length stepped
	regs := make([]*Signal, len(r.names()))
	for i, n := range r.names() {
		regs[i] = m.RegDecl("msg_"+n, r.widths()[i], "")
	}
	r = ddpTxDescOf(regs)
	moLo := m.RegDecl("msg_mo_lo", 16, "MO of the next segment, bits 15:0")
	moHi := m.RegDecl("msg_mo_hi", 16, "bits 31:16")
	moHiP1 := m.RegDecl("msg_mo_hi_p1", 16, "bits 31:16 plus one")
	sMax := m.RegDecl("msg_smax", 16, "a full segment's length: MULPDU")

	sqRoom := m.Wire("sq_room", 1, "the segment queue has room")
	push := m.WireOf("sq_push", And(act, sqRoom), "a segment is planned")
	maxp := r.maxp.(*Signal)
	leftLo := r.leftLo.(*Signal)
	last := m.WireOf("plan_last", And(Eq(r.leftHi, C(16, 0)), Not(Lt(maxp, leftLo))), "the message's rest fits: its last segment")
	hlen := r.hlen.(*Signal)
	// The first beat's header and payload octets: constants per header
	// length but for a last segment shorter than the beat.
	hdrIn := func(n int) int { return min(n, L) }
	hl0 := Sel(r.tagged, C(LB+1, uint64(hdrIn(DDPTaggedHdr))), C(LB+1, uint64(hdrIn(DDPUntaggedHdr))))
	roomAfter := func(n int) int { return L - hdrIn(n) }
	short := func(n int) Expr { // a last segment's payload ends in its first beat
		if L < n {
			return C(1, 0)
		}
		return Not(Lt(C(16, uint64(roomAfter(n))), leftLo))
	}
	shortT, shortU := short(DDPTaggedHdr), short(DDPUntaggedHdr)
	end0 := m.WireOf("plan_end0", And(last, Sel(r.tagged, shortT, shortU)), "the segment is one beat")
	fullK := Sel(r.tagged, C(LB+1, uint64(roomAfter(DDPTaggedHdr))), C(LB+1, uint64(roomAfter(DDPUntaggedHdr))))
	k0 := m.WireOf("plan_k0", Sel(end0, Bits(leftLo, LB, 0), fullK), "payload octets of the first beat")
	slen := m.WireOf("plan_len", Sel(last, Add(zext(hlen, 16), leftLo), sMax), "the segment's length")
	ctl := Cat(r.tagged, last, C(4, 0), r.dv) // DDP control: T, L, reserved, DV
	to := m.WireOf("plan_to", Cat(r.toHi, r.toLo), "TO of the segment")
	mo := m.WireOf("plan_mo", Cat(moHi, moLo), "MO of the segment")
	stag := r.stag.(*Signal)
	tagHdr := Cat(C(ddpHdrBits-8*DDPTaggedHdr, 0), beOctets(to), beOctets(stag), r.rdmap, ctl)
	untagHdr := Cat(beOctets(mo), beOctets(r.msn.(*Signal)), beOctets(r.qn.(*Signal)), beOctets(stag), r.rdmap, ctl)
	seg := ddpTxSeg{
		hdr:  m.WireOf("plan_hdr", Sel(r.tagged, tagHdr, untagHdr), "the segment's header, octet 0 in lane 0"),
		slen: slen, last: last, user: r.user, hl0: hl0, k0: k0, end0: end0, hrem0: hlen,
	}
	pop := m.Wire("sq_pop", 1, "the former takes the head segment")
	sq := LatePopQueue2(m, "sq", seg.names(), d.segWidths(), push, seg.exprs(), pop)
	m.Assign(sqRoom, Not(Bit(sq.Count, 1)))

	// The next message, or the next segment of this one.
	load := m.WireOf("msg_load", And(RedOr(dq.q.Count), Or(Not(act), And(push, last))), "take the head descriptor")
	m.Assign(dq.pop, load)
	step := m.WireOf("msg_step", And(push, Not(last)), "a segment that is not the message's last is planned")
	m.Drive(act, big.NewInt(0), Or(load, And(act, Not(And(push, last)))), nil)
	up := func(lo *Signal, dec bool) (Expr, Expr) { // the low part stepped by maxp; its carry (or borrow) out
		var s Expr
		if dec {
			s = Sub(zext(lo, 17), zext(maxp, 17))
		} else {
			s = Add(zext(lo, 17), zext(maxp, 17))
		}
		w := m.WireOf(lo.Name+"_step", s, "")
		return Bits(w, 15, 0), Bit(w, 16)
	}
	pick := func(c Expr, hi, hiN *Signal, dec bool) (Expr, Expr) { // the high part and its neighbour after the step
		n := IncBits(hiN, hiN.W-1, 0)
		if dec {
			n = Sub(hiN, C(hiN.W, 1))
		}
		return Sel(c, hiN, hi), Sel(c, n, hiN)
	}
	toLoN, toC := up(r.toLo.(*Signal), false)
	toHiN, toHiP1N := pick(toC, r.toHi.(*Signal), r.toHiP1.(*Signal), false)
	moLoN, moC := up(moLo, false)
	moHiN, moHiP1N := pick(moC, moHi, moHiP1, false)
	lLoN, lB := up(leftLo, true)
	lHiN, lHiM1N := pick(lB, r.leftHi.(*Signal), r.leftHiM1.(*Signal), true)
	stepped := map[string]Expr{"to_lo": toLoN, "to_hi": toHiN, "to_hi_p1": toHiP1N, "left_lo": lLoN, "left_hi": lHiN, "left_hi_m1": lHiM1N}
	hv := h.exprs()
	for i, n := range r.names() {
		if e, ok := stepped[n]; ok {
			m.Drive(regs[i], nil, Sel(load, hv[i], e), Or(load, step))
			continue
		}
		m.Drive(regs[i], nil, hv[i], load)
	}
	m.Drive(moLo, nil, Sel(load, C(16, 0), moLoN), Or(load, step))
	m.Drive(moHi, nil, Sel(load, C(16, 0), moHiN), Or(load, step))
	m.Drive(moHiP1, nil, Sel(load, C(16, 1), moHiP1N), Or(load, step))
	m.Drive(sMax, nil, Add(h.maxp, zext(h.hlen, 16)), load)
	return sq, pop
}

// ddpTxForm is the beat former: the registers describe the beat to form
// (its header and payload octets, whether it ends the segment), and the
// next beat's values are formed from them in parallel (the segment's
// octets left step down by the lanes, a constant) or taken from the
// segment queue's head, and picked when the beat is formed. The payload
// lanes come from a window of payload beats 1 and 0 above W/8 zero octets,
// moved down by W/8 + (octets of beat 0 already sent) - (header lanes).
func ddpTxForm(m *Module, d ddpTxDims, p ddpTxPorts, sq Queue, sqPop *Signal) {
	L, LB, W := d.L, d.LB, d.W
	kb := LB + 1 // bits of a lane count 0..L
	oValid := m.RegDecl("o_valid", 1, "the output register holds a beat")
	adv := m.WireOf("advance", Or(Not(oValid), p.mReady), "the former moves on this cycle")

	// The payload beats.
	pcw := addrWidth(ddpTxPayloadDepth + 1)
	ppop := m.Wire("pq_pop", pcw, "payload beats released this cycle")
	pRoom := m.Wire("pq_room", 1, "")
	pq := LatePopQueue(m, "pq", ddpTxPayloadDepth, []string{"data", "last"}, []int{W, 1},
		And(p.pValid, pRoom), []Expr{p.pData, p.pLast}, ppop)
	m.Assign(pRoom, Lt(pq.Count, C(pcw, ddpTxPayloadDepth)))
	m.Assign(p.pReady, pRoom)

	// The beat to form.
	fv := m.RegDecl("seg_v", 1, "a segment's beat is due")
	hdr := m.RegDecl("seg_hdr", ddpHdrBits, "header octets not yet sent, the next in lane 0")
	slen := m.RegDecl("seg_len", 16, "the segment's length")
	slast := m.RegDecl("seg_last", 1, "the segment is the message's last")
	user := m.RegDecl("seg_user", 16, "")
	hl := m.RegDecl("beat_hl", kb, "header octets of the beat")
	k := m.RegDecl("beat_k", kb, "payload octets of the beat")
	end := m.RegDecl("beat_end", 1, "the beat ends the segment")
	rem := m.RegDecl("beat_rem", 16, "octets of the segment from this beat on")
	hrem := m.RegDecl("beat_hrem", 5, "header octets from this beat on")
	rp := m.RegDecl("pay_rp", LB, "octets of payload beat 0 already sent")

	kZero := m.WireOf("b_no_payload", Eq(k, C(kb, 0)), "")
	lastK := m.WireOf("b_last_payload", And(slast, end, Not(kZero)), "the beat sends the message's last payload octet")
	rpk := m.WireOf("b_rp_end", Add(zext(rp, kb), k), "rp + k")
	need1 := m.WireOf("b_need1", Lt(C(kb, uint64(L)), rpk), "the beat reaches into payload beat 1")
	pass0 := m.WireOf("b_pass0", Not(Lt(rpk, C(kb, uint64(L)))), "the beat passes payload beat 0's end")
	have := m.WireOf("b_have", Or(kZero, Bit(pq.Count, 1), And(RedOr(pq.Count), pq.Fields[0][1])),
		"two payload beats held, or the message's last")
	emit := m.WireOf("b_emit", And(adv, fv, have), "a beat is formed this cycle")
	pops := Sel(lastK, Sel(need1, C(pcw, 2), C(pcw, 1)), Sel(And(Not(kZero), pass0), C(pcw, 1), C(pcw, 0)))
	m.Assign(ppop, Sel(emit, pops, C(pcw, 0)))
	m.Drive(rp, big.NewInt(0), Sel(lastK, C(LB, 0), Bits(rpk, LB-1, 0)), emit)

	// The beat's lanes.
	win := m.WireOf("b_window", Cat(Bits(pq.Fields[1][0], W-9, 0), pq.Fields[0][0], C(W, 0)), "payload beats 1 and 0 above L zero octets")
	shift := m.WireOf("b_shift", Sub(Add(zext(rp, kb), C(kb, uint64(L))), hl), "octets the window moves down: L + rp - hl")
	payLanes := shiftDownBytes(m, "b_pay", win, shift, W)
	nb := m.WireOf("b_octets", Sel(end, Bits(rem, LB, 0), C(kb, uint64(L))), "octets in this beat")
	keep := m.WireOf("b_keep", laneMask(m, "b_keep", nb, L), "lanes of this beat")
	hdrMask := m.WireOf("b_hdr_lanes", laneMask(m, "b_hdr", hl, L), "lanes carrying header octets")
	var hdrLanes Expr
	if ddpHdrBits >= W {
		hdrLanes = Bits(hdr, W-1, 0)
	} else {
		hdrLanes = Cat(C(W-ddpHdrBits, 0), hdr)
	}
	beat := Or(And(expand(hdrMask), hdrLanes), And(expand(keep), Not(expand(hdrMask)), payLanes))

	// The next beat: the same segment's (from the registers) or the next
	// segment's first (from the queue's head).
	remN := Cat(Sub(Bits(rem, 15, LB), C(16-LB, 1)), Bits(rem, LB-1, 0))
	endN := m.WireOf("n_end", Not(Lt(C(16, uint64(2*L)), rem)), "the next beat ends the segment: rem - L <= L")
	hremN := m.WireOf("n_hrem", Sub(hrem, fit(hl, 5)), "")
	var hlN Expr = fit(hremN, kb)
	if L < DDPUntaggedHdr {
		hlN = Sel(Lt(C(5, uint64(L)), hremN), C(kb, uint64(L)), Bits(hremN, kb-1, 0)) // kb <= 5 here
	}
	hlNw := m.WireOf("n_hl", hlN, "")
	remLowN := Cat(Not(Bit(rem, LB)), Bits(rem, LB-1, 0)) // (rem - L) mod 2L: the next beat's octets when it ends the segment
	kN := Sel(endN, Sub(remLowN, hlNw), Sub(C(kb, uint64(L)), hlNw))
	var hdrN Expr = hdr
	if L < DDPUntaggedHdr {
		hdrN = Cat(C(W, 0), Bits(hdr, ddpHdrBits-1, W))
	}
	s0 := ddpTxSegOf(sq.Fields[0])
	segDone := m.WireOf("seg_done", And(emit, end), "the segment's last beat is formed")
	loadSeg := m.WireOf("seg_load", And(RedOr(sq.Count), Or(Not(fv), segDone)), "take the head segment")
	m.Assign(sqPop, loadSeg)
	m.Drive(fv, big.NewInt(0), Or(loadSeg, And(fv, Not(segDone))), nil)
	en := Or(loadSeg, emit)
	m.Drive(hdr, nil, Sel(loadSeg, s0.hdr, hdrN), en)
	m.Drive(hl, big.NewInt(0), Sel(loadSeg, s0.hl0, hlNw), en)
	m.Drive(k, big.NewInt(0), Sel(loadSeg, s0.k0, kN), en)
	m.Drive(end, big.NewInt(0), Sel(loadSeg, s0.end0, endN), en)
	m.Drive(rem, nil, Sel(loadSeg, s0.slen, remN), en)
	m.Drive(hrem, nil, Sel(loadSeg, s0.hrem0, hremN), en)
	m.Drive(slen, nil, s0.slen, loadSeg)
	m.Drive(slast, nil, s0.last, loadSeg)
	m.Drive(user, nil, s0.user, loadSeg)

	// The output register.
	m.Drive(oValid, big.NewInt(0), emit, adv)
	m.Assign(p.mValid, oValid)
	m.Assign(p.mData, m.Reg("o_data", W, big.NewInt(0), beat, emit, ""))
	m.Assign(p.mKeep, m.Reg("o_keep", L, big.NewInt(0), keep, emit, ""))
	m.Assign(p.mLast, m.Reg("o_last", 1, big.NewInt(0), end, emit, ""))
	m.Assign(p.mLen, m.Reg("o_len", 16, big.NewInt(0), slen, emit, ""))
	m.Assign(p.mMsgLast, m.Reg("o_msg_last", 1, big.NewInt(0), slast, emit, ""))
	m.Assign(p.mUser, m.Reg("o_user", 16, big.NewInt(0), user, emit, ""))
}
