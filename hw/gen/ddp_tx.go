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

// DDPTx builds ddp_tx_w<width>: the DDP/RDMAP segmentation of the
// transmit path (RFC 5041 §5.2, §4.2-4.3; RFC 5040 §4.1): a message
// descriptor and its payload in, one ULPDU (DDP segment) per packet out,
// at one output beat per cycle.
func DDPTx(width int) (*Module, error) {
	if width < 64 || width > 512 || width&(width-1) != 0 {
		return nil, fmt.Errorf("%w: ddp_tx data width %d (need 64, 128, 256 or 512)", ErrInvalid, width)
	}
	L := width / 8
	lb := addrWidth(L)     // bits of a lane count 0..L-1
	sb := addrWidth(2 * L) // bits of the payload shift 0..2L-1
	m := NewModule(fmt.Sprintf("ddp_tx_w%d", width),
		"RFC 5041 §5.2 (segmentation at the MULPDU, a zero-length message is one segment), §4.2-4.3 (tagged and untagged headers: T, L, DV, STag/TO, QN/MSN/MO); RFC 5040 §4.1 (the RDMAP control octet in DDP's reserved ULP field, the Invalidate STag in the untagged header's second ULP field)",
		fmt.Sprintf("DDP/RDMAP segmentation, %d-bit AXI-Stream (%d byte lanes). Each message descriptor (s_desc_*) and its payload (s_axis_*) become DDP segments: a header of %d octets (tagged: control, RDMAP control, STag, TO) or %d (untagged: control, RDMAP control, Invalidate STag or zero, QN, MSN, MO), then at most MULPDU minus the header of payload; the L bit is set on the message's last segment, TO (tagged) or MO (untagged, from 0) advance by the payload sent.", width, L, DDPTaggedHdr, DDPUntaggedHdr),
		"Descriptor (taken when s_desc_valid and s_desc_ready): tagged, rdmap (the RDMAP control octet: RV and opcode), dv (DDP version: 1 for RFC 5041, 0 for MPA revision 0 peers), stag (tagged: the STag; untagged: the second ULP field, the Invalidate STag of a Send with Invalidate or 0), to (tagged: TO of the first octet), qn and msn (untagged), len (payload octets, 0 allowed), mulpdu (128..64768), user (passed to every segment). Payload: exactly len octets per message (none for len 0) from lane 0, every beat full but the message's last, tlast on the last.",
		fmt.Sprintf("Output: one packet per segment from lane 0, tkeep contiguous, lanes past it zero; m_axis_tuser_len is the segment's length (header and payload, MPA's ULPDU_Length), m_axis_tuser_last the L bit, m_axis_tuser_user the descriptor's user, on every beat. Timing: up to %d payload beats are held (s_axis_tready depends on state only); a descriptor queue of two (s_desc_ready likewise); a beat is formed when the held payload covers its octets; the first segment of a message starts one cycle after its descriptor is taken when idle, and in the cycle after its predecessor's last beat otherwise. Formed beats reach m_axis one cycle later; everything but input acceptance advances only when the output register is empty or m_axis_tready is 1.", ddpTxPayloadDepth))
	m.Clock()
	m.ResetPort()

	dValid := m.Input("s_desc_valid", 1, "a message descriptor is offered")
	dReady := m.Output("s_desc_ready", 1, "")
	dTagged := m.Input("s_desc_tagged", 1, "1: tagged (STag, TO); 0: untagged (QN, MSN, MO)")
	dRdmap := m.Input("s_desc_rdmap", 8, "RDMAP control octet (RV, opcode)")
	dDV := m.Input("s_desc_dv", 2, "DDP version")
	dSTag := m.Input("s_desc_stag", 32, "tagged: STag; untagged: the second ULP field (Invalidate STag or 0)")
	dTO := m.Input("s_desc_to", 64, "tagged: TO of the message's first octet")
	dQN := m.Input("s_desc_qn", 32, "untagged: queue number")
	dMSN := m.Input("s_desc_msn", 32, "untagged: message sequence number")
	dLen := m.Input("s_desc_len", 32, "payload octets")
	dMULPDU := m.Input("s_desc_mulpdu", 16, "largest segment, header included (128..64768)")
	dUser := m.Input("s_desc_user", 16, "passed to every segment")
	pData := m.Input("s_axis_tdata", width, "payload octets, lane 0 first")
	pValid := m.Input("s_axis_tvalid", 1, "")
	pReady := m.Output("s_axis_tready", 1, "")
	pLast := m.Input("s_axis_tlast", 1, "the message's last payload beat")
	mData := m.Output("m_axis_tdata", width, "segment octets")
	mKeep := m.Output("m_axis_tkeep", L, "")
	mValid := m.Output("m_axis_tvalid", 1, "")
	mReady := m.Input("m_axis_tready", 1, "")
	mLast := m.Output("m_axis_tlast", 1, "the segment's last beat")
	mLen := m.Output("m_axis_tuser_len", 16, "the segment's length, header included")
	mMsgLast := m.Output("m_axis_tuser_last", 1, "the segment is the message's last (DDP L bit)")
	mUser := m.Output("m_axis_tuser_user", 16, "the descriptor's user field")

	oValid := m.RegDecl("o_valid", 1, "the output register holds a beat")
	adv := m.WireOf("advance", Or(Not(oValid), mReady), "the segmenter moves on this cycle")

	// --- inputs: descriptors and payload beats ---
	dqPop := m.Wire("dq_pop", 2, "descriptors taken")
	dq := ShiftQueue(m, "dq", 2, []string{"tagged", "rdmap", "dv", "stag", "to", "qn", "msn", "len", "mulpdu", "user"},
		[]int{1, 8, 2, 32, 64, 32, 32, 32, 16, 16}, And(dValid, dReady),
		[]Expr{dTagged, dRdmap, dDV, dSTag, dTO, dQN, dMSN, dLen, dMULPDU, dUser}, dqPop)
	m.Assign(dReady, Lt(dq.Count, C(2, 2)))
	pcw := addrWidth(ddpTxPayloadDepth + 1)
	ppop := m.Wire("pq_pop", pcw, "payload beats released this cycle")
	pq := ShiftQueue(m, "pq", ddpTxPayloadDepth, []string{"data", "last"}, []int{width, 1},
		And(pValid, pReady), []Expr{pData, pLast}, ppop)
	m.Assign(pReady, Lt(pq.Count, C(pcw, ddpTxPayloadDepth)))

	// --- message and segment state ---
	act := m.RegDecl("msg_active", 1, "a message is being segmented")
	first := m.RegDecl("seg_first", 1, "the next beat opens a segment")
	tg := m.RegDecl("msg_tagged", 1, "")
	rd := m.RegDecl("msg_rdmap", 8, "")
	dv := m.RegDecl("msg_dv", 2, "")
	stag := m.RegDecl("msg_stag", 32, "")
	to := m.RegDecl("msg_to", 64, "TO of the next payload octet")
	qn := m.RegDecl("msg_qn", 32, "")
	msn := m.RegDecl("msg_msn", 32, "")
	mo := m.RegDecl("msg_mo", 32, "MO of the next payload octet")
	left := m.RegDecl("msg_left", 32, "payload octets not yet sent")
	maxp := m.RegDecl("msg_maxp", 16, "payload octets per segment: MULPDU minus the header")
	user := m.RegDecl("msg_user", 16, "")
	rp := m.RegDecl("pay_rp", lb, "octets of payload beat 0 already sent")
	hleft := m.RegDecl("seg_hleft", 5, "header octets of the segment not yet sent")
	pseg := m.RegDecl("seg_pleft", 16, "payload octets of the segment not yet sent")
	slast := m.RegDecl("seg_last", 1, "the segment is the message's last")
	slen := m.RegDecl("seg_len", 16, "the segment's length")
	hdrW := 8 * DDPUntaggedHdr
	hdr := m.RegDecl("seg_hdr", hdrW, "header octets not yet sent, the next in lane 0")

	// The segment a first beat opens, from the message state.
	hLen := m.WireOf("n_hlen", Sel(tg, C(5, DDPTaggedHdr), C(5, DDPUntaggedHdr)), "header octets")
	maxp32 := Cat(C(16, 0), maxp)
	nP := m.WireOf("n_payload", Sel(Lt(left, maxp32), Bits(left, 15, 0), maxp), "the segment's payload octets")
	nLast := m.WireOf("n_last", Not(Lt(maxp32, left)), "the segment ends the message")
	ctl := Cat(tg, nLast, C(4, 0), dv) // DDP control: T, L, reserved, DV
	be := func(x *Signal) Expr {       // a 32- or 64-bit field in wire (big-endian) order over lanes
		var parts []Expr
		for i := 0; i < x.W/8; i++ {
			parts = append(parts, Bits(x, 8*i+7, 8*i))
		}
		return Cat(parts...)
	}
	tagHdr := Cat(C(hdrW-8*DDPTaggedHdr, 0), be(to), be(stag), rd, ctl)
	untagHdr := Cat(be(mo), be(msn), be(qn), be(stag), rd, ctl)
	nHdr := m.WireOf("n_hdr", Sel(tg, tagHdr, untagHdr), "the segment's header, octet 0 in lane 0")

	cHleft := m.WireOf("c_hleft", Sel(first, hLen, hleft), "header octets left, this beat included")
	cPseg := m.WireOf("c_pleft", Sel(first, nP, pseg), "payload octets left in the segment")
	cLast := m.WireOf("c_last", Sel(first, nLast, slast), "")
	cLen := m.WireOf("c_len", Sel(first, Add(Cat(C(11, 0), hLen), nP), slen), "")
	cHdr := m.WireOf("c_hdr", Sel(first, nHdr, hdr), "")

	// Octets of this beat: hl of header, then k of payload.
	var hl Expr = cHleft // up to 18 header octets: all in one beat from 256 bits up
	if L < DDPUntaggedHdr {
		hl = Sel(Lt(C(5, uint64(L)), cHleft), C(5, uint64(L)), cHleft)
	}
	hlW := m.WireOf("b_hdr_octets", hl, "header octets in this beat")
	hl16 := Cat(C(11, 0), hlW)
	room16 := m.WireOf("b_room", Sub(C(16, uint64(L)), hl16), "lanes left for payload")
	k := m.WireOf("b_payload_octets", Sel(Lt(cPseg, room16), cPseg, room16), "payload octets in this beat")
	nb := m.WireOf("b_octets", Add(hl16, k), "octets in this beat")
	segEnd := m.WireOf("b_seg_end", And(Eq(cHleft, hlW), Eq(cPseg, k)), "the beat ends the segment")

	// Payload availability: the octets [rp, rp+k) of beats 0 and 1.
	rp16 := Cat(C(16-lb, 0), rp)
	rpk := m.WireOf("b_rp_end", Add(rp16, k), "rp + k")
	kZero := m.WireOf("b_no_payload", Eq(k, C(16, 0)), "")
	p0 := pq.Fields[0]
	have := m.WireOf("b_have", Or(kZero, And(Ne(pq.Count, C(pcw, 0)),
		Or(Bit(p0[1], 0), Not(Lt(C(16, uint64(L)), rpk)), Not(Lt(pq.Count, C(pcw, 2)))))), "the held payload covers the beat")
	emit := m.WireOf("b_emit", And(adv, act, have), "a beat is formed this cycle")
	msgEnd := m.WireOf("b_msg_end", And(emit, segEnd, cLast), "the message's last beat")

	// Payload beats released: the message's last octet releases its beat
	// (two when the octets reach into beat 1); otherwise a beat once passed.
	left16 := Bits(left, 15, 0)
	lastK := m.WireOf("b_last_payload", And(Not(kZero), Eq(Bits(left, 31, 16), C(16, 0)), Eq(left16, k)), "the beat sends the message's last payload octet")
	pops := Sel(lastK, Sel(Lt(C(16, uint64(L)), rpk), C(pcw, 2), C(pcw, 1)),
		Sel(And(Not(kZero), Not(Lt(rpk, C(16, uint64(L))))), C(pcw, 1), C(pcw, 0)))
	m.Assign(ppop, Sel(emit, pops, C(pcw, 0)))
	rpNext := Sel(lastK, C(lb, 0), Add(rp, Bits(k, lb-1, 0))) // rp + k mod L

	// The beat's lanes: header octets from cHdr, payload octets from the
	// window {beat 1, beat 0, L zero octets} shifted down by L + rp - hl.
	// (beat 1's last lane is never needed: the shift is below 2L)
	win := m.WireOf("b_window", Cat(Bits(pq.Fields[1][0], width-9, 0), p0[0], C(width, 0)), "payload beats 1 and 0 above L zero octets")
	shift := m.WireOf("b_shift", Sub(Add(fit(rp, sb), C(sb, uint64(L))), fit(hlW, sb)), "octets the window moves down: L + rp - hl")
	payLanes := shiftDownBytes(m, "b_pay", win, shift, width)
	keep := m.WireOf("b_keep", laneMask(m, "b_keep", nb, L), "lanes of this beat")
	hdrMask := m.WireOf("b_hdr_lanes", laneMask(m, "b_hdr", hl16, L), "lanes carrying header octets")
	var hdrLanes Expr
	if hdrW >= width {
		hdrLanes = Bits(cHdr, width-1, 0)
	} else {
		hdrLanes = Cat(C(width-hdrW, 0), cHdr)
	}
	expand := func(mask *Signal) Expr {
		var parts []Expr
		for i := L - 1; i >= 0; i-- {
			parts = append(parts, Rep(Bit(mask, i), 8))
		}
		return Cat(parts...)
	}
	beat := Or(And(expand(hdrMask), hdrLanes), And(expand(keep), Not(expand(hdrMask)), payLanes))

	// --- state updates ---
	start := m.WireOf("msg_start", And(Ne(dq.Count, C(2, 0)), Or(Not(act), msgEnd)), "take the head descriptor")
	m.Assign(dqPop, Cat(C(1, 0), start))
	h := dq.Fields[0]
	hdrLenH := Sel(h[0], C(16, DDPTaggedHdr), C(16, DDPUntaggedHdr))
	ld := func(r *Signal, reset *big.Int, atStart, onEmit Expr) {
		m.Drive(r, reset, Sel(start, atStart, onEmit), Or(start, emit))
	}
	k32 := Cat(C(16, 0), k)
	m.Drive(act, big.NewInt(0), start, Or(start, msgEnd))
	ld(first, big.NewInt(0), C(1, 1), segEnd)
	ld(tg, nil, h[0], tg)
	ld(rd, nil, h[1], rd)
	ld(dv, nil, h[2], dv)
	ld(stag, nil, h[3], stag)
	ld(to, nil, h[4], Add(to, Cat(C(48, 0), k)))
	ld(qn, nil, h[5], qn)
	ld(msn, nil, h[6], msn)
	ld(mo, nil, C(32, 0), Add(mo, k32))
	ld(left, nil, h[7], Sub(left, k32))
	ld(maxp, nil, Sub(h[8], hdrLenH), maxp)
	ld(user, nil, h[9], user)
	m.Drive(rp, big.NewInt(0), rpNext, emit)
	m.Drive(hleft, nil, Sub(cHleft, hlW), emit)
	m.Drive(pseg, nil, Sub(cPseg, k), emit)
	m.Drive(slast, nil, cLast, emit)
	m.Drive(slen, nil, cLen, emit)
	if L < DDPUntaggedHdr {
		m.Drive(hdr, nil, Cat(C(width, 0), Bits(cHdr, hdrW-1, width)), emit)
	} else {
		m.Drive(hdr, nil, cHdr, emit) // one beat carries the whole header
	}

	// --- output register ---
	en := emit
	m.Drive(oValid, big.NewInt(0), emit, adv)
	m.Assign(mValid, oValid)
	m.Assign(mData, m.Reg("o_data", width, big.NewInt(0), beat, en, ""))
	m.Assign(mKeep, m.Reg("o_keep", L, big.NewInt(0), keep, en, ""))
	m.Assign(mLast, m.Reg("o_last", 1, big.NewInt(0), segEnd, en, ""))
	m.Assign(mLen, m.Reg("o_len", 16, big.NewInt(0), cLen, en, ""))
	m.Assign(mMsgLast, m.Reg("o_msg_last", 1, big.NewInt(0), cLast, en, ""))
	m.Assign(mUser, m.Reg("o_user", 16, big.NewInt(0), user, en, ""))
	return m, m.Validate()
}
