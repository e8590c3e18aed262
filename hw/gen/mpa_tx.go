package gen

import (
	"fmt"
	"math/big"
	"math/bits"
)

// MPATxWidths lists the data widths mpa_tx ships at.
var MPATxWidths = []int{64, 128, 256, 512}

// mpaTxStages is the number of Z^-p correction stages of mpa_tx's CRC: p
// counts the lanes the CRC does not cover on a frame's last beat, 0..lanes.
func mpaTxStages(lanes int) int {
	nk := bits.TrailingZeros(uint(lanes)) + 1
	return (nk + crcFixBits - 1) / crcFixBits
}

// MPATxLatency is the number of cycles from the cycle an output beat is
// formed to the cycle it is on m_axis (with m_axis_tready high).
func MPATxLatency(width int) int { return 3 + mpaTxStages(width/8) }

// MPATx builds mpa_tx_w<width>: the MPA transmit data path of RFC 5044 §4
// for any number of half connections, one output beat per cycle.
func MPATx(width int) (*Module, error) {
	if width < 64 || width > 512 || width&(width-1) != 0 {
		return nil, fmt.Errorf("%w: mpa_tx data width %d (need 64, 128, 256 or 512)", ErrInvalid, width)
	}
	lanes := width / 8
	nk := bits.TrailingZeros(uint(lanes))
	stages := mpaTxStages(lanes)
	m := NewModule(fmt.Sprintf("mpa_tx_w%d", width),
		"RFC 5044 §4.1 (FPDU format, PAD), §4.2-4.3 (markers, FPDUPTR, placement every 512 octets from SeqStart), §4.4 (CRC32c coverage, CRC sent least significant octet first)",
		fmt.Sprintf("MPA transmit path, %d-bit AXI-Stream (%d byte lanes). It turns each ULPDU (DDP segment) into an FPDU: ULPDU_Length, the ULPDU, PAD to a 4-octet boundary, markers every 512 octets of the half connection's stream (counted from SeqStart) with FPDUPTR pointing back to the FPDU's ULPDU_Length, and the CRC32c of all of it, markers included.", width, lanes),
		"Context per ULPDU, sampled with its first beat: s_offset (stream offset from SeqStart of the FPDU's first octet, a multiple of 4), s_ulpdu_len (1..64768, must match the beats up to tlast), s_markers, s_crc (0: the CRC field is sent as zero). One instance serves any number of connections: the caller keeps each connection's offset and advances it by the FPDU's wire length, which m_axis_tuser returns on the FPDU's last beat (the offset just past the FPDU; 0 on other beats).",
		"Output: one AXI-Stream packet per FPDU starting at lane 0, tkeep contiguous. Timing: input beats are taken while fewer than 4 are held (s_axis_tready depends on state only); an output beat is formed once the held beats cover the next "+fmt.Sprintf("%d", lanes)+" octets of the ULPDU from the current position; a held beat is released once the output has passed all its octets (the ULPDU's last beat: when its FPDU ends); a new FPDU starts in the cycle its predecessor's last beat is formed if its context is already held, else one cycle after its first beat is. "+
			fmt.Sprintf("Formed beats reach m_axis %d cycles later. Everything but input acceptance advances only when the output register is empty or m_axis_tready is 1.", MPATxLatency(width)))
	m.Clock()
	rst := m.ResetPort()
	_ = rst
	tdata := m.Input("s_axis_tdata", width, "ULPDU octets, lane 0 first")
	tvalid := m.Input("s_axis_tvalid", 1, "")
	tready := m.Output("s_axis_tready", 1, "")
	tlast := m.Input("s_axis_tlast", 1, "last beat of the ULPDU")
	sOff := m.Input("s_offset", 32, "context: stream offset of the FPDU from SeqStart")
	sLen := m.Input("s_ulpdu_len", 16, "context: ULPDU length in octets")
	sMk := m.Input("s_markers", 1, "context: insert markers")
	sCRC := m.Input("s_crc", 1, "context: compute the CRC")
	mData := m.Output("m_axis_tdata", width, "FPDU octets")
	mKeep := m.Output("m_axis_tkeep", lanes, "")
	mValid := m.Output("m_axis_tvalid", 1, "")
	mReady := m.Input("m_axis_tready", 1, "")
	mLast := m.Output("m_axis_tlast", 1, "last beat of the FPDU")
	mUser := m.Output("m_axis_tuser", 32, "on the last beat: stream offset just past the FPDU")

	oValid := m.RegDecl("o_valid", 1, "the output register holds a beat")
	adv := m.WireOf("advance", Or(Not(oValid), mReady), "the framer and every pipeline stage move on this cycle")

	// --- input: a window of up to four beats, and the ULPDUs' contexts ---
	// (four, not three: the ULPDU's last beat stays until its FPDU ends, and
	// the next ULPDU's first beat must already be in by then)
	const depth = 4
	cw := addrWidth(depth + 1)
	inFirst := m.RegDecl("in_first", 1, "the next beat accepted opens a ULPDU")
	var q Queue
	room := m.Wire("win_room", 1, "fewer than four beats held")
	m.Assign(tready, room)
	fire := m.WireOf("s_fire", And(tvalid, room), "a beat is accepted")
	m.Drive(inFirst, big.NewInt(1), tlast, fire)

	// The framer state, declared first: the pops depend on it.
	act := m.RegDecl("f_active", 1, "an FPDU is being formed")
	first := m.RegDecl("f_first", 1, "the next beat is the FPDU's first")
	// Distances to the body's landmarks are kept as registers, stepped down
	// by the octets each beat carries, so that no adder sits between the
	// state and the lane selects: room_x = x + 4 - (body octets before this
	// beat), for x = the end of the ULPDU (2 + length), of the CRC coverage
	// (body length - 4) and of the body.
	roomData := m.RegDecl("f_room_data", 18, "2 + length + 4 - body octets so far")
	roomCov := m.RegDecl("f_room_cov", 18, "body octets left (the CRC field's 4 included)")
	roomEnd := m.RegDecl("f_room_end", 18, "body octets left + 4")
	rel := m.RegDecl("f_rel", 18, "f_body minus the ULPDU index of window entry 0")
	uLen := m.RegDecl("f_len", 16, "ULPDU length")
	toMk := m.RegDecl("f_to_marker", 9, "octets from this beat's lane 0 to the next marker position")
	mkOn := m.RegDecl("f_markers", 1, "")
	crcOn := m.RegDecl("f_crc", 1, "")
	lead := m.RegDecl("f_lead", 1, "the FPDU opens with a marker")
	jIdx := m.RegDecl("f_wire", 16, "FPDU octets on the wire before this beat")
	pos := m.RegDecl("f_pos", 32, "stream offset of this beat's lane 0")

	popW := m.Wire("win_pop", cw, "window entries released this cycle")
	q = ShiftQueue(m, "win", depth, []string{"data", "last"}, []int{width, 1}, fire, []Expr{tdata, tlast}, popW)
	m.Assign(room, Lt(q.Count, C(cw, depth)))
	w0, w0Last, w1 := q.Fields[0][0], q.Fields[0][1], q.Fields[1][0]

	ctxPop := m.Wire("ctx_pop", cw, "contexts taken this cycle")
	ctxPush := m.WireOf("ctx_push", And(fire, inFirst), "a ULPDU's first beat brings its context")
	// The context queue carries each FPDU's initial framer state, computed
	// from the inputs as the context is pushed: no adder sits between the
	// queue's head and the framer registers it loads.
	sLen18 := Cat(C(2, 0), sLen)
	ctxIn := ctxState{
		off: sOff, len: sLen, mk: sMk, crc: sCRC,
		roomData: Add(sLen18, C(18, 6)),                      // 2 + length + 4
		roomCov:  And(Add(sLen18, C(18, 9)), C(18, 0x3FFFC)), // 2 + length + PAD + 4 (CRC)
		roomEnd:  And(Add(sLen18, C(18, 13)), C(18, 0x3FFFC)),
		toMk:     Sub(C(9, 0), Bits(sOff, 8, 0)),
		lead:     And(sMk, Eq(Bits(sOff, 8, 0), C(9, 0))),
	}
	cq := ShiftQueue(m, "ctx", depth, ctxIn.names(), ctxIn.widths(), ctxPush, ctxIn.exprs(), ctxPop)
	c0 := ctxHead(cq.Fields[0])

	// --- forming one output beat from the framer state and the window ---
	b18 := func(e Expr, w int) Expr { return Cat(C(18-w, 0), e) }
	need0 := m.WireOf("f_need_data", Not(Or(Bit(roomData, 17), Lt(roomData, C(18, 5)))), "this beat carries ULPDU octets")
	relGe4 := m.RegDecl("f_rel_ge4", 1, "f_rel >= 4 (kept as a register: it decides the window's pops)")
	need1 := m.WireOf("f_need_two", And(need0, relGe4, Not(w0Last)), "they reach into window entry 1")
	have := m.WireOf("f_have", Or(Not(need0), And(Ne(q.Count, C(cw, 0)), Or(Not(need1), Not(Lt(q.Count, C(cw, 2)))))), "the window holds them")
	can := m.WireOf("f_can", And(act, have), "a beat can be formed")
	emit := m.WireOf("f_emit", And(adv, can), "a beat is formed this cycle")

	toMk18 := b18(toMk, 9)
	mkHere := m.WireOf("f_marker_here", And(mkOn, Lt(toMk, C(9, uint64(lanes))), Lt(toMk18, roomCov)), "a marker falls in this beat, before the FPDU ends")
	last := m.WireOf("f_last", Sel(mkHere, Lt(roomCov, C(18, uint64(lanes-3))), Lt(roomCov, C(18, uint64(lanes+1)))), "this beat ends the FPDU")

	// Lane classes. For a body threshold X, lane i is below it when
	// i - 4*after_i < X - f_body, i.e. i + 4 - 4*after_i < X + 4 - f_body:
	// lane i before the marker compares X + 4 - f_body with i + 4 (the
	// "pre" vector), lane i after it with i, which is lane i-4 of "pre".
	// Each class is written on whole vectors (see mpa_tx_lanes.go).
	mkGroup := m.WireOf("f_marker_group", Bits(toMk, nk-1, 2), "4-lane group of the marker")
	covPre := m.WireOf("f_cover_pre", roomBelow(m, "cov", roomCov, nk, 1), "lanes the CRC covers, before the marker")
	keepPre := m.WireOf("f_keep_pre", roomBelow(m, "end", roomEnd, nk, 1), "lanes kept, before the marker")
	mkLanes := m.WireOf("f_marker_lanes", groupMask(mkHere, mkGroup, 1, func(g, lg int) bool { return lg == g }), "the marker's lanes")
	afterLanes := m.WireOf("f_after_lanes", groupMask(mkHere, mkGroup, 1, func(g, lg int) bool { return lg > g }), "lanes after the marker")

	// The window as octets: 2 zero octets, entry 0, entry 1 but its last two
	// octets. ULPDU octet u sits at window octet u - base + 2; lane i (before
	// the marker) needs u = body - 2 + i, i.e. window octet rel + i.
	var shifts []Expr
	for v := 0; v <= lanes/4; v++ {
		shifts = append(shifts, windowBits(w0, w1, 32*v+width-1, 32*v))
	}
	sel := []Expr{}
	for b := 2; b <= nk; b++ {
		sel = append(sel, Bit(rel, b))
	}
	nSel := len(sel)
	if lanes/4+1 > 1<<nSel {
		sel = append(sel, Bit(rel, nk+1))
		nSel++
	}
	for len(shifts) < 1<<nSel {
		shifts = append(shifts, shifts[len(shifts)-1])
	}
	shifted := m.WireOf("f_shifted", muxTree(sel, shifts), "ULPDU octets aligned to this beat's lanes")

	// FPDUPTR: distance back from the marker to ULPDU_Length, 0 for a marker
	// that opens the FPDU.
	hdrPos := Sel(lead, C(16, 4), C(16, 0))
	ptr := m.WireOf("f_fpduptr", Sel(And(first, lead, Eq(toMk, C(9, 0))), C(16, 0), Sub(Add(jIdx, Cat(C(7, 0), toMk)), hdrPos)), "")
	beatData := formBeat(m, beatIn{nk: nk, roomData: roomData, mkHere: mkHere, mkGroup: mkGroup, mkLanes: mkLanes, afterLanes: afterLanes,
		shifted: shifted, ptr: ptr, uLen: uLen, first: first, lead: lead})
	beatKeep := Or(mkLanes, pick(afterLanes, shiftLanes(keepPre, 4), keepPre))
	beatCov := Or(mkLanes, pick(afterLanes, shiftLanes(covPre, 4), covPre))
	// The FPDU's end offset, pos + body octets left (+4 past a marker), is
	// added in stage b: the framer registers its two terms.
	endRoom := Sel(mkHere, Add(roomCov, C(18, 4)), roomCov)

	// --- framer state ---
	startNext := m.WireOf("f_start", And(adv, Ne(cq.Count, C(cw, 0)), Or(Not(act), And(can, last))), "load the next FPDU's context")
	m.Assign(ctxPop, Cat(C(cw-1, 0), startNext))
	// rel + consumed >= lanes + 4: consumed is lanes-4 or lanes, so this is
	// rel >= 8 or rel >= 4, compared without the adder.
	pop1 := And(Sel(mkHere, Not(Lt(rel, C(18, 8))), Not(Lt(rel, C(18, 4)))), Not(w0Last))
	m.Assign(popW, Sel(emit, Sel(last, Sel(w0Last, C(cw, 1), C(cw, 2)), Cat(C(cw-1, 0), pop1)), C(cw, 0)))

	// The next FPDU's initial state, from the head context.
	// (toMk - lanes mod 512 in both cases; each candidate of the
	// stepped registers is formed in parallel and picked by the marker and
	// pop decisions, so no adder follows them.)
	stepToMk := Sub(toMk, C(9, uint64(lanes)))
	less := func(r *Signal) Expr { // r - consumed
		return Sel(mkHere, Sub(r, C(18, uint64(lanes-4))), Sub(r, C(18, uint64(lanes))))
	}
	relNext := Sel(pop1, Sel(mkHere, Sub(rel, C(18, 4)), rel), Sel(mkHere, Add(rel, C(18, uint64(lanes-4))), Add(rel, C(18, uint64(lanes)))))
	goOn := m.WireOf("f_continue", And(emit, Not(last)), "")
	ld := func(r *Signal, reset *big.Int, start, cont Expr) {
		m.Drive(r, reset, Sel(startNext, start, cont), Or(startNext, goOn))
	}
	m.Drive(act, big.NewInt(0), startNext, Or(startNext, And(emit, last)))
	ld(first, big.NewInt(0), C(1, 1), C(1, 0))
	ld(roomData, nil, c0.roomData, less(roomData))
	ld(roomCov, nil, c0.roomCov, less(roomCov))
	ld(roomEnd, nil, c0.roomEnd, less(roomEnd))
	ld(rel, nil, C(18, 0), relNext)
	// relNext >= 4: rel + consumed is at least lanes-4 >= 4 without a pop,
	// rel - 4 or rel with one.
	ld(relGe4, nil, C(1, 0), Sel(pop1, Sel(mkHere, Not(Lt(rel, C(18, 8))), Not(Lt(rel, C(18, 4)))), C(1, 1)))
	ld(uLen, nil, c0.len, uLen)
	ld(toMk, nil, c0.toMk, stepToMk)
	ld(mkOn, nil, c0.mk, mkOn)
	ld(crcOn, nil, c0.crc, crcOn)
	ld(lead, nil, c0.lead, lead)
	ld(jIdx, nil, C(16, 0), Add(jIdx, C(16, uint64(lanes))))
	ld(pos, nil, c0.off, Add(pos, C(32, uint64(lanes))))

	// --- stage f: the formed beat ---
	// The beat's lanes are written into the registers they feed rather than
	// into wires (the same logic): a simulator evaluates them only for the
	// beats formed.
	fValid := m.Reg("fb_valid", 1, big.NewInt(0), emit, adv, "stage f holds a formed beat")
	fData := m.Reg("fb_data", width, nil, beatData, emit, "the formed beat, CRC field still zero")
	fKeep := m.Reg("fb_keep", lanes, nil, beatKeep, emit, "")
	fCov := m.Reg("fb_cover", lanes, nil, beatCov, emit, "lanes the CRC covers")
	fLast := m.Reg("fb_last", 1, nil, last, emit, "")
	fCRC := m.Reg("fb_crc", 1, nil, crcOn, emit, "")
	fPos := m.Reg("fb_pos", 32, nil, pos, emit, "stream offset of the beat's lane 0")
	fRoom := m.Reg("fb_end_room", 18, nil, endRoom, emit, "octets from lane 0 to the FPDU's end, on its last beat")
	// The end offset is added over two stages: the low 18 bits and their
	// carry in stage b, the high 14 bits in the next.
	fLo := m.WireOf("fb_end_lo", Add(Cat(C(1, 0), Bits(fPos, 17, 0)), Cat(C(1, 0), fRoom)), "low bits of the end offset and their carry")
	fUser := m.WireOf("fb_user", Sel(fLast, Cat(Bits(fPos, 31, 18), Bits(fLo, 17, 0)), C(32, 0)), "on the last beat: the end offset but the carry into bit 18")

	// --- CRC over the covered lanes, as in crc32c ---
	// (on 64-bit words, and written into b_term: see crc32c)
	masked := maskedWords(m, "fb_masked", fData, fCov)
	dataRows, stateRows := CRC32CUpdate(lanes).Split()
	term := MatVecWords(masked, dataRows)
	// Lanes the CRC does not cover (all when the beat is the CRC field
	// alone), written into b_pad: the last covered lane's one-hot on whole
	// vectors, inside the register's expression (no wire evaluated on every
	// cycle).
	covLast := lastLaneVector(fCov)
	padLanes := Sel(Not(RedOr(fCov)), C(nk+1, uint64(lanes)), Cat(C(1, 0), complementIndex(covLast, nk)))

	type carried struct{ data, keep, last, crc, user *Signal }
	stage := func(p string, valid *Signal, c carried, extra func(en Expr)) (*Signal, carried) {
		en := And(adv, valid)
		nv := m.Reg(p+"_valid", 1, big.NewInt(0), valid, adv, "")
		n := carried{
			data: m.Reg(p+"_data", width, nil, c.data, en, ""),
			keep: m.Reg(p+"_keep", lanes, nil, c.keep, en, ""),
			last: m.Reg(p+"_last", 1, nil, c.last, en, ""),
			crc:  m.Reg(p+"_crc_on", 1, nil, c.crc, en, ""),
			user: m.Reg(p+"_user", 32, nil, c.user, en, ""),
		}
		if extra != nil {
			extra(en)
		}
		return nv, n
	}
	var bTerm, bPad, bCov, bCarry *Signal
	bValid, bc := stage("b", fValid, carried{fData, fKeep, fLast, fCRC, fUser}, func(en Expr) {
		bCarry = m.Reg("b_user_carry", 1, nil, And(fLast, Bit(fLo, 18)), en, "carry of the end offset's low bits")
		bTerm = m.Reg("b_term", 32, nil, term, en, "the beat's contribution to the CRC register")
		bPad = m.Reg("b_pad", nk+1, nil, padLanes, en, "lanes the CRC does not cover")
		bCov = m.Reg("b_cover", lanes, nil, fCov, en, "")
	})
	state := m.RegDecl("crc_state", 32, "CRC register of the FPDU before stage b's beat")
	stateTerm := m.WireOf("crc_state_term", MatVec(state, stateRows), "")
	next := m.WireOf("crc_next", Xor(bTerm, stateTerm), "CRC register after stage b's beat")
	m.Drive(state, big.NewInt(0xFFFFFFFF), Sel(bc.last, Ones(32), next), And(adv, bValid))

	zinv, ok := ZeroByteMatrix().Inverse()
	if !ok {
		return nil, fmt.Errorf("%w: CRC32c zero-byte matrix is singular", ErrInvalid)
	}
	zinvParam := zinvParams(m, zinv)
	// Each correction but the last is written into the next stage's
	// register (no wire), evaluated only for beats that move.
	var crc Expr = next
	bc.user = m.WireOf("b_user_sum", Cat(Add(Bits(bc.user, 31, 18), Cat(C(13, 0), bCarry)), Bits(bc.user, 17, 0)), "the end offset")
	valid, c, pad, cov := bValid, bc, bPad, bCov
	for s := 0; s < stages; s++ {
		p := fmt.Sprintf("p%d", s)
		var nCRC, nPad, nCov *Signal
		lo := s * crcFixBits
		n := min(crcFixBits, nk+1-lo)
		valid, c = stage(p, valid, c, func(en Expr) {
			nCRC = m.Reg(p+"_reg", 32, nil, crc, en, "CRC register, corrected so far")
			nPad = m.Reg(p+"_pad", pad.W, nil, pad, en, "pad-lane bits not yet applied")
			nCov = m.Reg(p+"_cover", lanes, nil, cov, en, "")
		})
		if s+1 < stages {
			crc = crcFixExpr(nCRC, nPad, lo, n, zinvParam)
		} else {
			crc = crcFix(m, p, nCRC, nPad, lo, n, zinvParam)
		}
		cov = nCov
		if s+1 < stages {
			pad = m.WireOf(p+"_pad_rest", Bits(nPad, nPad.W-1, n), "")
		}
	}
	// Output: the CRC (inverted register, least significant octet first)
	// goes into the lanes kept but not covered on the FPDU's last beat.
	final := m.WireOf("o_crc_value", Not(crc), "the FPDU's CRC32c")
	crcLanes := m.WireOf("o_crc_lanes", And(Rep(And(c.last, c.crc), lanes), c.keep, Not(cov)), "lanes of the CRC field")
	var outLanes []Expr
	for i := 0; i < lanes; i++ {
		isCRC := Bit(crcLanes, i)
		outLanes = append([]Expr{Sel(isCRC, Bits(final, 8*(i%4)+7, 8*(i%4)), Bits(c.data, 8*i+7, 8*i))}, outLanes...)
	}
	merged := Cat(outLanes...) // the beat with its CRC field filled
	en := And(adv, valid)
	m.Drive(oValid, big.NewInt(0), valid, adv)
	oData := m.Reg("o_data", width, big.NewInt(0), merged, en, "")
	oKeep := m.Reg("o_keep", lanes, big.NewInt(0), c.keep, en, "")
	oLast := m.Reg("o_last", 1, big.NewInt(0), c.last, en, "")
	oUser := m.Reg("o_user", 32, big.NewInt(0), c.user, en, "")
	m.Assign(mData, oData)
	m.Assign(mKeep, oKeep)
	m.Assign(mValid, oValid)
	m.Assign(mLast, oLast)
	m.Assign(mUser, oUser)
	return m, m.Validate()
}

// ctxState is one mpa_tx context queue entry: the ULPDU's context and the
// framer state its FPDU starts from.
type ctxState struct {
	off, len, mk, crc                Expr
	roomData, roomCov, roomEnd, toMk Expr
	lead                             Expr
}

func (c ctxState) names() []string {
	return []string{"off", "len", "mk", "crc", "room_data", "room_cov", "room_end", "to_marker", "lead"}
}

func (c ctxState) widths() []int { return []int{32, 16, 1, 1, 18, 18, 18, 9, 1} }

func (c ctxState) exprs() []Expr {
	return []Expr{c.off, c.len, c.mk, c.crc, c.roomData, c.roomCov, c.roomEnd, c.toMk, c.lead}
}

// ctxHead is the queue entry f as a ctxState.
func ctxHead(f []*Signal) ctxState {
	return ctxState{off: f[0], len: f[1], mk: f[2], crc: f[3], roomData: f[4], roomCov: f[5], roomEnd: f[6], toMk: f[7], lead: f[8]}
}
