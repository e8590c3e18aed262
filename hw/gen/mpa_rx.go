package gen

import (
	"fmt"
	"math/big"
	"math/bits"
)

// MPARxWidths lists the data widths mpa_rx ships at.
var MPARxWidths = []int{64, 128, 256, 512}

// MPARxMaxULPDU is the largest ULPDU_Length mpa_rx accepts, RFC 5044 §3's
// 64768; a larger one is a framing error.
const MPARxMaxULPDU = 64768

// mpaRxRingBeats is the depth, in aligned beats, of the input ring.
const mpaRxRingBeats = 4

// MPARxBufferBeats is the depth of mpa_rx's ULPDU buffer in beats: room
// for two ULPDUs of the largest size, so that one can be read out while
// the next is checked.
func MPARxBufferBeats(width int) int {
	n := 2 * ((MPARxMaxULPDU + width/8 - 1) / (width / 8))
	return 1 << bits.Len(uint(n-1))
}

// mpaRxFixStages is the number of Z^-p correction stages of the CRC check:
// p, the lanes of the FPDU's last aligned beat after its end, is a
// multiple of 4 below the lane count.
func mpaRxFixStages(lanes int) int {
	gk := bits.TrailingZeros(uint(lanes)) - 2
	return (gk + crcFixBits - 1) / crcFixBits
}

// MPARxVerdictLatency is the number of cycles from the cycle the framer
// takes an FPDU's last piece to the cycle its verdict (commit or error)
// takes effect.
func MPARxVerdictLatency(width int) int { return 3 + mpaRxFixStages(width/8) }

// MPARx builds mpa_rx_w<width>: the MPA receive data path of RFC 5044 §4,
// §6 and §8 for one half connection.
func MPARx(width int) (*Module, error) { return MPARxBuffered(width, MPARxBufferBeats(width)) }

// MPARxBuffered is MPARx with a ULPDU buffer of depth beats (a power of
// two, at least 8) instead of the shipped one: a build for synthesis
// probes, where a small buffer keeps generic synthesis, which maps memory
// to flip-flops, fast. A ULPDU longer than depth-2 beats stalls it.
func MPARxBuffered(width, depth int) (*Module, error) {
	if width < 64 || width > 512 || width&(width-1) != 0 {
		return nil, fmt.Errorf("%w: mpa_rx data width %d (need 64, 128, 256 or 512)", ErrInvalid, width)
	}
	if depth < 8 || depth&(depth-1) != 0 {
		return nil, fmt.Errorf("%w: mpa_rx buffer of %d beats (need a power of two, at least 8)", ErrInvalid, depth)
	}
	d := mpaRxDims{width: width, depth: depth, L: width / 8, D: mpaRxRingBeats}
	d.nk = bits.TrailingZeros(uint(d.L))
	d.gk = d.nk - 2 // bits of a 4-octet group index within a beat
	d.G = d.L / 4
	d.ck = bits.TrailingZeros(uint(depth))
	d.cw = d.ck + 1 // buffer pointers carry a wrap bit
	d.stages = mpaRxFixStages(d.L)
	d.dk = bits.TrailingZeros(uint(d.D))
	m, io := mpaRxPorts(d)
	st := mpaRxStreamState(m)
	ring := mpaRxInputRing(m, d, io, st)
	fr := mpaRxFramer(m, d, io, st, ring)
	commitPtr, err := mpaRxCheck(m, d, io, st, fr)
	if err != nil {
		return nil, err
	}
	mpaRxReader(m, d, io, fr, commitPtr)
	return m, m.Validate()
}

// The stages of mpa_rx, in the order the data meets them: the ports and
// context (mpaRxPorts), the stream positions the input ring and the framer
// share (mpaRxStreamState), the input ring (mpaRxInputRing), the framer that
// takes one piece per cycle and writes the ULPDU buffer (mpaRxFramer), the
// CRC and marker check whose verdicts commit or stop (mpaRxCheck), and the
// buffer's reader (mpaRxReader). Each takes the bundles of the stages
// before it and returns its own.

// mpaRxDims are the sizes every stage derives from the width and buffer depth.
type mpaRxDims struct {
	width, depth int
	L, nk, gk, G int // lanes, their index bits, 4-octet group index bits, groups
	ck, cw       int // buffer row bits, pointer bits (with the wrap bit)
	stages       int // Z^-p correction stages
	D, dk        int // input ring beats and their index bits
}

// mpaRxIO is the block's ports and its context registers (loaded in reset).
type mpaRxIO struct {
	rst, tdata, tkeep, tvalid, tready, tlast, cfgOff *Signal
	mData, mKeep, mValid, mReady, mLast, mLen        *Signal
	errValid, errKind, errCode, errOff, eos          *Signal
	cfgMk, cfgCRC, cfgRev0                           *Signal
}

// mpaRxStream is the state the input ring and the framer read of each other.
type mpaRxStream struct{ wpos, rpos, fin, bHalt, vErr, halted *Signal }

// mpaRxRing is the input ring: the aligned beats, whether a beat fits, and
// the write position's next value.
type mpaRxRing struct {
	ring            []*Signal
	ringFull, wNext *Signal
}

// mpaRxFramed is what the framer hands the check and the reader: the CRC
// pipeline's entry (the beat's covered octets, the FPDU's start, the kind
// of entry) and the buffer's write side.
type mpaRxFramed struct {
	crcUpd, lenErr, eosGo, endsF, starting, inF, avail, e, crcLo, fresh *Signal
	dual, mkBad, endPtrNow, covered, nCovered, fStart                   *Signal
	wptr, rptr, wr0, wr1, word0, word1                                  *Signal
}

