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

// dmaRdDims are the sizes a dma_rd configuration derives.
type dmaRdDims struct {
	W, L, LB   int // data bits, lanes, log2(lanes)
	BB, BBB    int // beats of the largest burst, its log2
	N, IDW     int // IDs, ID bits
	R, RB      int // reorder-buffer beats, its log2
	T          int // tag bits
	EW         int // beat-address bits the splitter keeps of a request's end
	metaFields int
}

func dmaRdDimsOf(cfg DMARdConfig) dmaRdDims {
	L := cfg.Width / 8
	BB := DMAMaxBurst(cfg.Width) / L
	// A request spans at most 65536 bytes: its end is fewer than 64
	// largest-burst windows past its start, so 6 bits of window index
	// tell whether the end is in the current window.
	return dmaRdDims{W: cfg.Width, L: L, LB: log2(L), BB: BB, BBB: log2(BB), N: 1 << cfg.IDBits, IDW: cfg.IDBits,
		R: cfg.ROBBeats, RB: log2(cfg.ROBBeats), T: cfg.TagBits, EW: log2(BB) + 6}
}

// dmaRdBurst is a burst as the splitter hands it to the issue stage; the
// fields from blenM1 on are kept per ID for the read-out (dmaRdMeta).
type dmaRdBurst struct {
	addr, beats          Expr // beat address; beats (1..BB)
	blenM1, first, last  Expr // beats minus one; the request's first, last burst
	tag, off, flush, lkb Expr // the request's tag, address offset, flush flag, bytes of its last output beat
}

func (b dmaRdBurst) names() []string {
	return []string{"addr", "beats", "blen_m1", "first", "last", "tag", "off", "flush", "lkb"}
}

func (d dmaRdDims) burstWidths() []int {
	return []int{64 - d.LB, d.BBB + 1, d.BBB, 1, 1, d.T, d.LB, 1, d.LB + 1}
}

func (b dmaRdBurst) exprs() []Expr {
	return []Expr{b.addr, b.beats, b.blenM1, b.first, b.last, b.tag, b.off, b.flush, b.lkb}
}

func dmaRdBurstOf(f []*Signal) dmaRdBurst {
	return dmaRdBurst{addr: f[0], beats: f[1], blenM1: f[2], first: f[3], last: f[4], tag: f[5], off: f[6], flush: f[7], lkb: f[8]}
}

// meta packs the fields the read-out needs into one word.
func (b dmaRdBurst) meta() Expr { return Cat(b.exprs()[2:]...) }

// metaOf unpacks a meta word (dims d) into the same fields.
func (d dmaRdDims) metaOf(x *Signal) dmaRdBurst {
	w := d.burstWidths()[2:]
	p := x.W
	f := make([]Expr, len(w))
	for i, n := range w {
		p -= n
		f[i] = Bits(x, p+n-1, p)
	}
	return dmaRdBurst{blenM1: f[0], first: f[1], last: f[2], tag: f[3], off: f[4], flush: f[5], lkb: f[6]}
}

func (d dmaRdDims) metaWidth() int {
	n := 0
	for _, w := range d.burstWidths()[2:] {
		n += w
	}
	return n
}

