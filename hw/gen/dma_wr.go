package gen

import (
	"fmt"
	"math/big"
	"math/bits"
)

// DMAWrWidths lists the data widths the project ships for dma_wr.
var DMAWrWidths = []int{64, 128, 256, 512}

// DMAWrConfig sizes one DMA write engine.
type DMAWrConfig struct {
	Width   int // data width in bits: 64 to 512, a power of two
	IDBits  int // AXI ID width (every burst uses ID 0: responses come back in order)
	Bursts  int // bursts awaiting their write response, at most (a power of two)
	TagBits int
}

// DMAWrDefault is the shipped configuration: 32 bursts awaiting their
// response (a 250-cycle write-response latency at 512 bits with bursts of
// 8 beats or more, at full rate).
func DMAWrDefault(width int) DMAWrConfig {
	return DMAWrConfig{Width: width, IDBits: 4, Bursts: 32, TagBits: 8}
}

// DMAWrErrBurstBits is the width of dma_wr's m_done_err_burst: a request
// of 64 KiB spans at most 65536/B + 1 bursts of B bytes.
func DMAWrErrBurstBits(width int) int { return bits.Len(uint(65536 / DMAMaxBurst(width))) }

// dmaWrReqQueue is the depth of the queue of requests whose data the W
// channel has not finished.
const dmaWrReqQueue = 2