// mpaRxPorts declares the module, its ports and the context registers.
func mpaRxPorts(d mpaRxDims) (*Module, mpaRxIO) {
	width, depth, L := d.width, d.depth, d.L
	m := NewModule(fmt.Sprintf("mpa_rx_w%d", width),
		"RFC 5044 §4.1-4.4 (FPDU format, markers every 512 octets from SeqStart, FPDUPTR, CRC32c coverage), §6 (delineation by ULPDU_Length; pass a ULPDU only once the whole FPDU is present and checked), §8 (error codes; nothing delivered after an error)",
		fmt.Sprintf("MPA receive path of one half connection, %d-bit AXI-Stream (%d byte lanes). It takes the connection's TCP payload stream in any segmentation and hands over each ULPDU (DDP segment) as one packet from lane 0, markers stripped, once its FPDU is complete, its CRC32c is good and its markers point where they must.", width, L),
		"Context, sampled while rst is 1: cfg_offset (stream offset from SeqStart of the first octet that follows, a multiple of 4: 0 at SeqStart), cfg_markers (markers expected), cfg_crc (check CRCs), cfg_rev0 (also accept draft-01's FPDUPTR to a leading marker).",
		"Input: s_axis beats carry 1..W/8 octets from lane 0 (tkeep contiguous); a beat may be partial anywhere (where TCP segments end); s_axis_tlast marks the end of the stream (the peer's FIN), and only a tlast beat may have tkeep 0.",
		fmt.Sprintf("Output: one packet per ULPDU on m_axis from lane 0 (tkeep contiguous, only the last beat partial), m_axis_tuser_len its ULPDU_Length on every beat; every output reads zero while its valid is low. Errors (sticky until reset; nothing is delivered past them, earlier ULPDUs still are): m_err_valid, m_err_kind (1 CRC, 2 marker, 3 length, 6 stream ended inside an FPDU: golden/mpa's Kind numbers), m_err_code (the §8 code: 2, 3, 3, 1), m_err_offset (stream offset of the FPDU). m_eos: the stream ended at an FPDU boundary. The buffer holds %d beats: two ULPDUs of the largest size.", depth),
		fmt.Sprintf("Timing: input octets go into a ring of %d aligned beats (octet at stream offset s in lane s mod W/8, so markers sit in lane 0 and every landmark in a whole 4-octet group); s_axis_tready is 1 while the ring has room for a beat (or after an error, to drain). The framer takes one piece per cycle: the octets from its position to the end of the aligned beat, the end of the FPDU, or the end of what has arrived (whole 4-octet groups), whichever comes first; it waits for more unless the piece reaches the beat's end or the FPDU's end, or s_axis_tvalid is 0 (or the stream has ended). In the cycle an FPDU ends inside a beat, the next FPDU's first piece (to the beat's end) is taken too when that part of the beat has arrived, its ULPDU_Length is good and neither it nor its ULPDU ends in the beat. The buffer has two banks (even and odd beats), so a ULPDU's last two beats are written in one cycle; the framer waits while fewer than two buffer beats are free. The CRC check is pipelined: an FPDU's verdict takes effect %d cycles after its last piece; a good FPDU's ULPDU then becomes readable and reaches m_axis 2 cycles later at the earliest.", mpaRxRingBeats, MPARxVerdictLatency(width)))
	m.Clock()
	rst := m.ResetPort()
	tdata := m.Input("s_axis_tdata", width, "TCP payload octets, lane 0 first")
	tkeep := m.Input("s_axis_tkeep", L, "octets in use, contiguous from lane 0")
	tvalid := m.Input("s_axis_tvalid", 1, "")
	tready := m.Output("s_axis_tready", 1, "")
	tlast := m.Input("s_axis_tlast", 1, "end of the stream (FIN)")
	cfgOff := m.Input("cfg_offset", 32, "context, read during reset: stream offset of the next octet from SeqStart")
	cfgMkIn := m.Input("cfg_markers", 1, "context: markers expected")
	cfgCRCIn := m.Input("cfg_crc", 1, "context: check the CRC")
	cfgRev0In := m.Input("cfg_rev0", 1, "context: MPA revision 0 peer")
	mData := m.Output("m_axis_tdata", width, "ULPDU octets")
	mKeep := m.Output("m_axis_tkeep", L, "")
	mValid := m.Output("m_axis_tvalid", 1, "")
	mReady := m.Input("m_axis_tready", 1, "")
	mLast := m.Output("m_axis_tlast", 1, "last beat of the ULPDU")
	mLen := m.Output("m_axis_tuser_len", 16, "ULPDU_Length, every beat")
	errValid := m.Output("m_err_valid", 1, "an error stopped delivery")
	errKind := m.Output("m_err_kind", 3, "1 CRC, 2 marker, 3 length, 6 stream ended inside an FPDU")
	errCode := m.Output("m_err_code", 3, "RFC 5044 §8 error code")
	errOff := m.Output("m_err_offset", 32, "stream offset of the failing FPDU")
	eos := m.Output("m_eos", 1, "the stream ended at an FPDU boundary")

	// Load-at-reset registers hold the context.
	ld := func(name string, w int, from Expr, comment string) *Signal {
		return m.Reg(name, w, nil, from, rst, comment)
	}
	cfgMk := ld("cfg_markers_q", 1, cfgMkIn, "")
	cfgCRC := ld("cfg_crc_q", 1, cfgCRCIn, "")
	cfgRev0 := ld("cfg_rev0_q", 1, cfgRev0In, "")
	return m, mpaRxIO{rst: rst, tdata: tdata, tkeep: tkeep, tvalid: tvalid, tready: tready, tlast: tlast, cfgOff: cfgOff,
		mData: mData, mKeep: mKeep, mValid: mValid, mReady: mReady, mLast: mLast, mLen: mLen,
		errValid: errValid, errKind: errKind, errCode: errCode, errOff: errOff, eos: eos,
		cfgMk: cfgMk, cfgCRC: cfgCRC, cfgRev0: cfgRev0}
}

// mpaRxStreamState declares the positions both the ring and the framer use.
func mpaRxStreamState(m *Module) mpaRxStream {
	wpos := m.RegDecl("wpos", 32, "stream offset just past the last octet received")
	rpos := m.RegDecl("rpos", 32, "stream offset of the framer: the next octet to take")
	fin := m.RegDecl("fin", 1, "the stream's last beat has been received")
	bHalt := m.RegDecl("b_halt", 1, "the framer has stopped (length error, end of stream)")
	vErr := m.RegDecl("v_err", 1, "an error has been reported")
	halted := m.WireOf("halted", Or(bHalt, vErr), "nothing more is delivered")
	return mpaRxStream{wpos: wpos, rpos: rpos, fin: fin, bHalt: bHalt, vErr: vErr, halted: halted}
}