// DMARd builds dma_rd_w<width>: requests (address, length, tag) in; AXI4
// bursts out; each request's bytes out in order, from lane 0. It is built
// from four stages, each its own function: the splitter (requests into
// bursts, into a two-entry burst queue), the issue stage (ID, reorder-buffer
// room, ar* and the per-ID tables), the response stage (a registered R beat
// written where its burst's room is) and the read-out (issue order, then
// realignment into the output queue).
func DMARd(cfg DMARdConfig) (*Module, error) {
	W := cfg.Width
	if W < 64 || W > 512 || W&(W-1) != 0 {
		return nil, fmt.Errorf("%w: dma_rd data width %d (a power of two from 64 to 512)", ErrInvalid, W)
	}
	if cfg.IDBits < 1 || cfg.IDBits > 8 || cfg.TagBits < 1 || cfg.TagBits > 32 ||
		cfg.ROBBeats < 2*DMAMaxBurst(W)/(W/8) || cfg.ROBBeats&(cfg.ROBBeats-1) != 0 || cfg.ROBBeats > 1<<14 {
		return nil, fmt.Errorf("%w: dma_rd IDs %d bits, tags %d bits, reorder buffer %d beats", ErrInvalid, cfg.IDBits, cfg.TagBits, cfg.ROBBeats)
	}
	d := dmaRdDimsOf(cfg)
	m := NewModule(fmt.Sprintf("dma_rd_w%d", W), "AMBA AXI4 (read channels: INCR bursts, IDs, no 4 KiB crossing); AXI4-Stream",
		fmt.Sprintf("DMA read engine, %d-bit data: each request (host address, length 1..65536 bytes, tag) becomes AXI4 INCR bursts of whole %d-byte beats (arsize %d) that never cross a 4 KiB boundary and are at most %d bytes; the request's bytes come out in order on m_axis from lane 0, whatever the address's alignment, with the tag on every beat.", W, d.L, d.LB, d.BB*d.L),
		fmt.Sprintf("Reordering: every burst in flight has its own ID (up to %d, given in order and reused once the burst has been delivered), so responses of different bursts may come back in any order and interleaved; each burst's beats land in a %d-beat reorder buffer at the place reserved for it when it was issued, so m_axi_rready is always 1. A burst is issued once its ID and its room are free; the buffer drains in issue order.", d.N, d.R),
		"Errors: a burst answered SLVERR or DECERR (rresp bit 1) marks its request: m_axis_tuser_err is 1 on the request's last beat; the beats still come out (their data is whatever the slave returned). m_axis_tuser_berr marks, on every beat, that a response beat of the request up to the one it comes from had an error (as far as they have arrived when it is read out): a consumer that must not use a byte the host refused (a stream ring read) stops at the first such beat, which is exact for a slave that answers every beat of a refused burst with the error, as a PCIe bridge answers a failed completion. rlast is not checked: a burst ends after arlen+1 beats of its ID.",
		fmt.Sprintf("Timing: s_req_ready is high while no request is being split, or when the current one's last burst enters the two-entry burst queue this cycle (it depends on state only); the splitter puts one burst per cycle into the queue while it has room, and the queue's head is issued (ar* registered, held until arready) once its ID and its room are free: a request taken in cycle t has its first burst on ar* in t+3 at the earliest. An ID is reused from the cycle after the one following its burst's last read-out. A response beat taken in cycle t is written into the buffer in t+1, can be read out in t+2 and reaches m_axis in t+4 at the earliest. The read-out issues one beat per cycle while the %d-entry output queue has room for it and the beat in realignment; a request whose address is not aligned and whose last input beat holds no byte of its own last output beat costs one extra cycle. Reset clears everything: assert it only with the AXI slave reset too (no response outstanding).", DMARdOutQueue),
		"Outputs that belong to a valid (ar*, m_axis_*) read zero while it is low.",
	)
	m.Clock()
	m.ResetPort()
	p := dmaRdPortsOf(m, d)
	var unused []Expr
	unused = append(unused, p.rLast, Bit(p.rResp, 0))

	bq, bqPop, reqReady := dmaRdSplit(m, d, p)
	m.Assign(p.reqReady, reqReady)
	rsp := dmaRdResponse(m, d, p)
	iss := dmaRdIssue(m, d, p, bq, rsp)
	m.Assign(bqPop, iss.goB)
	ro := dmaRdReadout(m, d, iss, rsp)
	iss.finish(m, d, ro)
	dmaRdRealign(m, d, p, ro)
	m.WireOf("unused_bits", RedOr(Cat(unused...)), "bits no logic reads (keeps lint quiet on purpose)")
	return m, m.Validate()
}

