package gen

import (
	"fmt"
	"math/big"
)

// DMARdWidths lists the data widths the project ships for dma_rd.
var DMARdWidths = []int{64, 128, 256, 512}

// DMARdConfig sizes one DMA read engine.
type DMARdConfig struct {
	Width    int // data width in bits: 64 to 512, a power of two
	IDBits   int // AXI ID bits: 2^IDBits bursts in flight at most
	ROBBeats int // reorder buffer depth in beats (a power of two)
	TagBits  int // request tag bits
}

// DMARdDefault is the shipped configuration: 64 bursts in flight (one
// 64-byte read every 4 cycles at a 250-cycle latency) and a 512-beat
// reorder buffer (250 beats in flight at one beat per cycle, twice over).
func DMARdDefault(width int) DMARdConfig {
	return DMARdConfig{Width: width, IDBits: 6, ROBBeats: 512, TagBits: 8}
}

// DMAMaxBurst is the largest burst dma_rd and dma_wr issue at a width, in
// bytes: 4 KiB, or 256 beats when that is less.
func DMAMaxBurst(width int) int { return min(4096, 256*width/8) }

// DMARdOutQueue is the depth of dma_rd's output queue.
const DMARdOutQueue = 4

// DMARd builds dma_rd_w<width>: requests (address, length, tag) in; AXI4
// bursts out; each request's bytes out in order, from lane 0.
func DMARd(cfg DMARdConfig) (*Module, error) {
	W := cfg.Width
	if W < 64 || W > 512 || W&(W-1) != 0 {
		return nil, fmt.Errorf("%w: dma_rd data width %d (a power of two from 64 to 512)", ErrInvalid, W)
	}
	if cfg.IDBits < 1 || cfg.IDBits > 8 || cfg.TagBits < 1 || cfg.TagBits > 32 ||
		cfg.ROBBeats < 2*DMAMaxBurst(W)/(W/8) || cfg.ROBBeats&(cfg.ROBBeats-1) != 0 || cfg.ROBBeats > 1<<14 {
		return nil, fmt.Errorf("%w: dma_rd IDs %d bits, tags %d bits, reorder buffer %d beats", ErrInvalid, cfg.IDBits, cfg.TagBits, cfg.ROBBeats)
	}
	L := W / 8
	LB := log2(L)
	BB := DMAMaxBurst(W) / L // beats per largest burst
	BBB := log2(BB)
	N := 1 << cfg.IDBits
	IDW := cfg.IDBits
	R := cfg.ROBBeats
	RB := log2(R)
	T := cfg.TagBits
	NI := 18 - LB // input beats of a request: up to 2^(17-LB)
	m := NewModule(fmt.Sprintf("dma_rd_w%d", W), "AMBA AXI4 (read channels: INCR bursts, IDs, no 4 KiB crossing); AXI4-Stream",
		fmt.Sprintf("DMA read engine, %d-bit data: each request (host address, length 1..65536 bytes, tag) becomes AXI4 INCR bursts of whole %d-byte beats (arsize %d) that never cross a 4 KiB boundary and are at most %d bytes; the request's bytes come out in order on m_axis from lane 0, whatever the address's alignment, with the tag on every beat.", W, L, LB, BB*L),
		fmt.Sprintf("Reordering: every burst in flight has its own ID (up to %d, given in order and reused once the burst has been delivered), so responses of different bursts may come back in any order and interleaved; each burst's beats land in a %d-beat reorder buffer at the place reserved for it when it was issued, so m_axi_rready is always 1. A burst is issued once its ID and its room are free; the buffer drains in issue order.", N, R),
		"Errors: a burst answered SLVERR or DECERR (rresp bit 1) marks its request: m_axis_tuser_err is 1 on the request's last beat; the beats still come out (their data is whatever the slave returned). rlast is not checked: a burst ends after arlen+1 beats of its ID.",
		fmt.Sprintf("Timing: s_req_ready is high while no request is being split, or in the cycle the last burst of the current one is issued; one burst can be issued per cycle, ar* registered (they stay until arready). A response beat written in cycle t can be read out of the buffer in cycle t+1 and reaches m_axis in cycle t+3 at the earliest. The read-out issues one beat per cycle while the %d-entry output queue has room for it and the beat in realignment; a request whose address is not aligned and whose last input beat holds no byte of its own last output beat costs one extra cycle. Reset clears everything: assert it only with the AXI slave reset too (no response outstanding).", DMARdOutQueue),
		"Outputs that belong to a valid (ar*, m_axis_*) read zero while it is low.",
	)
	m.Clock()
	m.ResetPort()
	reqValid := m.Input("s_req_valid", 1, "a read request")
	reqReady := m.Output("s_req_ready", 1, "")
	reqAddr := m.Input("s_req_addr", 64, "host byte address")
	reqLen := m.Input("s_req_len", 16, "length in bytes minus one (0..65535: 1 byte to 64 KiB)")
	reqTag := m.Input("s_req_tag", T, "returned with the request's bytes")
	arID := m.Output("m_axi_arid", IDW, "")
	arAddr := m.Output("m_axi_araddr", 64, "beat aligned")
	arLen := m.Output("m_axi_arlen", 8, "beats minus one")
	arSize := m.Output("m_axi_arsize", 3, fmt.Sprintf("%d: %d bytes per beat", LB, L))
	arBurst := m.Output("m_axi_arburst", 2, "1: INCR")
	arValid := m.Output("m_axi_arvalid", 1, "")
	arReady := m.Input("m_axi_arready", 1, "")
	rID := m.Input("m_axi_rid", IDW, "")
	rData := m.Input("m_axi_rdata", W, "")
	rResp := m.Input("m_axi_rresp", 2, "bit 1 set: SLVERR or DECERR")
	rLast := m.Input("m_axi_rlast", 1, "not used (bursts are counted)")
	rValid := m.Input("m_axi_rvalid", 1, "")
	rReady := m.Output("m_axi_rready", 1, "always 1: buffer room is reserved per burst")
	oData := m.Output("m_axis_tdata", W, "request bytes, lane 0 first")
	oKeep := m.Output("m_axis_tkeep", L, "all lanes but on a request's last beat")
	oValid := m.Output("m_axis_tvalid", 1, "")
	oReady := m.Input("m_axis_tready", 1, "")
	oLast := m.Output("m_axis_tlast", 1, "a request's last beat")
	oTag := m.Output("m_axis_tuser_tag", T, "the request's tag, every beat")
	oErr := m.Output("m_axis_tuser_err", 1, "on the last beat: a burst of the request got an error response")

	one, zero := C(1, 1), C(1, 0)
	var unused []Expr
	unused = append(unused, rLast, Bit(rResp, 0))

	// The request being split.
	reqV := m.RegDecl("req_v", 1, "a request is being split")
	curA := m.RegDecl("req_beat", 64-LB, "its next beat address (address / bytes per beat)")
	remIn := m.RegDecl("req_rem", NI, "its input beats not yet issued")
	rTag := m.RegDecl("req_tag", T, "")
	rO := m.RegDecl("req_off", LB, "its address's offset in the first beat")
	rFlush := m.RegDecl("req_flush", 1, "its last output beat needs a flush cycle")
	rLkb := m.RegDecl("req_lkb", LB+1, "bytes of its last output beat (1..lanes)")
	rFirst := m.RegDecl("req_first", 1, "the next burst is its first")
	accept := m.WireOf("req_accept", And(reqValid, reqReady), "a request is taken")
	off := m.WireOf("new_off", Bits(reqAddr, LB-1, 0), "")
	span := m.WireOf("new_span", Add(zext(off, 17), zext(reqLen, 17)), "offset + length - 1")
	nin := m.WireOf("new_nin", Add(zext(Bits(span, 16, LB), NI), C(NI, 1)), "input beats")
	flush := m.WireOf("new_flush", And(RedOr(off), Eq(Bits(span, 16, LB), zext(Bits(reqLen, 15, LB), 17-LB))), "output beats = input beats with an offset")
	unused = append(unused, Bits(span, LB-1, 0))
	lkb := m.WireOf("new_lkb", Add(zext(Bits(reqLen, LB-1, 0), LB+1), C(LB+1, 1)), "")

	wib := m.WireOf("burst_wib", Bits(curA, BBB-1, 0), "beat index in the largest-burst window")
	toB := m.WireOf("burst_to_edge", Sub(C(BBB+1, uint64(BB)), zext(wib, BBB+1)), "beats to the window's end")
	lastBurst := m.WireOf("burst_last", Not(Lt(zext(toB, NI), remIn)), "the request's rest fits")
	beats := m.WireOf("burst_beats", Sel(lastBurst, Bits(remIn, BBB, 0), toB), "beats of the next burst")
	blenM1 := m.WireOf("burst_len_m1", Sub(beats, C(BBB+1, 1)), "")

	issued := m.RegDecl("ids_issued", IDW+1, "bursts issued (mod 2N)")
	retired := m.RegDecl("ids_retired", IDW+1, "bursts delivered (mod 2N)")
	outst := m.WireOf("ids_out", Sub(issued, retired), "bursts in flight")
	idFree := m.WireOf("id_free", Not(Bit(outst, IDW)), "fewer than 2^IDBits in flight")
	alloc := m.RegDecl("rob_alloc", RB+1, "buffer beats reserved (mod 2R)")
	drain := m.RegDecl("rob_drain", RB+1, "buffer beats read out (mod 2R)")
	used := m.WireOf("rob_used", Sub(alloc, drain), "")
	need := m.WireOf("rob_need", Add(zext(used, RB+2), zext(beats, RB+2)), "")
	room := m.WireOf("rob_room", Not(Lt(C(RB+2, uint64(R)), need)), "the burst fits")

	arV := m.RegDecl("ar_v", 1, "")
	arFree := m.WireOf("ar_free", Or(Not(arV), arReady), "")
	goB := m.WireOf("burst_go", And(reqV, arFree, idFree, room), "a burst is issued")
	nid := m.WireOf("burst_id", Bits(issued, IDW-1, 0), "")
	m.Assign(reqReady, Or(Not(reqV), And(goB, lastBurst)))
	m.Drive(reqV, big.NewInt(0), Or(accept, And(reqV, Not(And(goB, lastBurst)))), nil)
	m.Drive(curA, nil, Sel(accept, Bits(reqAddr, 63, LB), Add(curA, zext(beats, 64-LB))), Or(accept, goB))
	m.Drive(remIn, nil, Sel(accept, nin, Sub(remIn, zext(beats, NI))), Or(accept, goB))
	m.Drive(rTag, nil, reqTag, accept)
	m.Drive(rO, nil, off, accept)
	m.Drive(rFlush, nil, flush, accept)
	m.Drive(rLkb, nil, lkb, accept)
	m.Drive(rFirst, nil, accept, Or(accept, goB))
	m.Drive(issued, big.NewInt(0), Add(issued, zext(goB, IDW+1)), nil)
	m.Drive(alloc, big.NewInt(0), Add(alloc, zext(Sel(goB, beats, C(BBB+1, 0)), RB+1)), nil)
	m.Drive(arV, big.NewInt(0), Or(goB, And(arV, Not(arReady))), nil)
	arIDq := m.Reg("ar_id", IDW, big.NewInt(0), nid, goB, "")
	arAq := m.Reg("ar_addr", 64-LB, big.NewInt(0), curA, goB, "")
	arLq := m.Reg("ar_len", 8, big.NewInt(0), zext(Bits(blenM1, BBB-1, 0), 8), goB, "")
	m.Assign(arValid, arV)
	m.Assign(arID, gate(arV, arIDq))
	m.Assign(arAddr, gate(arV, Cat(arAq, C(LB, 0))))
	m.Assign(arLen, gate(arV, arLq))
	m.Assign(arSize, gate(arV, C(3, uint64(LB))))
	m.Assign(arBurst, Cat(zero, arV))

	// Per-ID burst table: meta (written when issued), received count, error.
	// meta = {base, blen-1, first, last, tag, off, flush, lkb}
	MW := RB + BBB + 2 + T + LB + 1 + LB + 1
	metaNew := m.WireOf("meta_new", Cat(Bits(alloc, RB-1, 0), Bits(blenM1, BBB-1, 0), rFirst, lastBurst, rTag, rO, rFlush, rLkb), "")
	rBeat := m.WireOf("r_beat", rValid, "a response beat")
	m.Assign(rReady, one)
	var metas, cnts, errs []Expr
	for i := 0; i < N; i++ {
		here := m.WireOf(fmt.Sprintf("id%d_go", i), And(goB, Eq(nid, C(IDW, uint64(i)))), "")
		hit := m.WireOf(fmt.Sprintf("id%d_r", i), And(rBeat, Eq(rID, C(IDW, uint64(i)))), "")
		metas = append(metas, m.Reg(fmt.Sprintf("id%d_meta", i), MW, nil, metaNew, here, ""))
		cnt := m.RegDecl(fmt.Sprintf("id%d_cnt", i), BBB+1, "beats received")
		m.Drive(cnt, big.NewInt(0), Sel(here, C(BBB+1, 0), Add(cnt, C(BBB+1, 1))), Or(here, hit))
		e := m.RegDecl(fmt.Sprintf("id%d_err", i), 1, "an error response")
		m.Drive(e, big.NewInt(0), And(Not(here), Or(e, Bit(rResp, 1))), Or(here, hit))
		cnts, errs = append(cnts, cnt), append(errs, e)
	}
	idxBits := func(s *Signal) []Expr { return selBits(s, 0, IDW) }
	rMeta := m.WireOf("r_meta", muxTree(idxBits(rID), metas), "meta of the beat's burst")
	rCnt := m.WireOf("r_cnt", muxTree(idxBits(rID), cnts), "")
	wAddr := m.WireOf("rob_waddr", Add(Bits(rMeta, MW-1, MW-RB), fit(rCnt, RB)), "")
	unused = append(unused, Bits(rMeta, MW-RB-1, 0))
	if BBB+1 > RB {
		unused = append(unused, Bits(rCnt, BBB, RB))
	}

	// Read-out in issue order.
	h := m.WireOf("head_id", Bits(retired, IDW-1, 0), "")
	hMeta := m.WireOf("head_meta", muxTree(idxBits(h), metas), "")
	hCnt := m.WireOf("head_cnt", muxTree(idxBits(h), cnts), "")
	hErr := m.WireOf("head_err", muxTree(idxBits(h), errs), "")
	p := MW
	field := func(w int) Expr { p -= w; return Bits(hMeta, p+w-1, p) }
	hBase, hBlen, hFirst, hLast, hTag, hO, hFlush, hLkb := field(RB), field(BBB), field(1), field(1), field(T), field(LB), field(1), field(LB+1)
	hasHead := m.WireOf("head_any", RedOr(outst), "")
	j := m.RegDecl("head_beat", BBB, "next beat of the head burst")
	flushing := m.RegDecl("flush_next", 1, "the next slot is a flush")
	reqErr := m.RegDecl("req_err", 1, "earlier bursts of the request being read out had errors")
	fTag := m.RegDecl("flush_tag", T, "")
	fO := m.RegDecl("flush_off", LB, "")
	fLkb := m.RegDecl("flush_lkb", LB+1, "")
	fErr := m.RegDecl("flush_err", 1, "")
	qCount := m.Wire("q_count", addrWidth(DMARdOutQueue+1), "")
	s1v := m.RegDecl("s1_v", 1, "a slot is in realignment")
	credit := m.WireOf("credit", Lt(Add(zext(qCount, 4), zext(s1v, 4)), C(4, DMARdOutQueue)), "room for another beat")
	flushSlot := m.WireOf("slot_flush", And(flushing, credit), "")
	readSlot := m.WireOf("slot_read", And(Not(flushing), hasHead, Lt(zext(j, BBB+1), hCnt), credit), "")
	endBurst := m.WireOf("slot_burst_end", Eq(j, hBlen), "")
	firstIn := m.WireOf("slot_first", And(hFirst, Eq(j, C(BBB, 0))), "")
	lastIn := m.WireOf("slot_last", And(hLast, endBurst), "")
	errNow := m.WireOf("slot_err", Or(reqErr, hErr), "")
	m.Drive(j, big.NewInt(0), Sel(endBurst, C(BBB, 0), Add(j, C(BBB, 1))), readSlot)
	m.Drive(retired, big.NewInt(0), Add(retired, zext(And(readSlot, endBurst), IDW+1)), nil)
	m.Drive(drain, big.NewInt(0), Add(drain, zext(readSlot, RB+1)), nil)
	m.Drive(reqErr, big.NewInt(0), And(Not(hLast), errNow), And(readSlot, endBurst))
	startFlush := m.WireOf("flush_start", And(readSlot, lastIn, hFlush), "")
	m.Drive(flushing, big.NewInt(0), Or(startFlush, And(flushing, Not(flushSlot))), nil)
	m.Drive(fTag, nil, hTag, startFlush)
	m.Drive(fO, nil, hO, startFlush)
	m.Drive(fLkb, nil, hLkb, startFlush)
	m.Drive(fErr, nil, errNow, startFlush)
	robRd := m.Mem("rob", W, R, rBeat, wAddr, rData, readSlot, Add(hBase, fit(j, RB)), "reorder buffer")

	// Realignment stage.
	m.Drive(s1v, big.NewInt(0), Or(readSlot, flushSlot), nil)
	s1Flush := m.Reg("s1_flush", 1, big.NewInt(0), flushSlot, nil, "")
	s1First := m.Reg("s1_first", 1, big.NewInt(0), And(readSlot, firstIn), nil, "")
	s1Last := m.Reg("s1_last", 1, big.NewInt(0), Or(flushSlot, And(readSlot, lastIn, Not(hFlush))), nil, "")
	s1O := m.Reg("s1_off", LB, big.NewInt(0), Sel(flushing, fO, hO), nil, "")
	s1Tag := m.Reg("s1_tag", T, big.NewInt(0), Sel(flushing, fTag, hTag), nil, "")
	s1Lkb := m.Reg("s1_lkb", LB+1, big.NewInt(0), Sel(flushing, fLkb, hLkb), nil, "")
	s1Err := m.Reg("s1_err", 1, big.NewInt(0), Sel(flushing, fErr, errNow), nil, "")
	amt := m.WireOf("rot_amt", Sub(C(LB, 0), s1O), "rotate up by lanes - offset")
	rot := rotateLanes(m, "rot", robRd, amt, 8)
	prev := m.Reg("prev_rot", W, nil, rot, And(s1v, Not(s1Flush)), "the previous input beat, rotated")
	lim := m.WireOf("prev_lanes", Sub(C(LB+1, uint64(L)), zext(s1O, LB+1)), "lanes taken from the previous beat")
	lowM, keepM := make([]Expr, L), make([]Expr, L)
	for i := 0; i < L; i++ {
		lowM[L-1-i] = Lt(C(LB+1, uint64(i)), lim)
		keepM[L-1-i] = Or(Not(s1Last), Lt(C(LB+1, uint64(i)), s1Lkb))
	}
	low := m.WireOf("prev_mask", Cat(lowM...), "")
	keep := m.WireOf("out_keep", Cat(keepM...), "")
	aligned := m.WireOf("out_aligned", Eq(s1O, C(LB, 0)), "")
	lowE := m.WireOf("prev_mask_bits", expand(low), "")
	cur := m.WireOf("out_cur", Sel(s1Flush, C(W, 0), And(rot, Not(lowE))), "")
	data := m.WireOf("out_data", Sel(aligned, rot, Or(And(prev, lowE), cur)), "")
	emit := m.WireOf("out_emit", And(s1v, Or(s1Flush, aligned, Not(s1First))), "an output beat is formed")
	qPop := m.Wire("q_pop", 1, "")
	q := ShiftQueue(m, "oq", DMARdOutQueue, []string{"data", "keep", "last", "tag", "err"}, []int{W, L, 1, T, 1},
		emit, []Expr{And(data, expand(keep)), keep, s1Last, s1Tag, And(s1Last, s1Err)}, zext(qPop, addrWidth(DMARdOutQueue+1)))
	m.Assign(qCount, q.Count)
	ov := m.WireOf("out_v", RedOr(q.Count), "")
	m.Assign(qPop, And(ov, oReady))
	m.Assign(oValid, ov)
	m.Assign(oData, gate(ov, q.Fields[0][0]))
	m.Assign(oKeep, gate(ov, q.Fields[0][1]))
	m.Assign(oLast, And(ov, q.Fields[0][2]))
	m.Assign(oTag, gate(ov, q.Fields[0][3]))
	m.Assign(oErr, And(ov, q.Fields[0][4]))
	unused = append(unused, Bit(blenM1, BBB))
	m.WireOf("unused_bits", RedOr(Cat(unused...)), "bits no logic reads (keeps lint quiet on purpose)")
	return m, m.Validate()
}