// mpaRxInputRing lands input octets in a ring of D aligned beats: octet s
// in entry (s/L) mod D, lane s mod L.
func mpaRxInputRing(m *Module, d mpaRxDims, io mpaRxIO, st mpaRxStream) mpaRxRing {
	width, L, nk, D, dk := d.width, d.L, d.nk, d.D, d.dk
	rst, tdata, tkeep, tvalid, tready, tlast, cfgOff := io.rst, io.tdata, io.tkeep, io.tvalid, io.tready, io.tlast, io.cfgOff
	wpos, fin, halted := st.wpos, st.fin, st.halted
	// ring_full is registered (from the next positions) so that s_axis_tready
	// is defined from the first cycle, before the positions are loaded.
	ringFull := m.RegDecl("ring_full", 1, "a whole beat does not fit: more than (D-1)*W/8 octets held from the framer's aligned beat on")
	room := m.WireOf("ring_room", Not(ringFull), "")
	m.Assign(tready, Or(room, halted))
	fire := m.WireOf("s_fire", And(tvalid, Or(room, halted)), "a beat is accepted")
	anyKeep := m.WireOf("s_any", RedOr(tkeep), "")
	lastLane := m.WireOf("s_last_lane", lastLaneOneHot(tkeep), "")
	ci := m.WireOf("s_last_lane_ci", complementIndex(lastLane, nk), "W/8-1 minus the last lane in use")
	count := m.WireOf("s_count", Sel(anyKeep, Sub(C(nk+1, uint64(L)), Cat(C(1, 0), ci)), C(nk+1, 0)), "octets in the beat")
	wr := m.WireOf("w_lane", Bits(wpos, nk-1, 0), "lane of the beat's first octet")
	var rots []Expr
	for r := 0; r < L; r++ {
		lanes := make([]Expr, L)
		for j := 0; j < L; j++ {
			src := (j - r + L) % L
			lanes[L-1-j] = Bits(tdata, 8*src+7, 8*src)
		}
		rots = append(rots, Cat(lanes...))
	}
	rotIn := m.WireOf("w_rotated", muxTree(selBits(wr, 0, nk), rots), "the beat rotated to stream lanes")
	wEnd := m.WireOf("w_end", Add(Cat(C(1, 0), wr), count), "lane just past the beat in the first entry (may pass W/8)")
	wIdx := m.WireOf("w_entry", Bits(wpos, nk+dk-1, nk), "ring entry of the first octet")
	ring := make([]*Signal, D)
	for e := 0; e < D; e++ {
		ring[e] = m.RegDecl(fmt.Sprintf("ring%d", e), width, fmt.Sprintf("aligned beats whose index is %d mod %d", e, D))
	}
	for e := 0; e < D; e++ {
		first := m.WireOf(fmt.Sprintf("ring%d_first", e), And(fire, Eq(wIdx, C(dk, uint64(e)))), "")
		second := m.WireOf(fmt.Sprintf("ring%d_second", e), And(fire, Eq(wIdx, C(dk, uint64((e-1+D)%D)))), "")
		lanes := make([]Expr, L)
		for j := 0; j < L; j++ {
			jj := C(nk+1, uint64(j))
			// first entry: wr <= j < wEnd; second entry: j + L < wEnd
			in1 := And(first, Lt(jj, wEnd))
			var in2 Expr = C(1, 0) // wEnd is at most 2*W/8-1
			if j < L-1 {
				in1 = And(in1, Not(Lt(jj, Cat(C(1, 0), wr))))
				in2 = And(second, Lt(Add(jj, C(nk+1, uint64(L))), wEnd))
			}
			lanes[L-1-j] = Sel(Or(in1, in2), Bits(rotIn, 8*j+7, 8*j), Bits(ring[e], 8*j+7, 8*j))
		}
		m.Drive(ring[e], nil, Cat(lanes...), nil)
	}
	wNext := m.WireOf("wpos_next", Sel(rst, cfgOff, Sel(fire, Add(wpos, Cat(C(32-nk-1, 0), count)), wpos)), "")
	m.Drive(wpos, nil, wNext, nil)
	m.Drive(fin, big.NewInt(0), C(1, 1), And(fire, tlast))
	return mpaRxRing{ring: ring, ringFull: ringFull, wNext: wNext}
}