// dmaRdPorts are dma_rd's ports.
type dmaRdPorts struct {
	reqValid, reqReady, reqAddr, reqLen, reqTag            *Signal
	arID, arAddr, arLen, arSize, arBurst, arValid, arReady *Signal
	rID, rData, rResp, rLast, rValid, rReady               *Signal
	oData, oKeep, oValid, oReady, oLast, oTag, oErr, oBErr *Signal
}

func dmaRdPortsOf(m *Module, d dmaRdDims) dmaRdPorts {
	var p dmaRdPorts
	p.reqValid = m.Input("s_req_valid", 1, "a read request")
	p.reqReady = m.Output("s_req_ready", 1, "")
	p.reqAddr = m.Input("s_req_addr", 64, "host byte address")
	p.reqLen = m.Input("s_req_len", 16, "length in bytes minus one (0..65535: 1 byte to 64 KiB)")
	p.reqTag = m.Input("s_req_tag", d.T, "returned with the request's bytes")
	p.arID = m.Output("m_axi_arid", d.IDW, "")
	p.arAddr = m.Output("m_axi_araddr", 64, "beat aligned")
	p.arLen = m.Output("m_axi_arlen", 8, "beats minus one")
	p.arSize = m.Output("m_axi_arsize", 3, fmt.Sprintf("%d: %d bytes per beat", d.LB, d.L))
	p.arBurst = m.Output("m_axi_arburst", 2, "1: INCR")
	p.arValid = m.Output("m_axi_arvalid", 1, "")
	p.arReady = m.Input("m_axi_arready", 1, "")
	p.rID = m.Input("m_axi_rid", d.IDW, "")
	p.rData = m.Input("m_axi_rdata", d.W, "")
	p.rResp = m.Input("m_axi_rresp", 2, "bit 1 set: SLVERR or DECERR")
	p.rLast = m.Input("m_axi_rlast", 1, "not used (bursts are counted)")
	p.rValid = m.Input("m_axi_rvalid", 1, "")
	p.rReady = m.Output("m_axi_rready", 1, "always 1: buffer room is reserved per burst")
	p.oData = m.Output("m_axis_tdata", d.W, "request bytes, lane 0 first")
	p.oKeep = m.Output("m_axis_tkeep", d.L, "all lanes but on a request's last beat")
	p.oValid = m.Output("m_axis_tvalid", 1, "")
	p.oReady = m.Input("m_axis_tready", 1, "")
	p.oLast = m.Output("m_axis_tlast", 1, "a request's last beat")
	p.oTag = m.Output("m_axis_tuser_tag", d.T, "the request's tag, every beat")
	p.oErr = m.Output("m_axis_tuser_err", 1, "on the last beat: a burst of the request got an error response")
	p.oBErr = m.Output("m_axis_tuser_berr", 1, "on every beat: a response beat of the request up to this one's had an error (its data may not be the host's)")
	return p
}