// DMAWr builds dma_wr_w<width>: requests (address, length, tag) and their
// data in; AXI4 write bursts out; one completion per request, in order.
func DMAWr(cfg DMAWrConfig) (*Module, error) {
	W := cfg.Width
	if W < 64 || W > 512 || W&(W-1) != 0 {
		return nil, fmt.Errorf("%w: dma_wr data width %d (a power of two from 64 to 512)", ErrInvalid, W)
	}
	if cfg.IDBits < 1 || cfg.IDBits > 8 || cfg.TagBits < 1 || cfg.TagBits > 32 || cfg.Bursts < 2 || cfg.Bursts > 256 || cfg.Bursts&(cfg.Bursts-1) != 0 {
		return nil, fmt.Errorf("%w: dma_wr IDs %d bits, tags %d bits, %d bursts", ErrInvalid, cfg.IDBits, cfg.TagBits, cfg.Bursts)
	}
	L := W / 8
	LB := log2(L)
	BB := DMAMaxBurst(W) / L
	BBB := log2(BB)
	NB := cfg.Bursts
	NBB := log2(NB)
	T := cfg.TagBits
	NI := 18 - LB
	name := fmt.Sprintf("dma_wr_w%d", W)
	if def := DMAWrDefault(W); cfg != def {
		// Another configuration is another module (card_cq's has more
		// bursts in flight).
		name += fmt.Sprintf("_b%d_i%d_t%d", cfg.Bursts, cfg.IDBits, cfg.TagBits)
	}
	m := NewModule(name, "AMBA AXI4 (write channels: INCR bursts, byte strobes, no 4 KiB crossing); AXI4-Stream",
		fmt.Sprintf("DMA write engine, %d-bit data: each request (host address, length 1..65536 bytes, tag) takes its bytes from s_axis (lane 0 first, ceil(length/%d) beats, no tlast: the length says where they end) and writes them with AXI4 INCR bursts of whole beats (awsize %d) that never cross a 4 KiB boundary and are at most %d bytes; wstrb marks the bytes of an unaligned start and end. One completion per request, in request order, once every burst of it has its write response: m_done (tag, err = a burst got SLVERR or DECERR).", W, L, LB, BB*L),
		fmt.Sprintf("Every burst uses ID 0, so write responses come back in order (the order completions are reported in); up to %d bursts await their response. W beats of a burst go out only once its address has been taken (awvalid and awready), so a slave never sees data before its address. bresp bit 1 marks an error; bid is not checked.", NB),
		fmt.Sprintf("Timing: s_req_ready is high while the address splitter is free (or issues the current request's last burst this cycle) and the %d-entry queue of requests awaiting their data has room; one burst address per cycle (aw* registered until awready); one W beat per cycle (w* registered until wready), each taking an s_axis beat unless it is a request's extra last beat (an unaligned request whose bytes end past its last input beat's shift). bready is high while the completion register is free or taken this cycle. Reset clears everything: assert it only with the AXI slave reset too.", dmaWrReqQueue),
		"Outputs that belong to a valid (aw*, w*, m_done_*) read zero while it is low.",
	)
	m.Clock()
	m.ResetPort()
	reqValid := m.Input("s_req_valid", 1, "a write request")
	reqReady := m.Output("s_req_ready", 1, "")
	reqAddr := m.Input("s_req_addr", 64, "host byte address")
	reqLen := m.Input("s_req_len", 16, "length in bytes minus one (1 byte to 64 KiB)")
	reqTag := m.Input("s_req_tag", T, "returned with the completion")
	sData := m.Input("s_axis_tdata", W, "the requests' bytes, lane 0 first; each request starts a new beat")
	sValid := m.Input("s_axis_tvalid", 1, "")
	sReady := m.Output("s_axis_tready", 1, "")
	awID := m.Output("m_axi_awid", cfg.IDBits, "always 0")
	awAddr := m.Output("m_axi_awaddr", 64, "beat aligned")
	awLen := m.Output("m_axi_awlen", 8, "beats minus one")
	awSize := m.Output("m_axi_awsize", 3, fmt.Sprintf("%d: %d bytes per beat", LB, L))
	awBurst := m.Output("m_axi_awburst", 2, "1: INCR")
	awValid := m.Output("m_axi_awvalid", 1, "")
	awReady := m.Input("m_axi_awready", 1, "")
	wData := m.Output("m_axi_wdata", W, "")
	wStrb := m.Output("m_axi_wstrb", L, "bytes of the request")
	wLast := m.Output("m_axi_wlast", 1, "")
	wValid := m.Output("m_axi_wvalid", 1, "")
	wReady := m.Input("m_axi_wready", 1, "")
	bID := m.Input("m_axi_bid", cfg.IDBits, "not checked")
	bResp := m.Input("m_axi_bresp", 2, "bit 1 set: SLVERR or DECERR")
	bValid := m.Input("m_axi_bvalid", 1, "")
	bReady := m.Output("m_axi_bready", 1, "")
	dValid := m.Output("m_done_valid", 1, "a request is written")
	dReady := m.Input("m_done_ready", 1, "")
	dTag := m.Output("m_done_tag", T, "its tag")
	dErr := m.Output("m_done_err", 1, "a burst of it got an error response")
	EB := DMAWrErrBurstBits(W)
	dEB := m.Output("m_done_err_burst", EB, fmt.Sprintf("with m_done_err: the index in the request of its first burst with an error response (0 the first, which starts at the request's address; burst k > 0 starts at the request's address rounded down to %d bytes, plus k x %d), so that a caller names the first refused byte as an IOMMU names the page", BB*L, BB*L))

	zero := C(1, 0)
	unused := []Expr{bID, Bit(bResp, 0)}

	// Request decode.
	off := m.WireOf("new_off", Bits(reqAddr, LB-1, 0), "")
	span := m.WireOf("new_span", Add(zext(off, 17), zext(reqLen, 17)), "offset + length - 1")
	nout := m.WireOf("new_nout", Add(zext(Bits(span, 16, LB), NI), C(NI, 1)), "beats written")
	endL := m.WireOf("new_end", Add(zext(Bits(span, LB-1, 0), LB+1), C(LB+1, 1)), "lanes of the last beat written")

	// Address splitter.
	reqV := m.RegDecl("req_v", 1, "a request is being split")
	curA := m.RegDecl("req_beat", 64-LB, "its next beat address")
	remB := m.RegDecl("req_rem", NI, "its beats not yet in a burst")
	rTag := m.RegDecl("req_tag", T, "")
	wib := m.WireOf("burst_wib", Bits(curA, BBB-1, 0), "")
	toB := m.WireOf("burst_to_edge", Sub(C(BBB+1, uint64(BB)), zext(wib, BBB+1)), "")
	lastBurst := m.WireOf("burst_last", Not(Lt(zext(toB, NI), remB)), "")
	// A burst that is not the request's last ends at a burst boundary: its
	// length minus one is ~wib, and the next burst starts at the boundary
	// (no adder behind the last-burst decision). After the last burst the
	// splitter's address and count are not used until the next request
	// loads them.
	remM1 := m.WireOf("burst_rem_m1", Sub(Bits(remB, BBB, 0), C(BBB+1, 1)), "")
	blenM1 := m.WireOf("burst_len_m1", Sel(lastBurst, Bits(remM1, BBB-1, 0), Not(wib)), "")
	unused = append(unused, Bit(remM1, BBB), Bits(span, LB-1, 0))

	// Bursts awaiting their response: a ring of {tag, last of request}.
	bHead := m.RegDecl("bq_head", NBB+1, "")
	bTail := m.RegDecl("bq_tail", NBB+1, "")
	bUsed := m.WireOf("bq_used", Sub(bTail, bHead), "")
	bRoom := m.WireOf("bq_room", Not(Bit(bUsed, NBB)), "")
	awV := m.RegDecl("aw_v", 1, "")
	awFree := m.WireOf("aw_free", Or(Not(awV), awReady), "")
	goB := m.WireOf("burst_go", And(reqV, awFree, bRoom), "a burst address is issued")

	// Requests awaiting their data.
	wqFull := m.Wire("wq_full", 1, "")
	m.Assign(reqReady, And(Or(Not(reqV), And(goB, lastBurst)), Not(wqFull)))
	accept := m.WireOf("req_accept", And(reqValid, reqReady), "")
	m.Drive(reqV, big.NewInt(0), Or(accept, And(reqV, Not(And(goB, lastBurst)))), nil)
	nextEdge := Cat(IncBits(curA, 63-LB, BBB), C(BBB, 0))
	m.Drive(curA, nil, Sel(accept, Bits(reqAddr, 63, LB), nextEdge), Or(accept, goB))
	m.Drive(remB, nil, Sel(accept, nout, Sub(remB, zext(toB, NI))), Or(accept, goB))
	m.Drive(rTag, nil, reqTag, accept)
	m.Drive(awV, big.NewInt(0), Or(goB, And(awV, Not(awReady))), nil)
	awAq := m.Reg("aw_addr", 64-LB, big.NewInt(0), curA, goB, "")
	awLq := m.Reg("aw_len", 8, big.NewInt(0), zext(blenM1, 8), goB, "")
	m.Assign(awValid, awV)
	m.Assign(awID, C(cfg.IDBits, 0))
	m.Assign(awAddr, gate(awV, Cat(awAq, C(LB, 0))))
	m.Assign(awLen, gate(awV, awLq))
	m.Assign(awSize, gate(awV, C(3, uint64(LB))))
	m.Assign(awBurst, Cat(zero, awV))
	m.Drive(bTail, big.NewInt(0), StepIf(goB, bTail), nil)
	var bqTags, bqLasts []Expr
	for i := 0; i < NB; i++ {
		here := m.WireOf(fmt.Sprintf("bq%d_w", i), And(goB, Eq(Bits(bTail, NBB-1, 0), C(NBB, uint64(i)))), "")
		bqTags = append(bqTags, m.Reg(fmt.Sprintf("bq%d_tag", i), T, nil, rTag, here, ""))
		bqLasts = append(bqLasts, m.Reg(fmt.Sprintf("bq%d_last", i), 1, nil, lastBurst, here, ""))
	}

	// W channel: the head request of the data queue, beat by beat.
	wqPop := m.Wire("wq_pop", addrWidth(dmaWrReqQueue+1), "")
	wq := ShiftQueue(m, "wq", dmaWrReqQueue, []string{"off", "nout_m1", "nin_m1", "end", "wib"}, []int{LB, NI, NI, LB + 1, BBB},
		accept, []Expr{off, zext(Bits(span, 16, LB), NI), zext(Bits(reqLen, 15, LB), NI), endL, Bits(reqAddr, LB+BBB-1, LB)}, wqPop)
	cw := addrWidth(dmaWrReqQueue + 1)
	m.Assign(wqFull, Eq(wq.Count, C(cw, dmaWrReqQueue)))
	hOff, hNoutM1, hNinM1, hEnd, hWib := wq.Fields[0][0], wq.Fields[0][1], wq.Fields[0][2], wq.Fields[0][3], wq.Fields[0][4]
	wHave := m.WireOf("w_have", RedOr(wq.Count), "a request's data is due")
	wk := m.RegDecl("w_beat", NI, "next beat of the head request")
	wa := m.RegDecl("w_wib", BBB, "its beat address, low bits (after the first beat)")
	inBurst := m.RegDecl("w_in_burst", 1, "a burst's W beats are under way")
	permits := m.RegDecl("w_permits", NBB+2, "bursts whose address was taken (awready) and whose W beats have not started")
	wV := m.RegDecl("w_v", 1, "")
	wFree := m.WireOf("w_free", Or(Not(wV), wReady), "")
	startOK := m.WireOf("w_start_ok", Or(inBurst, RedOr(permits)), "")
	// w_beat < nin, kept as a register: 1 at a request's first beat (every
	// request has an input beat), then w_beat+1 < nin, i.e. w_beat < nin-1.
	needIn := m.RegDecl("w_need_in", 1, "this beat takes an input beat")
	canGo := m.WireOf("w_can", And(wHave, wFree, startOK), "")
	m.Assign(sReady, And(canGo, needIn))
	wGo := m.WireOf("w_go", And(canGo, Or(Not(needIn), sValid)), "a W beat is formed")
	take := m.WireOf("s_take", And(wGo, needIn), "an input beat is taken")
	first := m.WireOf("w_first", Eq(wk, C(NI, 0)), "")
	last := m.WireOf("w_last_beat", Eq(wk, hNoutM1), "")
	curWa := m.WireOf("w_wib_cur", Sel(first, hWib, wa), "")
	endBurst := m.WireOf("w_end_burst", Or(last, RedAnd(curWa)), "")
	rot := rotateLanes(m, "rot", sData, hOff, 8)
	prev := m.Reg("prev_rot", W, nil, rot, take, "the previous input beat, rotated")
	hiM, endM := make([]Expr, L), make([]Expr, L)
	for i := 0; i < L; i++ {
		hiM[L-1-i] = C(1, 1) // the last lane is at or past any offset
		if i < L-1 {
			hiM[L-1-i] = Not(Lt(C(LB, uint64(i)), hOff))
		}
		endM[L-1-i] = Lt(C(LB+1, uint64(i)), hEnd)
	}
	hi := m.WireOf("lanes_hi", Cat(hiM...), "lanes at or past the offset")
	hiE := m.WireOf("lanes_hi_bits", expand(hi), "")
	strb := m.WireOf("w_strb_new", And(Sel(first, hi, Ones(L)), Sel(last, Cat(endM...), Ones(L))), "")
	data := m.WireOf("w_data_new", Or(And(rot, hiE, Rep(needIn, W)), And(prev, Not(hiE))), "")
	m.Drive(wV, big.NewInt(0), Or(wGo, And(wV, Not(wReady))), nil)
	wDq := m.Reg("w_data", W, nil, And(data, expand(strb)), wGo, "")
	wSq := m.Reg("w_strb", L, big.NewInt(0), strb, wGo, "")
	wLq := m.Reg("w_last", 1, big.NewInt(0), endBurst, wGo, "")
	m.Assign(wValid, wV)
	m.Assign(wData, gate(wV, wDq))
	m.Assign(wStrb, gate(wV, wSq))
	m.Assign(wLast, And(wV, wLq))
	m.Drive(wk, big.NewInt(0), Sel(last, C(NI, 0), Add(wk, C(NI, 1))), wGo)
	m.Drive(needIn, big.NewInt(1), Or(last, Lt(wk, hNinM1)), wGo)
	m.Drive(wa, big.NewInt(0), Add(curWa, C(BBB, 1)), wGo)
	m.Drive(inBurst, big.NewInt(0), Not(endBurst), wGo)
	wStart := m.WireOf("w_start", And(wGo, Not(inBurst)), "a burst's first W beat")
	// permits +1 (an address taken), -1 (a burst's W beats start), both or
	// neither: the candidates are formed in parallel and picked.
	pInc := And(awV, awReady)
	m.Drive(permits, big.NewInt(0), Sel(pInc, Sel(wStart, permits, Add(permits, C(NBB+2, 1))),
		Sel(wStart, Sub(permits, C(NBB+2, 1)), permits)), nil)
	m.Assign(wqPop, zext(And(wGo, last), cw))

	// B channel and completions.
	dV := m.RegDecl("done_v", 1, "")
	m.Assign(bReady, And(Or(Not(dV), dReady), RedOr(bUsed)))
	bGo := m.WireOf("b_go", And(bValid, Or(Not(dV), dReady), RedOr(bUsed)), "a write response is taken")
	hb := selBits(bHead, 0, NBB)
	hbTag := m.WireOf("bq_head_tag", muxTree(hb, bqTags), "")
	hbLast := m.WireOf("bq_head_last", muxTree(hb, bqLasts), "")
	m.Drive(bHead, big.NewInt(0), StepIf(bGo, bHead), nil)
	errAcc := m.RegDecl("err_acc", 1, "earlier bursts of the request had errors")
	errNow := m.WireOf("err_now", Or(errAcc, Bit(bResp, 1)), "")
	m.Drive(errAcc, big.NewInt(0), And(Not(hbLast), errNow), bGo)
	bIdx := m.RegDecl("bq_head_index", EB, "the head burst's index in its request")
	m.Drive(bIdx, big.NewInt(0), Sel(hbLast, C(EB, 0), incr(bIdx)), bGo)
	errIdx := m.RegDecl("err_index", EB, "the index of the request's first burst with an error")
	errIdxNow := m.WireOf("err_index_now", Sel(errAcc, errIdx, bIdx), "")
	m.Drive(errIdx, big.NewInt(0), errIdxNow, bGo)
	fin := m.WireOf("done_set", And(bGo, hbLast), "a request's last response")
	m.Drive(dV, big.NewInt(0), Or(fin, And(dV, Not(dReady))), nil)
	dTq := m.Reg("done_tag", T, big.NewInt(0), hbTag, fin, "")
	dEq := m.Reg("done_err", 1, big.NewInt(0), errNow, fin, "")
	dEBq := m.Reg("done_err_burst", EB, big.NewInt(0), Sel(errNow, errIdxNow, C(EB, 0)), fin, "")
	m.Assign(dEB, gate(dV, dEBq))
	m.Assign(dValid, dV)
	m.Assign(dTag, gate(dV, dTq))
	m.Assign(dErr, And(dV, dEq))
	m.WireOf("unused_bits", RedOr(Cat(unused...)), "bits no logic reads (keeps lint quiet on purpose)")
	return m, m.Validate()
}