// mpaRxFramer takes one piece of one FPDU per cycle (and, where an FPDU
// ends inside a beat, the next FPDU's first piece), shifts its ULPDU octets
// to their output lanes and writes whole output beats into the buffer.
func mpaRxFramer(m *Module, d mpaRxDims, io mpaRxIO, st mpaRxStream, rg mpaRxRing) mpaRxFramed {
	width, depth, L, nk, G, cw, D, dk := d.width, d.depth, d.L, d.nk, d.G, d.cw, d.D, d.dk
	rst, tvalid, cfgOff, cfgMk, cfgRev0 := io.rst, io.tvalid, io.cfgOff, io.cfgMk, io.cfgRev0
	wpos, rpos, fin, bHalt, halted := st.wpos, st.rpos, st.fin, st.bHalt, st.halted
	ring, ringFull, wNext := rg.ring, rg.ringFull, rg.wNext

	// --- the framer: one piece of one FPDU per cycle ---
	inF := m.RegDecl("f_in", 1, "inside an FPDU (its header has been taken)")
	fLen := m.RegDecl("f_len", 16, "ULPDU_Length")
	fLeft := m.RegDecl("f_left", 17, "body octets (no markers) of the FPDU not yet taken")
	fDone := m.RegDecl("f_done", 17, "body octets taken")
	fSh := m.RegDecl("f_shift", nk, "lanes ULPDU octets move down to their output lane")
	fAcc := m.RegDecl("f_acc", width-8, "output beat being filled (never its last lane)")
	fNAcc := m.RegDecl("f_acc_lanes", nk, "lanes of f_acc filled")
	fStart := m.RegDecl("f_start", 32, "stream offset of the FPDU")
	fHdr := m.RegDecl("f_hdr", 16, "stream offset of its ULPDU_Length (low bits)")
	fLead := m.RegDecl("f_lead", 1, "the FPDU opens with a marker")
	fMkBad := m.RegDecl("f_marker_bad", 1, "a marker of the FPDU has a wrong FPDUPTR")
	fCRCLo := m.RegDecl("f_crc_lo", nk, "first lane of the current aligned beat that the CRC covers")
	fFresh := m.RegDecl("f_crc_fresh", 1, "the FPDU's CRC has no beat yet")
	fEndPtr := m.RegDecl("f_end_ptr", cw, "buffer pointer just past the ULPDU, once written")
	wptr := m.RegDecl("buf_wptr", cw, "buffer write pointer")
	rptr := m.RegDecl("buf_rptr", cw, "buffer read pointer")

	starting := m.WireOf("b_starting", Not(inF), "the framer is at an FPDU's first octet")
	bIdx := m.WireOf("b_entry", Bits(rpos, nk+dk-1, nk), "ring entry of the framer's beat")
	ringCands := make([]Expr, D)
	for e := range ringCands {
		ringCands[e] = ring[e]
	}
	beat := m.WireOf("b_beat", muxTree(selBits(bIdx, 0, dk), ringCands), "the framer's aligned beat")
	a := m.WireOf("b_lane", Bits(rpos, nk-1, 0), "lane of the framer's position (a multiple of 4)")
	a1 := Cat(C(1, 0), a)
	avail := m.WireOf("b_avail", Sub(wpos, rpos), "octets received and not taken")
	availFull := m.WireOf("b_avail_full", Not(Lt(avail, Cat(C(31-nk, 0), Sub(C(nk+1, uint64(L)), a1)))), "the rest of the aligned beat has arrived")
	endAvail := m.WireOf("b_end_avail", Sel(availFull, C(nk+1, uint64(L)), Add(a1, Cat(C(1, 0), Bits(avail, nk-1, 2), C(2, 0)))), "lane just past the whole groups that have arrived")
	mkHere := m.WireOf("b_marker", And(cfgMk, Eq(Bits(rpos, 8, 0), C(9, 0))), "a marker is due at the framer's position")
	mk4 := m.WireOf("b_marker_lanes", Cat(C(nk-2, 0), mkHere, C(2, 0)), "4 when a marker is due")
	hdrLane := m.WireOf("b_hdr_lane", Add(a1, mk4), "lane of a starting FPDU's ULPDU_Length")
	var grpSel []Expr
	for b := 2; b < nk; b++ {
		grpSel = append(grpSel, Bit(hdrLane, b))
	}
	groups := make([]Expr, G)
	for g := range groups {
		groups[g] = Bits(beat, 32*g+15, 32*g) // the first two octets of each group
	}
	hdrGroup := m.WireOf("b_hdr_group", muxTree(grpSel, groups), "the octets at b_hdr_lane")
	pLen := m.WireOf("b_hdr_len", Cat(Bits(hdrGroup, 7, 0), Bits(hdrGroup, 15, 8)), "ULPDU_Length of a starting FPDU (big-endian)")
	hdrAvail := m.WireOf("b_hdr_avail", Not(Lt(endAvail, Add(hdrLane, C(nk+1, 4)))), "its header group has arrived")
	lenBad := m.WireOf("b_len_bad", Or(Eq(pLen, C(16, 0)), Lt(C(16, MPARxMaxULPDU), pLen)), "ULPDU_Length outside 1..64768")
	padded := And(Add(Cat(C(1, 0), pLen), C(17, 5)), C(17, 0x1FFFC))
	curLeft := m.WireOf("b_left", Sel(starting, Add(padded, C(17, 4)), fLeft), "body octets of the FPDU left")
	curDone := m.WireOf("b_done", Sel(starting, C(17, 0), fDone), "body octets taken")
	curLen := m.WireOf("b_len", Sel(starting, pLen, fLen), "")
	bodyLane := m.WireOf("b_body_lane", Add(a1, mk4), "first lane of the piece after a marker")
	maxBody := m.WireOf("b_max_body", Sub(endAvail, bodyLane), "body octets that have arrived in this beat")
	x17 := func(e Expr) Expr { return Cat(C(17-e.Width(), 0), e) }
	endsF := m.WireOf("b_ends", And(Not(Lt(endAvail, bodyLane)), Not(Lt(x17(maxBody), curLeft))), "the piece ends the FPDU")
	bodyP := m.WireOf("b_body", Sel(endsF, Bits(curLeft, nk, 0), maxBody), "body octets in the piece")
	e := m.WireOf("b_end", Add(bodyLane, bodyP), "lane just past the piece")
	nonEmpty := Lt(a1, endAvail)
	idle := m.WireOf("b_idle", Or(Not(tvalid), fin), "no more octets arrive next cycle")
	used := m.WireOf("buf_used", Sub(wptr, rptr), "buffer beats written and not yet read")
	bufRoom := m.WireOf("buf_room", Lt(used, C(cw, uint64(depth-1))), "two beats fit")
	ready := m.WireOf("b_ready", And(Not(halted), bufRoom), "")
	lenErr := m.WireOf("b_len_err", And(ready, starting, hdrAvail, lenBad), "report a length error")
	canGo := Sel(starting, And(hdrAvail, Not(lenBad)), nonEmpty)
	bGo := m.WireOf("b_go", And(ready, canGo, Or(endsF, Eq(endAvail, C(nk+1, uint64(L))), idle)), "take the piece")
	eosGo := m.WireOf("b_eos", And(Not(halted), fin, Not(Sel(starting, hdrAvail, nonEmpty))), "the stream has ended: report how")

	// ULPDU octets of the piece: body positions [done, done+body) within [2, 2+len).
	uEnd := m.WireOf("b_ulpdu_end", Add(Cat(C(1, 0), curLen), C(17, 2)), "body position just past the ULPDU")
	pEnd := Add(curDone, x17(bodyP))
	uS := m.WireOf("b_ulpdu_from", Sel(Lt(curDone, C(17, 2)), C(17, 2), curDone), "")
	uE := m.WireOf("b_ulpdu_to", Sel(Lt(pEnd, uEnd), pEnd, uEnd), "")
	uSpan := m.WireOf("b_ulpdu_span", Sub(Bits(uE, nk, 0), Bits(uS, nk, 0)), "at most W/8 when positive")
	k := m.WireOf("b_k", Sel(Lt(uS, uE), Bits(uSpan, nk, 0), C(nk+1, 0)), "ULPDU octets in the piece")
	ulpEnds := m.WireOf("b_ulpdu_ends", And(Lt(curDone, uEnd), Not(Lt(pEnd, uEnd))), "the ULPDU's last octet is in the piece")
	nAcc := m.WireOf("b_acc_lanes", Sel(starting, C(nk, 0), fNAcc), "")
	hdrData := m.WireOf("b_hdr_data_lane", Add(Bits(hdrLane, nk-1, 0), C(nk, 2)), "lane of a starting FPDU's first ULPDU octet")
	sh := m.WireOf("b_shift", Sel(starting, Bits(hdrData, nk-1, 0), Add(fSh, Bits(mk4, nk-1, 0))), "")
	var shSel []Expr
	for b := 2; b < nk; b++ {
		shSel = append(shSel, Bit(sh, b))
	}
	// shifts(n) are the beat's octets moved down by 4c+2 lanes, for each c,
	// as n lanes.
	shifts := func(n int) []Expr {
		cands := make([]Expr, G)
		for c := range cands {
			lanes := make([]Expr, n)
			for j := 0; j < n; j++ {
				src := (j + 4*c + 2) % L
				lanes[n-1-j] = Bits(beat, 8*src+7, 8*src)
			}
			cands[c] = Cat(lanes...)
		}
		return cands
	}
	shCands := shifts(L)
	rotated := m.WireOf("b_rotated", muxTree(shSel, shCands), "ULPDU octet u of the piece in lane u mod W/8")
	tot := m.WireOf("b_total", Add(Cat(C(1, 0), nAcc), k), "lanes filled after the piece")
	full := m.WireOf("b_full", Bit(tot, nk), "an output beat is complete")
	combLanes := make([]Expr, L-1)
	outLanes := make([]Expr, L)
	for j := 0; j < L; j++ {
		jj := C(nk, uint64(j))
		var c Expr = Bits(rotated, 8*j+7, 8*j) // f_acc never fills the last lane
		if j < L-1 {
			c = Sel(Lt(jj, nAcc), Bits(fAcc, 8*j+7, 8*j), c)
		}
		if j < L-1 {
			combLanes[L-2-j] = c
		}
		// A partial beat keeps only its filled lanes: the buffer holds zeros past the ULPDU's end.
		outLanes[L-1-j] = And(c, Rep(Or(full, Lt(C(nk+1, uint64(j)), tot)), 8))
	}
	comb := m.WireOf("b_combined", Cat(combLanes...), "f_acc and the piece, but the last lane")
	outBeat := m.WireOf("b_out", Cat(outLanes...), "")
	wr0 := m.WireOf("b_write", And(bGo, Or(full, ulpEnds)), "the piece writes a buffer beat")
	spill := m.WireOf("b_spill", And(ulpEnds, full, Ne(Bits(tot, nk-1, 0), C(nk, 0))), "the ULPDU ends with two beats to write")
	wr1 := m.WireOf("b_write_second", And(bGo, spill), "... and writes its last one too, into the other bank")
	spillLanes := make([]Expr, L)
	for j := 0; j < L; j++ {
		if j == L-1 {
			spillLanes[0] = C(8, 0) // at most W/8-1 lanes spill
			continue
		}
		spillLanes[L-1-j] = And(Bits(rotated, 8*j+7, 8*j), Rep(Lt(C(nk, uint64(j)), Bits(tot, nk-1, 0)), 8))
	}
	// f_len holds the length once the header is taken; a starting piece supplies it directly.
	word0 := m.WireOf("buf_word0", Cat(And(ulpEnds, Not(spill)), curLen, outBeat), "last, ULPDU_Length, data")
	word1 := m.WireOf("buf_word1", Cat(C(1, 1), curLen, Cat(spillLanes...)), "the ULPDU's last beat when it spills")
	endPtrNow := m.WireOf("b_end_ptr", Sel(ulpEnds, Add(wptr, Sel(spill, C(cw, 2), C(cw, 1))), fEndPtr), "buffer pointer just past the ULPDU")

	// Markers: FPDUPTR (low bits ignored) must be 0 for a leading marker,
	// else the distance back to ULPDU_Length; a Rev 0 peer may point at the
	// leading marker instead.
	ptr := m.WireOf("b_fpduptr", Cat(Bits(beat, 23, 16), Bits(beat, 31, 26), C(2, 0)), "FPDUPTR of a marker in lanes 0-3, low bits ignored")
	want := m.WireOf("b_fpduptr_want", Sub(Bits(rpos, 15, 0), fHdr), "")
	ptrOK := Sel(starting, Eq(ptr, C(16, 0)), Or(Eq(ptr, want), And(cfgRev0, fLead, Eq(ptr, Add(want, C(16, 4))))))
	mkBad := m.WireOf("b_marker_bad", Or(And(Not(starting), fMkBad), And(mkHere, Not(ptrOK))), "")

	// CRC: the covered lanes of the aligned beat once the FPDU's part of it is complete.
	crcLo := m.WireOf("b_crc_lo", Sel(starting, a, fCRCLo), "")
	crcUpd := m.WireOf("b_crc_update", And(bGo, Or(endsF, Eq(e, C(nk+1, uint64(L))))), "the CRC takes the beat")
	covLanes := make([]Expr, L)
	for j := 0; j < L; j++ {
		jj := C(nk+1, uint64(j))
		in := Lt(jj, e)
		if j < L-1 { // b_crc_lo is at most W/8-4
			in = And(Not(Lt(jj, Cat(C(1, 0), crcLo))), in)
		}
		covLanes[L-1-j] = gate(in, Bits(beat, 8*j+7, 8*j))
	}
	covered := m.WireOf("b_covered", Cat(covLanes...), "the FPDU's octets of the beat, others zero")
	fresh := m.WireOf("b_crc_fresh", Or(starting, fFresh), "the CRC starts from the initial value at lane b_crc_lo")

	// --- a second piece: the next FPDU's first octets in the beat where one ends ---
	// Taken in the same cycle when the rest of the beat has arrived, holds the
	// next FPDU's ULPDU_Length (a good one) and neither that FPDU nor its ULPDU
	// ends in the beat: then it writes nothing, and needs no marker (markers
	// sit in lane 0).
	var eSel []Expr
	for b := 2; b < nk; b++ {
		eSel = append(eSel, Bit(e, b))
	}
	nHdr := m.WireOf("n_hdr_group", muxTree(eSel, groups), "the octets at b_end")
	nLen := m.WireOf("n_len", Cat(Bits(nHdr, 7, 0), Bits(nHdr, 15, 8)), "ULPDU_Length of the next FPDU")
	nBody := m.WireOf("n_body", Sub(C(nk+1, uint64(L)), e), "octets of the beat from b_end on")
	dual := m.WireOf("n_take", And(bGo, endsF, Not(Bit(e, nk)), Eq(endAvail, C(nk+1, uint64(L))), Ne(nLen, C(16, 0)),
		Not(Lt(C(16, MPARxMaxULPDU), nLen)), Lt(x17(nBody), Add(Cat(C(1, 0), nLen), C(17, 2)))), "take the next FPDU's first piece too")
	nPadded := And(Add(Cat(C(1, 0), nLen), C(17, 5)), C(17, 0x1FFFC))
	nLeft := m.WireOf("n_left", Sub(Add(nPadded, C(17, 4)), x17(nBody)), "its body octets left after the piece")
	nShData := m.WireOf("n_shift_lane", Add(Bits(e, nk-1, 0), C(nk, 2)), "lane of its first ULPDU octet")
	var nShSel []Expr
	for b := 2; b < nk; b++ {
		nShSel = append(nShSel, Bit(nShData, b))
	}
	nRot := m.WireOf("n_rotated", muxTree(nShSel, shifts(L-1)), "its ULPDU octets in their output lanes (at most W/8-6 of them)")
	nK := m.WireOf("n_acc_lanes", Sub(Bits(nBody, nk-1, 0), C(nk, 2)), "its ULPDU octets in the beat")
	nCovLanes := make([]Expr, L)
	for j := 0; j < L; j++ {
		var in Expr = Not(Lt(C(nk+1, uint64(j)), e))
		if j < 4 {
			in = C(1, 0) // b_end is at least 4 when the second piece is taken
		}
		nCovLanes[L-1-j] = gate(in, Bits(beat, 8*j+7, 8*j))
	}
	nCovered := m.WireOf("n_covered", Cat(nCovLanes...), "its octets of the beat, others zero")

	// --- framer state ---
	eAdv := Sel(dual, C(nk+1, uint64(L)), e)
	advance := Add(rpos, Cat(C(32-nk-1, 0), Sub(eAdv, a1)))
	nStart := m.WireOf("n_start", Add(rpos, Cat(C(32-nk-1, 0), Sub(e, a1))), "stream offset of the next FPDU")
	rNext := m.WireOf("rpos_next", Sel(rst, cfgOff, Sel(bGo, advance, rpos)), "")
	m.Drive(rpos, nil, rNext, nil)
	heldNext := m.WireOf("ring_held_next", Sub(wNext, Cat(Bits(rNext, 31, nk), C(nk, 0))), "")
	m.Drive(ringFull, big.NewInt(0), Not(Lt(heldNext, C(32, uint64((D-1)*L+1)))), nil)
	m.Drive(inF, big.NewInt(0), Or(dual, Not(endsF)), bGo)
	m.Drive(fLen, nil, Sel(dual, nLen, curLen), bGo)
	m.Drive(fLeft, nil, Sel(dual, nLeft, Sub(curLeft, x17(bodyP))), bGo)
	m.Drive(fDone, nil, Sel(dual, x17(nBody), pEnd), bGo)
	m.Drive(fSh, nil, Sel(dual, nShData, sh), bGo)
	m.Drive(fAcc, nil, Sel(dual, nRot, Sel(full, Bits(rotated, width-9, 0), comb)), bGo)
	m.Drive(fNAcc, nil, Sel(dual, nK, Bits(tot, nk-1, 0)), bGo)
	opens := And(bGo, Or(starting, dual))
	m.Drive(fStart, nil, Sel(dual, nStart, rpos), opens)
	m.Drive(fHdr, nil, Sel(dual, Bits(nStart, 15, 0), Add(Bits(rpos, 15, 0), Cat(C(16-nk-1, 0), mk4))), opens)
	m.Drive(fLead, nil, And(Not(dual), mkHere), opens)
	m.Drive(fMkBad, nil, And(Not(dual), mkBad), bGo)
	m.Drive(fCRCLo, nil, Sel(Or(dual, Eq(e, C(nk+1, uint64(L)))), C(nk, 0), crcLo), bGo)
	m.Drive(fFresh, nil, And(Not(dual), fresh, Not(crcUpd)), bGo)
	m.Drive(fEndPtr, nil, endPtrNow, bGo)
	m.Drive(wptr, big.NewInt(0), Add(wptr, Sel(wr1, C(cw, 2), C(cw, 1))), wr0)
	m.Drive(bHalt, big.NewInt(0), C(1, 1), Or(lenErr, eosGo))
	return mpaRxFramed{crcUpd: crcUpd, lenErr: lenErr, eosGo: eosGo, endsF: endsF, starting: starting, inF: inF,
		avail: avail, e: e, crcLo: crcLo, fresh: fresh, dual: dual, mkBad: mkBad, endPtrNow: endPtrNow,
		covered: covered, nCovered: nCovered, fStart: fStart, wptr: wptr, rptr: rptr, wr0: wr0, wr1: wr1, word0: word0, word1: word1}
}