// dmaRdSplit is the splitter: the request being split, one burst per
// cycle into the burst queue while it has room. A burst that is not its
// request's last ends at a window boundary (its length minus one is ~wib,
// the next starts at the boundary); the request's last burst is the one in
// the window of the request's end, an equality of window indexes, so no
// adder sits between the state and the queue. It returns the burst queue
// and s_req_ready, which depends on state only.
func dmaRdSplit(m *Module, d dmaRdDims, p dmaRdPorts) (Queue, *Signal, Expr) {
	LB, BBB, EW := d.LB, d.BBB, d.EW
	reqV := m.RegDecl("req_v", 1, "a request is being split")
	curA := m.RegDecl("req_beat", 64-LB, "its next beat address (address / bytes per beat)")
	endB := m.RegDecl("req_end", EW, "its last beat address, low bits")
	rTag := m.RegDecl("req_tag", d.T, "")
	rO := m.RegDecl("req_off", LB, "its address's offset in the first beat")
	rFlush := m.RegDecl("req_flush", 1, "its last output beat needs a flush cycle")
	rLkb := m.RegDecl("req_lkb", LB+1, "bytes of its last output beat (1..lanes)")
	rFirst := m.RegDecl("req_first", 1, "the next burst is its first")

	// Request decode, from the ports.
	off := m.WireOf("new_off", Bits(p.reqAddr, LB-1, 0), "")
	end := m.WireOf("new_end", Add(Bits(p.reqAddr, LB+EW-1, 0), zext(p.reqLen, LB+EW)), "address + length - 1, low bits")
	lowSum := m.WireOf("new_low_sum", Add(zext(off, LB+1), zext(Bits(p.reqLen, LB-1, 0), LB+1)), "offset + (length - 1) mod lanes")
	carry := m.WireOf("new_carry", Bit(lowSum, LB), "the span reaches one more beat than the length alone")
	flush := m.WireOf("new_flush", And(RedOr(off), Not(carry)), "output beats = input beats with an offset")
	lkb := m.WireOf("new_lkb", Add(zext(Bits(p.reqLen, LB-1, 0), LB+1), C(LB+1, 1)), "")

	// The next burst.
	wib := m.WireOf("burst_wib", Bits(curA, BBB-1, 0), "beat index in the largest-burst window")
	endLow := Bits(endB, BBB-1, 0)
	lastBurst := m.WireOf("burst_last", Eq(Bits(curA, EW-1, BBB), Bits(endB, EW-1, BBB)), "the request ends in this window")
	blenM1 := m.WireOf("burst_len_m1", Sel(lastBurst, Sub(endLow, wib), Not(wib)), "")
	beats := m.WireOf("burst_beats", Sel(lastBurst,
		Sub(Add(zext(endLow, BBB+1), C(BBB+1, 1)), zext(wib, BBB+1)),
		Sub(C(BBB+1, uint64(d.BB)), zext(wib, BBB+1))), "")
	unused := Cat(Bits(end, LB-1, 0), Bits(lowSum, LB-1, 0))

	bqRoom := m.Wire("bq_room", 1, "the burst queue has room")
	push := m.WireOf("bq_push", And(reqV, bqRoom), "a burst enters the queue")
	ready := m.WireOf("req_ready", Or(Not(reqV), And(bqRoom, lastBurst)), "")
	accept := m.WireOf("req_accept", And(p.reqValid, ready), "a request is taken")
	m.Drive(reqV, big.NewInt(0), Or(accept, And(reqV, Not(And(push, lastBurst)))), nil)
	nextEdge := Cat(IncBits(curA, curA.W-1, BBB), C(BBB, 0))
	m.Drive(curA, nil, Sel(accept, Bits(p.reqAddr, 63, LB), nextEdge), Or(accept, push))
	m.Drive(endB, nil, Bits(end, LB+EW-1, LB), accept)
	m.Drive(rTag, nil, p.reqTag, accept)
	m.Drive(rO, nil, off, accept)
	m.Drive(rFlush, nil, flush, accept)
	m.Drive(rLkb, nil, lkb, accept)
	m.Drive(rFirst, nil, accept, Or(accept, push))

	b := dmaRdBurst{addr: curA, beats: beats, blenM1: blenM1, first: rFirst, last: lastBurst, tag: rTag, off: rO, flush: rFlush, lkb: rLkb}
	pop := m.Wire("bq_pop", 1, "the queue's head is issued")
	q := LatePopQueue2(m, "bq", b.names(), d.burstWidths(), push, b.exprs(), pop)
	m.Assign(bqRoom, Not(Bit(q.Count, 1)))
	m.WireOf("split_unused", RedOr(unused), "bits no logic reads")
	return q, pop, ready
}

// dmaRdIssued is the issue stage's state the read-out reads.
type dmaRdIssued struct {
	goB          Expr       // a burst is issued this cycle
	nid          *Signal    // its ID
	metaNew      *Signal    // its meta word
	head         dmaRdBurst // the queue's head
	issued       *Signal    // bursts issued (mod 2N)
	idsOut       *Signal    // IDs not yet free
	robFree      *Signal    // reorder-buffer beats not reserved
	metas, wptrs []Expr     // per ID: meta word, next write address
	errs         []Expr     // per ID: an error response
}