// mpaRxCheck runs the CRC over each FPDU's covered octets (the register
// corrected for the lanes past the FPDU's end, then compared with the
// residue) alongside the marker and length checks, and turns each FPDU's
// verdict into a commit of its ULPDU or a sticky error; it returns the
// buffer pointer just past the last good ULPDU.
func mpaRxCheck(m *Module, d mpaRxDims, io mpaRxIO, st mpaRxStream, fr mpaRxFramed) (*Signal, error) {
	width, L, nk, gk, G, cw, stages := d.width, d.L, d.nk, d.gk, d.G, d.cw, d.stages
	cfgCRC, errValid, errKind, errCode, errOff, eos := io.cfgCRC, io.errValid, io.errKind, io.errCode, io.errOff, io.eos
	rpos, vErr := st.rpos, st.vErr
	crcUpd, lenErr, eosGo, endsF, starting, inF, avail, e, crcLo, fresh := fr.crcUpd, fr.lenErr, fr.eosGo, fr.endsF, fr.starting, fr.inF, fr.avail, fr.e, fr.crcLo, fr.fresh
	dual, mkBad, endPtrNow, covered, nCovered, fStart := fr.dual, fr.mkBad, fr.endPtrNow, fr.covered, fr.nCovered, fr.fStart

	// --- CRC pipeline: every entry takes the same path, so verdicts stay in stream order ---
	// kinds: 0 FPDU end or a mid-FPDU beat, 1 length error, 2 end of stream
	ent := m.WireOf("c_enter", Or(crcUpd, lenErr, eosGo), "")
	kindIn := Sel(lenErr, C(2, 1), Sel(eosGo, C(2, 2), C(2, 0)))
	offIn := Sel(starting, rpos, fStart)
	truncIn := Or(inF, Ne(avail, C(32, 0)))
	var padExpr Expr = Bit(e, 2) // -x mod 2 is x
	if gk > 1 {
		padExpr = Sub(C(gk, 0), Bits(e, nk-1, 2))
	}
	padIn := m.WireOf("c_pad_in", padExpr, "4-octet groups of the beat past the FPDU's end: (W/8 - b_end)/4 mod W/32")
	loIn := m.WireOf("c_lo_in", Bits(crcLo, nk-1, 2), "b_crc_lo in groups")
	type ctl struct{ valid, upd, fresh, lo, dual, nlo, end, pad, kind, crc, mk, off, trunc, ptr *Signal }
	reg := func(p string, en Expr, from ctl) ctl {
		// The register-update fields stop at c2: later stages leave them nil.
		opt := func(name string, s *Signal, reset *big.Int, en Expr) *Signal {
			if s == nil {
				return nil
			}
			return m.Reg(p+"_"+name, s.W, reset, s, en, "")
		}
		return ctl{
			valid: m.Reg(p+"_valid", 1, big.NewInt(0), from.valid, nil, ""),
			upd:   opt("upd", from.upd, big.NewInt(0), nil),
			fresh: opt("fresh", from.fresh, nil, en),
			lo:    opt("lo", from.lo, nil, en),
			dual:  opt("next", from.dual, nil, en),
			nlo:   opt("next_lo", from.nlo, nil, en),
			pad:   opt("pad", from.pad, nil, en),
			end:   m.Reg(p+"_end", 1, nil, from.end, en, ""),
			kind:  m.Reg(p+"_kind", 2, nil, from.kind, en, ""),
			crc:   m.Reg(p+"_crc_on", 1, nil, from.crc, en, ""),
			mk:    m.Reg(p+"_marker_bad", 1, nil, from.mk, en, ""),
			off:   m.Reg(p+"_offset", 32, nil, from.off, en, ""),
			trunc: m.Reg(p+"_trunc", 1, nil, from.trunc, en, ""),
			ptr:   m.Reg(p+"_end_ptr", cw, nil, from.ptr, en, ""),
		}
	}
	in := ctl{
		valid: ent, upd: crcUpd, fresh: fresh, lo: loIn, dual: dual, nlo: m.WireOf("c_next_lo_in", Bits(e, nk-1, 2), "first group of the next FPDU"),
		end:  m.WireOf("c_in_end", Or(And(crcUpd, endsF), lenErr, eosGo), "the entry carries a verdict"),
		pad:  padIn,
		kind: m.WireOf("c_in_kind", kindIn, ""), crc: cfgCRC, mk: mkBad,
		off: m.WireOf("c_in_offset", offIn, ""), trunc: m.WireOf("c_in_trunc", truncIn, ""), ptr: endPtrNow,
	}
	// After reset the pipeline's contents are dropped: valid bits reset.
	c1 := reg("c1", ent, in)
	c1Data := m.Reg("c1_data", width, nil, covered, crcUpd, "")
	c1NData := m.Reg("c1_next_data", width, nil, nCovered, dual, "the next FPDU's octets when a second piece was taken")
	dataRows, stateRows := CRC32CUpdate(L).Split()
	term := m.WireOf("c1_term", MatVec(c1Data, dataRows), "the beat's contribution to the CRC register")
	c2 := reg("c2", c1.valid, c1)
	c2Term := m.Reg("c2_term", 32, nil, term, c1.valid, "")
	c2NTerm := m.Reg("c2_next_term", 32, nil, m.WireOf("c1_next_term", MatVec(c1NData, dataRows), ""), And(c1.valid, c1.dual), "")
	// The register starts at Z^-lo(0xFFFFFFFF), so the zero lanes before the
	// FPDU's first octet leave it at 0xFFFFFFFF.
	zinv, ok := ZeroByteMatrix().Inverse()
	if !ok {
		return nil, fmt.Errorf("%w: CRC32c zero-byte matrix is singular", ErrInvalid)
	}
	inits := make([]Expr, G)
	for g := range inits {
		inits[g] = C(32, uint64(zinv.Pow(4*g).Apply(0xFFFFFFFF)))
	}
	var loSel []Expr
	for b := 0; b < gk; b++ {
		loSel = append(loSel, Bit(c2.lo, b))
	}
	state := m.RegDecl("crc_state", 32, "CRC register of the FPDU")
	init := m.WireOf("crc_init", muxTree(loSel, inits), "")
	from := m.WireOf("crc_from", Sel(c2.fresh, init, state), "")
	next := m.WireOf("crc_next", Xor(c2Term, MatVec(from, stateRows)), "register after c2's beat")
	// A second piece starts the next FPDU's register from Z^-lo(0xFFFFFFFF)
	// through a whole beat: a constant per lo, then its data term.
	upd := CRC32CUpdate(L)
	starts := make([]Expr, G)
	for g := range starts {
		starts[g] = C(32, uint64(upd.Apply(zinv.Pow(4*g).Apply(0xFFFFFFFF), make([]byte, L))))
	}
	var nloSel []Expr
	for b := 0; b < gk; b++ {
		nloSel = append(nloSel, Bit(c2.nlo, b))
	}
	nState := m.WireOf("crc_next_fpdu", Xor(c2NTerm, muxTree(nloSel, starts)), "the next FPDU's register after its first piece")
	m.Drive(state, nil, Sel(c2.dual, nState, next), And(c2.valid, c2.upd))
	zinvParam := zinvParams(m, zinv)
	cur := c2
	cur.upd, cur.fresh, cur.lo, cur.pad, cur.dual, cur.nlo = nil, nil, nil, nil, nil, nil // the register update is done
	crc := next
	pad := c2.pad
	for s := 0; s < stages; s++ {
		p := fmt.Sprintf("c%d", 3+s)
		nCur := reg(p, cur.valid, cur)
		nCRC := m.Reg(p+"_reg", 32, nil, crc, cur.valid, "CRC register, corrected so far")
		nPad := m.Reg(p+"_pad_rest", pad.W, nil, pad, cur.valid, "pad-group bits not yet applied")
		lo := s * crcFixBits
		n := min(crcFixBits, gk-lo)
		// bit b of the group count stands for 4*2^b lanes: Z^-(v << (lo+2))
		crc = crcFix(m, p, nCRC, nPad, lo+2, n, zinvParam)
		cur = nCur
		if s+1 < stages {
			pad = m.WireOf(p+"_pad_next", Bits(nPad, nPad.W-1, n), "")
		}
	}
	good := m.WireOf("v_crc_good", Eq(crc, C(32, CRC32CResidue)), "residue check")
	vIn := m.WireOf("v_in", And(cur.valid, cur.end, Not(vErr)), "a verdict this cycle")
	isF := Eq(cur.kind, C(2, 0))
	crcBad := And(isF, cur.crc, Not(good))
	markBad := And(isF, cur.mk)
	lenE := Eq(cur.kind, C(2, 1))
	truncE := And(Eq(cur.kind, C(2, 2)), cur.trunc)
	kindV := Sel(crcBad, C(3, 1), Sel(markBad, C(3, 2), Sel(lenE, C(3, 3), C(3, 6))))
	codeV := Sel(crcBad, C(3, 2), Sel(Or(markBad, lenE), C(3, 3), C(3, 1)))
	isErr := m.WireOf("v_is_err", Or(crcBad, markBad, lenE, truncE), "")
	commit := m.WireOf("v_commit", And(vIn, isF, Not(isErr)), "the ULPDU may be read")
	m.Drive(vErr, big.NewInt(0), C(1, 1), And(vIn, isErr))
	eKind := m.Reg("v_err_kind", 3, big.NewInt(0), kindV, And(vIn, isErr), "")
	eCode := m.Reg("v_err_code", 3, big.NewInt(0), codeV, And(vIn, isErr), "")
	eOff := m.Reg("v_err_offset", 32, big.NewInt(0), cur.off, And(vIn, isErr), "")
	eos1 := m.Reg("v_eos", 1, big.NewInt(0), C(1, 1), And(vIn, Eq(cur.kind, C(2, 2)), Not(cur.trunc)), "")
	commitPtr := m.Reg("buf_commit", cw, big.NewInt(0), cur.ptr, commit, "buffer pointer just past the last good ULPDU")
	m.Assign(errValid, vErr)
	m.Assign(errKind, eKind)
	m.Assign(errCode, eCode)
	m.Assign(errOff, eOff)
	m.Assign(eos, eos1)
	return commitPtr, nil
}

// mpaRxReader moves committed beats out of the buffer's two banks to
// m_axis through a 2-entry queue.
func mpaRxReader(m *Module, d mpaRxDims, io mpaRxIO, fr mpaRxFramed, commitPtr *Signal) {
	width, depth, L, nk, ck, cw := d.width, d.depth, d.L, d.nk, d.ck, d.cw
	mData, mKeep, mValid, mReady, mLast, mLen := io.mData, io.mKeep, io.mValid, io.mReady, io.mLast, io.mLen
	wptr, rptr, wr0, wr1, word0, word1 := fr.wptr, fr.rptr, fr.wr0, fr.wr1, fr.word0, fr.word1

	// --- the buffer and the reader: committed beats to m_axis through a 2-entry queue ---
	rdPending := m.RegDecl("o_reading", 1, "a buffer read is under way")
	popW := m.Wire("o_pop", 2, "the head beat is taken")
	memW := 1 + 16 + width
	rdGo := m.Wire("o_read", 1, "issue a buffer read")
	// Two banks, even and odd beats, so that a ULPDU's last two beats can
	// be written in one cycle; reads take one bank at a time.
	bank0 := m.WireOf("buf_bank", Bit(wptr, 0), "bank of buf_wptr")
	rowA := m.WireOf("buf_row0", Bits(wptr, ck-1, 1), "row of buf_wptr")
	rowB := m.WireOf("buf_row1", Add(rowA, Cat(C(ck-2, 0), bank0)), "row of buf_wptr+1")
	rdRow := m.WireOf("buf_rd_row", Bits(rptr, ck-1, 1), "")
	var rds [2]*Signal
	for b := 0; b < 2; b++ {
		mine := Eq(bank0, C(1, uint64(b)))
		en := Or(And(wr0, mine), And(wr1, Not(mine)))
		rds[b] = m.Mem(fmt.Sprintf("ulpdu_buf%d", b), memW, depth/2, en, Sel(mine, rowA, rowB), Sel(mine, word0, word1),
			And(rdGo, Eq(Bit(rptr, 0), C(1, uint64(b)))), rdRow, fmt.Sprintf("ULPDU beats with buffer index %d mod 2: last, ULPDU_Length, data", b))
	}
	rdBank := m.Reg("o_read_bank", 1, nil, Bit(rptr, 0), rdGo, "bank of the read under way")
	rdData := m.WireOf("o_read_data", Sel(rdBank, rds[1], rds[0]), "")
	q := ShiftQueue(m, "o_q", 2, []string{"word"}, []int{memW}, rdPending, []Expr{rdData}, popW)
	hv := m.WireOf("o_valid", Ne(q.Count, C(2, 0)), "")
	pop := And(hv, mReady)
	m.Assign(popW, Cat(C(1, 0), pop))
	space := Lt(Add(Cat(C(1, 0), q.Count), Cat(C(2, 0), rdPending)), Add(C(3, 2), Cat(C(2, 0), pop)))
	m.Assign(rdGo, And(Ne(rptr, commitPtr), space))
	m.Drive(rptr, big.NewInt(0), Add(rptr, C(cw, 1)), rdGo)
	m.Drive(rdPending, big.NewInt(0), rdGo, nil)
	head := q.Fields[0][0]
	hLast := Bit(head, memW-1)
	hLen := Bits(head, memW-2, width)
	hLenLow := m.WireOf("o_len_low", Bits(head, width+nk-1, width), "")
	lastLanes := m.WireOf("o_last_lanes", Sub(hLenLow, C(nk, 1)), "index of the last lane of a last beat: (length - 1) mod W/8")
	keep := make([]Expr, L)
	for j := 0; j < L; j++ {
		if j == 0 {
			keep[L-1] = hv
			continue
		}
		keep[L-1-j] = And(hv, Or(Not(hLast), Not(Lt(lastLanes, C(nk, uint64(j))))))
	}
	m.Assign(mData, gate(hv, Bits(head, width-1, 0)))
	m.Assign(mKeep, Cat(keep...))
	m.Assign(mValid, hv)
	m.Assign(mLast, And(hv, hLast))
	m.Assign(mLen, gate(hv, hLen))
}