// dmaRdIssue is the issue stage: the burst queue's head goes out on ar*
// once its ID and its room are free (both kept as registers: the count of
// IDs in use, the free beats of the buffer), and its ID's table entry is
// written.
func dmaRdIssue(m *Module, d dmaRdDims, p dmaRdPorts, bq Queue, r dmaRdResp) dmaRdIssued {
	IDW, RB := d.IDW, d.RB
	b := dmaRdBurstOf(bq.Fields[0])
	var s dmaRdIssued
	s.head = b
	s.issued = m.RegDecl("ids_issued", IDW+1, "bursts issued (mod 2N)")
	s.idsOut = m.RegDecl("ids_out", IDW+1, "IDs in use: issued and not yet seen retired")
	s.robFree = m.RegDecl("rob_free", RB+1, "buffer beats not reserved")
	alloc := m.RegDecl("rob_alloc", RB, "where the next burst's room starts")
	idFree := m.WireOf("id_free", Not(Bit(s.idsOut, IDW)), "fewer than 2^IDBits in use")
	room := m.WireOf("rob_room", Not(Lt(s.robFree, zext(b.beats, RB+1))), "the head burst fits")
	arV := m.RegDecl("ar_v", 1, "")
	arFree := m.WireOf("ar_free", Or(Not(arV), p.arReady), "")
	goB := m.WireOf("burst_go", And(RedOr(bq.Count), arFree, idFree, room), "a burst is issued")
	s.goB = goB
	nid := m.WireOf("burst_id", Bits(s.issued, IDW-1, 0), "")
	m.Drive(s.issued, big.NewInt(0), StepIf(goB, s.issued), nil)
	m.Drive(alloc, big.NewInt(0), Sel(goB, Add(alloc, zext(b.beats, RB)), alloc), nil)
	m.Drive(arV, big.NewInt(0), Or(goB, And(arV, Not(p.arReady))), nil)
	arIDq := m.Reg("ar_id", IDW, big.NewInt(0), nid, goB, "")
	arAq := m.Reg("ar_addr", 64-d.LB, big.NewInt(0), b.addr, goB, "")
	arLq := m.Reg("ar_len", 8, big.NewInt(0), zext(b.blenM1, 8), goB, "")
	m.Assign(p.arValid, arV)
	m.Assign(p.arID, gate(arV, arIDq))
	m.Assign(p.arAddr, gate(arV, Cat(arAq, C(d.LB, 0))))
	m.Assign(p.arLen, gate(arV, arLq))
	m.Assign(p.arSize, gate(arV, C(3, uint64(d.LB))))
	m.Assign(p.arBurst, Cat(C(1, 0), arV))

	// Per-ID table: meta (written when issued), next write address, error.
	metaNew := m.WireOf("meta_new", b.meta(), "")
	s.nid, s.metaNew = nid, metaNew
	r1v, r1id, r1err := r.v, r.id, r.err
	for i := 0; i < d.N; i++ {
		here := m.WireOf(fmt.Sprintf("id%d_go", i), And(goB, Eq(nid, C(IDW, uint64(i)))), "")
		hit := m.WireOf(fmt.Sprintf("id%d_r", i), And(r1v, Eq(r1id, C(IDW, uint64(i)))), "")
		s.metas = append(s.metas, m.Reg(fmt.Sprintf("id%d_meta", i), d.metaWidth(), nil, metaNew, here, ""))
		wp := m.RegDecl(fmt.Sprintf("id%d_wptr", i), RB, "where its next response beat goes")
		m.Drive(wp, big.NewInt(0), Sel(here, alloc, IncBits(wp, RB-1, 0)), Or(here, hit))
		e := m.RegDecl(fmt.Sprintf("id%d_err", i), 1, "an error response")
		m.Drive(e, big.NewInt(0), And(Not(here), Or(e, r1err)), Or(here, hit))
		s.wptrs, s.errs = append(s.wptrs, wp), append(s.errs, e)
	}
	return s
}

// finish drives the issue stage's counters, which the read-out also moves:
// an ID is seen retired one cycle after its burst's last read-out (a
// registered pulse), a buffer beat is free again two cycles after it is
// read registered. Every candidate is formed in parallel and picked.
func (s dmaRdIssued) finish(m *Module, d dmaRdDims, ro dmaRdRead) {
	IDW, RB := d.IDW, d.RB
	retD := m.Reg("ids_retire", 1, big.NewInt(0), ro.retire, nil, "a burst was retired last cycle")
	one := C(IDW+1, 1)
	m.Drive(s.idsOut, big.NewInt(0), Sel(s.goB, Sel(retD, s.idsOut, Add(s.idsOut, one)),
		Sel(retD, Sub(s.idsOut, one), s.idsOut)), nil)
	// A beat read in cycle t counts as free from t+2 (the read is
	// registered first): the read-out's decision stays out of the count.
	rdD := m.Reg("rob_read_d", 1, big.NewInt(0), ro.slot, nil, "a beat was read last cycle")
	f, bt, bm := s.robFree, zext(s.head.beats, RB+1), zext(s.head.blenM1, RB+1)
	m.Drive(f, big.NewInt(int64(d.R)), Sel(s.goB, Sel(rdD, Sub(f, bm), Sub(f, bt)),
		Sel(rdD, Add(f, C(RB+1, 1)), f)), nil)
}

// dmaRdResp is the response stage's registered beat.
type dmaRdResp struct {
	v, id, data, err *Signal
}

// dmaRdResponse registers each R beat; the beat is written into the buffer
// the next cycle, at its ID's write address.
func dmaRdResponse(m *Module, d dmaRdDims, p dmaRdPorts) dmaRdResp {
	m.Assign(p.rReady, C(1, 1))
	return dmaRdResp{
		v:    m.Reg("r1_v", 1, big.NewInt(0), p.rValid, nil, "a response beat is registered"),
		id:   m.Reg("r1_id", d.IDW, nil, p.rID, nil, ""),
		data: m.Reg("r1_data", d.W, nil, p.rData, nil, ""),
		err:  m.Reg("r1_err", 1, nil, Bit(p.rResp, 1), nil, "SLVERR or DECERR"),
	}
}

// dmaRdRead is the read-out stage's result.
type dmaRdRead struct {
	slot, retire  Expr // a beat is read; the head burst's last
	robRd, qCount *Signal
	s1            dmaRdSlot
}

// dmaRdSlot is what the realignment stage gets with a buffer read: the
// registered fields of the slot read in the previous cycle.
type dmaRdSlot struct {
	v, flush, first, last, off, tag, lkb, err *Signal
}

// dmaRdHeadMeta keeps the meta words of the head burst (ID retired) and of
// the one after it in registers, so that no table read sits in front of
// the read-out's decisions: when the head is retired the second becomes the
// head and the table is read at retired+2; a burst issued into either
// place is taken from the issue stage directly. The words are right
// whenever their burst has been issued. It returns the head's word and the
// function that drives both from the retire decision.
func dmaRdHeadMeta(m *Module, d dmaRdDims, s dmaRdIssued, retired *Signal) (*Signal, func(Expr)) {
	IDW, MW := d.IDW, d.metaWidth()
	hd := m.RegDecl("head_meta", MW, "meta of the head burst")
	hn := m.RegDecl("next_meta", MW, "meta of the burst after it")
	r1 := m.RegDecl("ids_retired_p1", IDW, "retired + 1")
	r2 := m.RegDecl("ids_retired_p2", IDW, "retired + 2")
	m2 := m.WireOf("next2_meta", muxTree(selBits(r2, 0, IDW), s.metas), "")
	byp0 := m.WireOf("head_byp", And(s.goB, Eq(s.issued, retired)), "the head's burst is issued now")
	byp1 := m.WireOf("next_byp", And(s.goB, Eq(s.nid, r1)), "the next one's is")
	byp2 := m.WireOf("next2_byp", And(s.goB, Eq(s.nid, r2)), "the one after's is")
	return hd, func(retire Expr) {
		m.Drive(hd, nil, Sel(retire, Sel(byp1, s.metaNew, hn), Sel(byp0, s.metaNew, hd)), nil)
		m.Drive(hn, nil, Sel(retire, Sel(byp2, s.metaNew, m2), Sel(byp1, s.metaNew, hn)), nil)
		m.Drive(r1, big.NewInt(1), StepIf(retire, r1), nil)
		m.Drive(r2, big.NewInt(2), StepIf(retire, r2), nil)
	}
}

// dmaRdReadout reads the buffer in issue order: the head burst's meta,
// write address and error come from its ID's table entry (64-way selects
// of registers, indexed by a register); a beat is readable when the head's
// write address is past the read address. The buffer is drained in issue
// order, so the read address is a counter.
func dmaRdReadout(m *Module, d dmaRdDims, s dmaRdIssued, r dmaRdResp) dmaRdRead {
	IDW, BBB, RB, T, LB := d.IDW, d.BBB, d.RB, d.T, d.LB
	retired := m.RegDecl("ids_retired", IDW+1, "bursts read out (mod 2N)")
	drain := m.RegDecl("rob_drain", RB, "the next beat to read")
	h := selBits(retired, 0, IDW)
	hd, hn := dmaRdHeadMeta(m, d, s, retired)
	hm := d.metaOf(hd)
	hWptr := m.WireOf("head_wptr", muxTree(h, s.wptrs), "")
	hErr := m.WireOf("head_err", muxTree(h, s.errs), "")
	hasHead := m.WireOf("head_any", Ne(s.issued, retired), "")
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
	readSlot := m.WireOf("slot_read", And(Not(flushing), hasHead, Ne(hWptr, drain), credit), "")
	endBurst := m.WireOf("slot_burst_end", Eq(j, hm.blenM1), "")
	firstIn := m.WireOf("slot_first", And(hm.first, Eq(j, C(BBB, 0))), "")
	lastIn := m.WireOf("slot_last", And(hm.last, endBurst), "")
	errNow := m.WireOf("slot_err", Or(reqErr, hErr), "")
	retire := m.WireOf("slot_retire", And(readSlot, endBurst), "the head burst's last beat is read")
	m.Drive(j, big.NewInt(0), Sel(endBurst, C(BBB, 0), Add(j, C(BBB, 1))), readSlot)
	m.Drive(retired, big.NewInt(0), StepIf(retire, retired), nil)
	hn(retire)
	m.Drive(drain, big.NewInt(0), StepIf(readSlot, drain), nil)
	m.Drive(reqErr, big.NewInt(0), And(Not(hm.last), errNow), retire)
	startFlush := m.WireOf("flush_start", And(readSlot, lastIn, hm.flush), "")
	m.Drive(flushing, big.NewInt(0), Or(startFlush, And(flushing, Not(flushSlot))), nil)
	m.Drive(fTag, nil, hm.tag, startFlush)
	m.Drive(fO, nil, hm.off, startFlush)
	m.Drive(fLkb, nil, hm.lkb, startFlush)
	m.Drive(fErr, nil, errNow, startFlush)
	robRd := m.Mem("rob", d.W, d.R, r.v, m.WireOf("rob_waddr", muxTree(selBits(r.id, 0, IDW), s.wptrs), ""), r.data,
		readSlot, drain, "reorder buffer")

	m.Drive(s1v, big.NewInt(0), Or(readSlot, flushSlot), nil)
	return dmaRdRead{slot: readSlot, retire: retire, robRd: robRd, qCount: qCount, s1: dmaRdSlot{
		v:     s1v,
		flush: m.Reg("s1_flush", 1, big.NewInt(0), flushSlot, nil, ""),
		first: m.Reg("s1_first", 1, big.NewInt(0), And(readSlot, firstIn), nil, ""),
		last:  m.Reg("s1_last", 1, big.NewInt(0), Or(flushSlot, And(readSlot, lastIn, Not(hm.flush))), nil, ""),
		off:   m.Reg("s1_off", LB, big.NewInt(0), Sel(flushing, fO, hm.off), nil, ""),
		tag:   m.Reg("s1_tag", T, big.NewInt(0), Sel(flushing, fTag, hm.tag), nil, ""),
		lkb:   m.Reg("s1_lkb", LB+1, big.NewInt(0), Sel(flushing, fLkb, hm.lkb), nil, ""),
		err:   m.Reg("s1_err", 1, big.NewInt(0), Sel(flushing, fErr, errNow), nil, ""),
	}}
}

// dmaRdRealign is the realignment stage: each buffer beat rotated by the
// request's offset and joined with the previous one, into the output
// queue.
func dmaRdRealign(m *Module, d dmaRdDims, p dmaRdPorts, ro dmaRdRead) {
	L, LB, W := d.L, d.LB, d.W
	s1 := ro.s1
	amt := m.WireOf("rot_amt", Sub(C(LB, 0), s1.off), "rotate up by lanes - offset")
	rot := rotateLanes(m, "rot", ro.robRd, amt, 8)
	prev := m.Reg("prev_rot", W, nil, rot, And(s1.v, Not(s1.flush)), "the previous input beat, rotated")
	lim := m.WireOf("prev_lanes", Sub(C(LB+1, uint64(L)), zext(s1.off, LB+1)), "lanes taken from the previous beat")
	lowM, keepM := make([]Expr, L), make([]Expr, L)
	for i := 0; i < L; i++ {
		lowM[L-1-i] = Lt(C(LB+1, uint64(i)), lim)
		keepM[L-1-i] = Or(Not(s1.last), Lt(C(LB+1, uint64(i)), s1.lkb))
	}
	low := m.WireOf("prev_mask", Cat(lowM...), "")
	keep := m.WireOf("out_keep", Cat(keepM...), "")
	aligned := m.WireOf("out_aligned", Eq(s1.off, C(LB, 0)), "")
	lowE := m.WireOf("prev_mask_bits", expand(low), "")
	cur := m.WireOf("out_cur", Sel(s1.flush, C(W, 0), And(rot, Not(lowE))), "")
	data := m.WireOf("out_data", Sel(aligned, rot, Or(And(prev, lowE), cur)), "")
	emit := m.WireOf("out_emit", And(s1.v, Or(s1.flush, aligned, Not(s1.first))), "an output beat is formed")
	qPop := m.Wire("q_pop", 1, "")
	// err is the request's error so far: tuser_berr on every beat, and
	// tuser_err on the last.
	q := ShiftQueue(m, "oq", DMARdOutQueue, []string{"data", "keep", "last", "tag", "err"}, []int{W, L, 1, d.T, 1},
		emit, []Expr{And(data, expand(keep)), keep, s1.last, s1.tag, s1.err}, zext(qPop, addrWidth(DMARdOutQueue+1)))
	m.Assign(ro.qCount, q.Count)
	ov := m.WireOf("out_v", RedOr(q.Count), "")
	m.Assign(qPop, And(ov, p.oReady))
	m.Assign(p.oValid, ov)
	m.Assign(p.oData, gate(ov, q.Fields[0][0]))
	m.Assign(p.oKeep, gate(ov, q.Fields[0][1]))
	m.Assign(p.oLast, And(ov, q.Fields[0][2]))
	m.Assign(p.oTag, gate(ov, q.Fields[0][3]))
	m.Assign(p.oErr, And(ov, q.Fields[0][2], q.Fields[0][4]))
	m.Assign(p.oBErr, And(ov, q.Fields[0][4]))
}
