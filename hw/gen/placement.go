package gen

import (
	"fmt"
	"math/big"
	"math/bits"
)

// PlacementWidths lists the data widths the project ships for the
// placement engine.
var PlacementWidths = []int{64, 128, 256, 512}

// PlacementConfig sizes one placement engine.
type PlacementConfig struct {
	Width      int // AXI-Stream data width in bits: 64 to 512, a power of two
	TableDepth int // STag table entries (a power of two, at most 2^24)
	PBLDepth   int // page-list slots (a power of two, at most 2^16)
}

// PlacementDefault is the shipped configuration at a given width: a
// 4096-entry STag table and 4096 page-list slots.
func PlacementDefault(width int) PlacementConfig {
	return PlacementConfig{Width: width, TableDepth: 4096, PBLDepth: 4096}
}

// Placement destinations of a segment (the dest field of the pipeline).
const (
	PlaceDrop = 0 // nothing leaves the block (a valid zero-length tagged segment)
	PlaceDMA  = 1 // tagged, checked: DMA writes
	PlaceHost = 2 // untagged, header-checked: the host-bound queue
	PlaceTerm = 3 // failed a check: one Terminate event, nothing written
)

// Terminate causes (Layer<<12 | EType<<8 | Code) the engine reports: RFC 5041
// §7.2 and RFC 5040 Fig. 9, as in the digest's receive-side error matrix
// (§3.7). Written here from the spec, not from golden/rdmap: the
// co-simulation checks them against the golden model.
const (
	causeDDPLocalCatastrophic = 0x1000
	causeDDPInvalidSTag       = 0x1100
	causeDDPBaseBounds        = 0x1101
	causeDDPNotAssociated     = 0x1102
	causeDDPTOWrap            = 0x1103
	causeDDPTaggedVersion     = 0x1104
	causeDDPInvalidQN         = 0x1201
	causeDDPUntaggedVersion   = 0x1206
	causeRDMAPInvalidVersion  = 0x0205
	causeRDMAPUnexpectedOpcod = 0x0206
)

// Header sizes (RFC 5041 §4.2, §4.3) and the header copy the engine keeps.
const (
	taggedHdr   = 14
	untaggedHdr = 18
	// PlacementHdrBytes is the length of the ULPDU prefix the engine hands to
	// the host with untagged segments and with Terminate events: an untagged
	// DDP header (a tagged one is its first 14 bytes).
	PlacementHdrBytes = untaggedHdr
)

// placementRdQPBits is the width of the connection numbers whose Reads
// outstanding placement counts (the card's QPs).
const placementRdQPBits = 10

// PlacementLatency is the number of cycles from the cycle a beat is accepted
// in to the first cycle its output (if any) shows, when nothing stalls and
// the beat is not held (see the block documentation).
const PlacementLatency = 4

func log2(n int) int { return bits.Len(uint(n)) - 1 }

// Placement builds placement_w<width>: the receive-side DDP/RDMAP placement
// engine with its STag table.
func Placement(cfg PlacementConfig) (*Module, error) {
	W := cfg.Width
	if W < 64 || W > 512 || W&(W-1) != 0 {
		return nil, fmt.Errorf("%w: placement data width %d (need a power of two from 64 to 512)", ErrInvalid, W)
	}
	if cfg.TableDepth < 2 || cfg.TableDepth > 1<<24 || cfg.TableDepth&(cfg.TableDepth-1) != 0 ||
		cfg.PBLDepth < 2 || cfg.PBLDepth > 1<<16 || cfg.PBLDepth&(cfg.PBLDepth-1) != 0 {
		return nil, fmt.Errorf("%w: placement table depth %d, page list depth %d (powers of two up to 2^24 and 2^16)", ErrInvalid, cfg.TableDepth, cfg.PBLDepth)
	}
	L := W / 8
	LB := log2(L)
	IW := log2(cfg.TableDepth)
	PW := log2(cfg.PBLDepth)
	rm := PlacementRegMap()
	if err := rm.Validate(); err != nil {
		return nil, err
	}
	m := NewModule(fmt.Sprintf("placement_w%d", W),
		"RFC 5041 §4, §7 (tagged and untagged checks, Terminate causes); RFC 5040 §4.1-4.2, §8.1.1 #1-#6 (opcodes, versions, memory protection); digest ddp-rdmap.md §3.7, §4.2",
		fmt.Sprintf("Receive-side DDP/RDMAP placement engine, %d-bit data (%d byte lanes), with a %d-entry STag table and a %d-slot page list. Input: one ULPDU (DDP segment) per AXI-Stream frame from mpa_rx, with its connection sideband (s_axis_tuser_*) on every beat: len is the ULPDU length (the MPA ULPDU_Length), qp and pd the connection and its protection domain, rev 1 for RFC 5040/5041 (DV = RV = 1) and 0 for the RDMA Consortium versions (MPA revision 0). Bytes at or past len are ignored (never written, read as zero).", W, L, cfg.TableDepth, cfg.PBLDepth),
		"Checks, in the order of the golden engine: a ULPDU shorter than its DDP header or with the wrong DV is a DDP Invalid DDP version (1/1/0x04 tagged, 1/2/0x06 untagged); wrong RV is RDMAP Invalid RDMAP version (0/2/0x05); an untagged QN above 2 is DDP Invalid QN (1/2/0x01); an opcode that is reserved or does not fit T/QN is RDMAP Unexpected OpCode (0/2/0x06). A tagged segment with payload then passes the STag check of golden/iwarp/mem.Check: index in the table, valid, key (else 1/1/0x00); PD and stream (else 1/1/0x02); remote write right for an RDMA Write, local write for a Read Response (else 1/1/0x00, DDP has no rights code); TO + length wraps 2^64 (1/1/0x03); inside [BASE, BASE+LEN) (else 1/1/0x01). A zero-length tagged segment is not checked against the table and writes nothing. With cfg_read_check, a Read Response is checked against its connection's Reads outstanding (s_rd_issue, docs/placement.md): none is DDP Local Catastrophic (1/0/0x00); with payload, another STag than the oldest Read's sink is 1/1/0x00, and another TO than the sink's next or more bytes than are left 1/1/0x01, then a last segment (L=1) that leaves bytes of the Read out is 1/1/0x01, all before the STag check.",
		fmt.Sprintf("Outputs. m_dma: one write per %d-byte aligned host block (address, data, byte strobes; data lanes without a strobe read zero), one per cycle, never crossing a 4 KiB page, only for a tagged segment that passed every check, and only inside the checked range. m_host: untagged segments that passed the header checks, beat for beat as they came in (bytes past len zeroed and not kept), with the connection and the parsed untagged header (opcode, L flag, QN, MSN, MO, Invalidate STag) on the last beat. m_term: one event per failed segment, on its last beat: the Terminate cause (Layer, EType, Code), the M/D/R flags of RFC 5040 Fig. 10, the segment length and the first %d bytes of the ULPDU (the DDP header the Terminate copies). m_done: one event per placed Read Response segment with L=1 (the last of its message, zero-length included), with its connection, STag, TO and length, in the cycle of its last DMA write or later, so the host can complete the Read (the block that carries it is offered on m_dma only while m_done_ready is high, and m_done only while that block can be taken: m_dma_valid and m_done_valid then depend on the other port's ready, which must not depend on its valid). A failed segment writes nothing at all. All output data is zero when its valid is low.", L, PlacementHdrBytes),
		fmt.Sprintf("Timing: a 4-stage pipeline (input register, decision, realignment, output register) that advances when the output register is empty or the channel its content is for is ready; s_axis_tready is that condition, low for one cycle while a segment's trailing host block is written (its payload ends in the block after its last input beat's block) unless the next first beat has no block to write, and low until init_done. %s The STag table is read when a segment's first beat leaves the input register, so a commit made before the first beat is accepted is seen. After reset the table's valid bits are cleared, one entry per cycle, before init_done rises.", holdDoc(L)),
	)
	m.Clock()
	m.ResetPort()
	tdata := m.Input("s_axis_tdata", W, "ULPDU bytes, lane 0 (bits 7:0) first on the wire")
	tkeep := m.Input("s_axis_tkeep", L, "lanes in use, contiguous from lane 0; all but the last beat are full")
	tvalid := m.Input("s_axis_tvalid", 1, "")
	tready := m.Output("s_axis_tready", 1, "")
	tlast := m.Input("s_axis_tlast", 1, "last beat of the ULPDU")
	uLen := m.Input("s_axis_tuser_len", 16, "ULPDU length (MPA ULPDU_Length), on every beat of the frame")
	uQP := m.Input("s_axis_tuser_qp", 32, "connection (stream) id")
	uPD := m.Input("s_axis_tuser_pd", 32, "protection domain of the connection")
	uRev := m.Input("s_axis_tuser_rev", 1, "1: DDP/RDMAP version 1 (RFC 5040/5041); 0: RDMA Consortium version 0")
	regWr := m.Input("reg_wr_valid", 1, "register write strobe")
	regAddr := m.Input("reg_wr_addr", rm.AddrBits, "register byte address (docs/regmap.md)")
	regData := m.Input("reg_wr_data", 32, "register write data")
	initDone := m.Output("init_done", 1, "the STag table is cleared and usable")
	dmaAddr := m.Output("m_dma_addr", 64, "host address of the block, a multiple of the data width in bytes")
	dmaData := m.Output("m_dma_data", W, "block data, lane i at address + i")
	dmaStrb := m.Output("m_dma_strb", L, "byte strobes")
	dmaValid := m.Output("m_dma_valid", 1, "")
	dmaQP := m.Output("m_dma_qp", 32, "the block's connection (a faulted write names its QP)")
	dmaReady := m.Input("m_dma_ready", 1, "")
	hData := m.Output("m_host_tdata", W, "untagged ULPDU bytes")
	hKeep := m.Output("m_host_tkeep", L, "lanes in use (bytes before len)")
	hLast := m.Output("m_host_tlast", 1, "")
	hValid := m.Output("m_host_tvalid", 1, "")
	hReady := m.Input("m_host_tready", 1, "")
	hQP := m.Output("m_host_qp", 32, "connection id, every beat")
	hLen := m.Output("m_host_len", 16, "ULPDU length, every beat")
	hOp := m.Output("m_host_opcode", 4, "RDMAP opcode, last beat")
	hDDPLast := m.Output("m_host_last", 1, "DDP L flag (last segment of the message), last beat")
	hQN := m.Output("m_host_qn", 2, "QN, last beat")
	hMSN := m.Output("m_host_msn", 32, "MSN, last beat")
	hMO := m.Output("m_host_mo", 32, "MO, last beat")
	hInv := m.Output("m_host_inv_stag", 32, "Invalidate STag (RsvdULP octets 1-4), last beat")
	tValid := m.Output("m_term_valid", 1, "a segment failed a check")
	tReady := m.Input("m_term_ready", 1, "")
	tCause := m.Output("m_term_cause", 16, "Layer (15:12), EType (11:8), Error Code (7:0)")
	tMDR := m.Output("m_term_mdr", 3, "Terminate Hdr Ctrl flags M (2), D (1), R (0)")
	tSegLen := m.Output("m_term_seglen", 16, "the failed ULPDU's length")
	tHdr := m.Output("m_term_hdr", 8*PlacementHdrBytes, "its first bytes (zero past len), byte 0 in bits 7:0")
	tQP := m.Output("m_term_qp", 32, "connection id")
	dValid := m.Output("m_done_valid", 1, "a Read Response message's last segment (L=1) is placed")
	dReady := m.Input("m_done_ready", 1, "")
	dQP := m.Output("m_done_qp", 32, "its connection")
	dSTag := m.Output("m_done_stag", 32, "its STag (the Read's sink)")
	dTO := m.Output("m_done_to", 64, "its tagged offset")
	dLen := m.Output("m_done_len", 16, "its ULPDU length")
	busy := m.Output("busy", 1, "a ULPDU beat taken is still inside (stage registers, output register, a last block to write): low means every m_done of the ULPDUs taken so far has been taken")
	// The card's ports (the standalone block leaves them idle): failures
	// found outside, a QP created anew, and each segment's decision.
	cfgDrop := m.Input("cfg_drop_after_fail", 1, "1: drop after a failure as CTRL.DROP_AFTER_FAIL does, whatever CTRL says (the card ties it high)")
	killV := m.Input("s_kill_valid", 1, "a connection failed outside placement (card_rx): its later segments are dropped as after a failure of placement's own; one taken every cycle")
	killQP := m.Input("s_kill_qp", 32, "")
	clrV := m.Input("s_clear_valid", 1, "a connection starts anew (QP_CMD CREATE): its failure is forgotten, as CONN_CLEAR does; taken every cycle")
	clrQP := m.Input("s_clear_qp", 32, "")
	decV := m.Output("m_dec_valid", 1, "a segment's first beat is decided (one pulse per segment, in order; no ready)")
	decDest := m.Output("m_dec_dest", 2, fmt.Sprintf("where it goes: %d DMA, %d dropped (zero-length tagged, or its connection failed), %d Terminate, %d m_host", PlaceDMA, PlaceDrop, PlaceTerm, PlaceHost))
	decDead := m.Output("m_dec_dead", 1, "it was dropped because its connection had failed")
	rdChk := m.Input("cfg_read_check", 1, "1: a Read Response is checked against the Reads outstanding on its connection (s_rd_issue; the card ties it high)")
	rdIssV := m.Input("s_rd_issue_valid", 1, fmt.Sprintf("an RDMA Read Request went out on a connection (below %d; card_tx): taken every cycle", 1<<placementRdQPBits))
	rdIssQP := m.Input("s_rd_issue_qp", placementRdQPBits, "")
	rdIssN := m.Input("s_rd_issue_count", 16, "the connection's Read Requests so far, plus one (its next Read Request MSN)")
	rdIssSTag := m.Input("s_rd_issue_stag", 32, "the Read's sink: its STag (the WQE's SGE LKEY; zero without an SGE)")
	rdIssTO := m.Input("s_rd_issue_to", 64, "... its first tagged offset (the SGE's ADDR)")
	rdIssLen := m.Input("s_rd_issue_len", 32, "... and its length (the Read's size)")

	var unused []Expr
	one, zero := C(1, 1), C(1, 0)
	lane := func(x *Signal, i int) Expr { return Bits(x, 8*i+7, 8*i) }
	dest := func(x *Signal, d uint64) Expr { return Eq(x, C(2, d)) }

	// Initialisation sweep: clear every valid bit after reset.
	initCnt := m.RegDecl("init_cnt", IW, "entry the reset sweep clears this cycle")
	initDoneR := m.RegDecl("init_done_r", 1, "the sweep is over")
	m.Drive(initCnt, big.NewInt(0), Add(initCnt, C(IW, 1)), Not(initDoneR))
	m.Drive(initDoneR, big.NewInt(0), one, And(Not(initDoneR), Eq(initCnt, Ones(IW))))
	m.Assign(initDone, initDoneR)

	// Output stage and the global advance.
	s3v := m.RegDecl("s3_valid", 1, "the output register holds a beat for a channel")
	s3dest := m.RegDecl("s3_dest", 2, "its channel: 1 DMA, 2 host, 3 Terminate")
	flush := m.RegDecl("flush_pend", 1, "the last host block of a segment is still to be written")
	s3strb := m.RegDecl("s3_strb", L, "DMA strobes, or the host keep")
	s3done := m.RegDecl("s3_done", 1, "the output register also holds a Read Response completion")
	chanOK := Or(And(dest(s3dest, PlaceDMA), Or(Not(RedOr(s3strb)), dmaReady)), And(dest(s3dest, PlaceHost), hReady),
		And(dest(s3dest, PlaceTerm), tReady), dest(s3dest, PlaceDrop))
	adv := m.WireOf("advance", Or(Not(s3v), And(chanOK, Or(Not(s3done), dReady))),
		"the output register is free this cycle")
	advUp := m.Wire("advance_up", 1, "the stages before the output register move")
	m.Assign(tready, And(advUp, initDoneR))
	fire := m.WireOf("s_fire", And(tvalid, advUp, initDoneR), "a beat is accepted")

	// Frame position and the length mask at the input.
	inSop := m.RegDecl("in_sop", 1, "the next beat starts a ULPDU")
	m.Drive(inSop, big.NewInt(1), tlast, fire)
	inBidx := m.RegDecl("in_bidx", 2, "index of the next beat in its ULPDU, saturating at 3")
	m.Drive(inBidx, big.NewInt(0), Sel(tlast, C(2, 0), Sel(Eq(inBidx, C(2, 3)), C(2, 3), Add(inBidx, C(2, 1)))), fire)
	inRem := m.RegDecl("in_rem", 16, "bytes of len not yet seen")
	curRem := m.WireOf("cur_rem", Sel(inSop, uLen, inRem), "bytes of len from this beat on")
	m.Drive(inRem, nil, Sel(Lt(curRem, C(16, uint64(L))), C(16, 0), Sub(curRem, C(16, uint64(L)))), fire)
	lm := make([]Expr, L)
	for i := 0; i < L; i++ {
		lm[L-1-i] = And(Bit(tkeep, i), Lt(C(16, uint64(i)), curRem))
	}
	keepEff := m.WireOf("keep_eff", Cat(lm...), "lanes in use and before len")
	dataEff := m.WireOf("data_eff", And(tdata, expand(keepEff)), "tdata with the other lanes zeroed")
	pm := make([]Expr, L)
	for i := 0; i < L; i++ {
		var hit Expr = zero
		for b := 0; b < 4; b++ {
			if b*L+i >= taggedHdr {
				hit = Or(hit, Eq(inBidx, C(2, uint64(b))))
			}
		}
		pm[L-1-i] = And(Bit(keepEff, i), hit)
	}
	pmask := m.WireOf("pay_mask", Cat(pm...), "lanes that are payload if the segment is tagged")

	// Stage 0: input register.
	type beat struct{ v, data, keep, pmask, last, sop, bidx *Signal }
	s0 := beat{}
	s0.v = m.RegDecl("s0_valid", 1, "stage 0 holds a beat")
	ld0 := m.WireOf("s0_load", And(advUp, fire), "")
	s0.data = m.Reg("s0_data", W, nil, dataEff, ld0, "")
	s0.keep = m.Reg("s0_keep", L, nil, keepEff, ld0, "")
	s0.pmask = m.Reg("s0_pmask", L, nil, pmask, ld0, "")
	s0.last = m.Reg("s0_last", 1, nil, tlast, ld0, "")
	s0.sop = m.Reg("s0_sop", 1, nil, inSop, ld0, "")
	s0.bidx = m.Reg("s0_bidx", 2, nil, inBidx, ld0, "")
	s0len := m.Reg("s0_len", 16, nil, uLen, ld0, "")
	s0qp := m.Reg("s0_qp", 32, nil, uQP, ld0, "")
	s0pd := m.Reg("s0_pd", 32, nil, uPD, ld0, "")
	s0rev := m.Reg("s0_rev", 1, nil, uRev, ld0, "")
	var hold Expr = zero
	if L < taggedHdr {
		hold = And(s0.sop, Not(s0.last))
	}
	s0move := m.WireOf("s0_move", And(s0.v, Or(Not(hold), fire)), "the stage 0 beat moves on (a first beat waits for the second)")
	m.Drive(s0.v, big.NewInt(0), Or(fire, And(s0.v, Not(s0move))), advUp)

	// STag table: read as a first beat moves from stage 0 to stage 1.
	idx := m.WireOf("s0_stag_index", Cat(lane(s0.data, 2), lane(s0.data, 3), lane(s0.data, 4)), "STag index bits of a first beat")
	rdEn := m.WireOf("table_rd", And(advUp, s0move), "")
	idxOK := m.Reg("s1_index_ok", 1, nil, Not(RedOr(Bits(idx, 23, IW))), rdEn, "the STag index is inside the table")

	// Register interface.
	hit := func(name string) Expr { return And(regWr, Eq(regAddr, C(rm.AddrBits, uint64(rm.Reg(name).Offset)))) }
	field := func(reg, f string) Expr {
		fl := rm.Field(reg, f)
		return Bits(regData, fl.Lo+fl.Width-1, fl.Lo)
	}
	stage := func(name string, w int, reg string, d Expr) *Signal {
		return m.Reg(name, w, big.NewInt(0), d, hit(reg), "staged by "+reg)
	}
	stIndex := stage("st_index", 24, "STAG_INDEX", field("STAG_INDEX", "INDEX"))
	stKey := stage("st_key", 8, "STAG_CTRL", field("STAG_CTRL", "KEY"))
	stAccess := stage("st_access", 4, "STAG_CTRL", field("STAG_CTRL", "ACCESS"))
	stPaged := stage("st_paged", 1, "STAG_CTRL", field("STAG_CTRL", "PAGED"))
	stValid := stage("st_valid", 1, "STAG_CTRL", field("STAG_CTRL", "VALID"))
	stPD := stage("st_pd", 32, "STAG_PD", regData)
	stQP := stage("st_qp", 32, "STAG_QP", regData)
	word := func(name string) *Signal { return stage(name, 32, stringsUpper(name), regData) }
	stBase := Cat(word("stag_base_hi"), word("stag_base_lo"))
	stLen := Cat(word("stag_len_hi"), word("stag_len_lo"))
	stAddr := Cat(word("stag_addr_hi"), word("stag_addr_lo"))
	stPBLFull := stage("st_pbl", 16, "STAG_PBL", field("STAG_PBL", "SLOT"))
	pblIndex := stage("pbl_index", 16, "PBL_INDEX", field("PBL_INDEX", "SLOT"))
	pblLo := stage("pbl_addr_lo", 20, "PBL_ADDR_LO", field("PBL_ADDR_LO", "PAGE"))
	pblHi := stage("pbl_addr_hi", 32, "PBL_ADDR_HI", regData)
	if PW < 16 {
		unused = append(unused, Bits(stPBLFull, 15, PW), Bits(pblIndex, 15, PW))
	}
	stIdxOK := Not(RedOr(Bits(stIndex, 23, IW)))
	commit := m.WireOf("commit", And(hit("STAG_COMMIT"), initDoneR, stIdxOK), "write the staged entry")
	invIdx := rm.Field("STAG_INVALIDATE", "INDEX")
	inval := m.WireOf("invalidate", And(hit("STAG_INVALIDATE"), initDoneR, Not(RedOr(Bits(regData, invIdx.Lo+invIdx.Width-1, IW)))), "clear one valid bit")
	unused = append(unused, Bits(regData, 31, invIdx.Lo+invIdx.Width))

	// Table word, least significant field first: access, paged, pd, qp, base, end, end wraps, delta, pbl, window.
	// The sums a lookup needs are made at commit time, off the lookup path:
	// END = BASE + LEN (and whether it wraps) and DELTA = ADDR - BASE - 14,
	// so that a segment's byte 0 translates to TO + DELTA. A commit writes
	// a region (window bit 0); card_tx's bind (the mop port) writes windows.
	stBaseW := m.WireOf("st_base", stBase, "")
	stEnd := m.WireOf("st_end", Add(stBaseW, stLen), "BASE + LEN")
	stDelta := Sub(Sub(stAddr, stBaseW), C(64, taggedHdr))
	entryData := Cat(C(1, 0), Bits(stPBLFull, PW-1, 0), stDelta, Lt(stEnd, stBaseW), stEnd, stBaseW, stQP, stPD, stPaged, stAccess)
	entryW := entryData.Width()
	// Table writes: the commit, the reset sweep (every word zeroed, so that
	// a bind finds the card model's zero entry at an index never written)
	// and the mop port's bind; valid bits and keys: the commit, the
	// register invalidation, the sweep, the mop port (bind, Local
	// Invalidate) and card_rx's invalidations (the receive key-check port's
	// s_inv), which yield to the others.
	mop := newMopWires(m, IW, entryW)
	regCmd := m.WireOf("reg_table_cmd", Or(hit("STAG_COMMIT"), hit("STAG_INVALIDATE")), "a register command writes the table this cycle")
	entEn := m.WireOf("ent_wr", Or(commit, Not(initDoneR), mop.entWr), "a table word is written")
	entAddr := m.WireOf("ent_wr_addr", Sel(Not(initDoneR), initCnt, Sel(commit, Bits(stIndex, IW-1, 0), mop.idx)), "")
	entData := m.WireOf("ent_wr_data", Sel(commit, entryData, gate(initDoneR, mop.ent)), "")
	entry := m.Mem("stag_table", entryW, cfg.TableDepth, entEn, entAddr, entData,
		rdEn, Bits(idx, IW-1, 0), "STag table: rights, mode, PD, QP, base, end, end wraps, address delta, page-list slot, window")
	rxk := placementRxKeyPort(m, IW, PW, initDoneR, Or(regCmd, mop.tagWr))
	tagEn := m.WireOf("tag_wr", Or(commit, inval, Not(initDoneR), rxk.inv, mop.tagWr), "a valid bit and key are written")
	tagAddr := m.WireOf("tag_wr_addr", Sel(Not(initDoneR), initCnt, Sel(commit, Bits(stIndex, IW-1, 0), Sel(inval, Bits(regData, IW-1, 0), Sel(mop.tagWr, mop.idx, rxk.invIdx)))), "")
	tagData := m.WireOf("tag_wr_data", Sel(mop.tagWr, mop.tag, Cat(And(commit, stValid, initDoneR), gate(commit, stKey))), "")
	tagRd := m.Mem("stag_tag", 9, cfg.TableDepth, tagEn, tagAddr, tagData, rdEn, Bits(idx, IW-1, 0), "valid bit and key of each entry (valid cleared by the reset sweep and by invalidation)")
	pblRdAddr := m.Wire("pbl_rd_addr", PW, "page-list slot of the block entering the output register")
	pblRd := m.Mem("page_list", 64-PageShift, cfg.PBLDepth, hit("PBL_COMMIT"), Bits(pblIndex, PW-1, 0),
		Cat(pblHi, pblLo), adv, pblRdAddr, "page list: host page addresses, bits 63:12")
	placementCheckPort(m, chkTable{iw: IW, pw: PW, depth: cfg.TableDepth, pblDepth: cfg.PBLDepth, entryW: entryW,
		entEn: entEn, entAddr: entAddr, entData: entData,
		tagEn: tagEn, tagAddr: tagAddr, tagData: tagData,
		pblEn: hit("PBL_COMMIT"), pblAddr: Bits(pblIndex, PW-1, 0), pblData: Cat(pblHi, pblLo), initDone: initDoneR,
		mop: mop, regCmd: regCmd})
	rxk.tables(entEn, entAddr, entData, tagEn, tagAddr, tagData, hit("PBL_COMMIT"), Bits(pblIndex, PW-1, 0), Cat(pblHi, pblLo))
	// A verdict of the check port stays true while this is low: card_tx
	// keeps its read ahead's verdicts until the table is written.
	m.Assign(m.Output("m_tbl_wr", 1, "the STag table or the page list is written this cycle (after init_done: a commit, an invalidation of any kind, a bind, a page-list commit); a check port verdict given before holds until it is"),
		Or(And(initDoneR, Or(entEn, tagEn)), hit("PBL_COMMIT")))

	// Stage 1: decision.
	s1 := beat{}
	s1.v = m.Reg("s1_valid", 1, big.NewInt(0), s0move, advUp, "stage 1 holds a beat")
	s1.data = m.Reg("s1_data", W, nil, s0.data, advUp, "")
	s1.keep = m.Reg("s1_keep", L, nil, s0.keep, advUp, "")
	s1.pmask = m.Reg("s1_pmask", L, nil, s0.pmask, advUp, "")
	s1.last = m.Reg("s1_last", 1, nil, s0.last, advUp, "")
	s1.sop = m.Reg("s1_sop", 1, nil, s0.sop, advUp, "")
	s1.bidx = m.Reg("s1_bidx", 2, nil, s0.bidx, advUp, "")
	s1len := m.Reg("s1_len", 16, nil, s0len, advUp, "")
	s1qp := m.Reg("s1_qp", 32, nil, s0qp, advUp, "")
	s1pd := m.Reg("s1_pd", 32, nil, s0pd, advUp, "")
	s1rev := m.Reg("s1_rev", 1, nil, s0rev, advUp, "")

	hb := make([]Expr, taggedHdr) // header bytes 0..13 of the segment whose first beat is in stage 1
	for k := 0; k < taggedHdr; k++ {
		if k < L {
			hb[k] = lane(s1.data, k)
		} else {
			hb[k] = gate(Not(s1.last), lane(s0.data, k-L))
		}
	}
	h0 := m.WireOf("h_ddp_ctl", hb[0], "DDP control byte")
	h1 := m.WireOf("h_rdmap_ctl", hb[1], "RDMAP control byte")
	tagged := m.WireOf("h_tagged", Bit(h0, 7), "")
	op := m.WireOf("h_opcode", Bits(h1, 3, 0), "")
	unused = append(unused, Bits(h0, 6, 2), Bits(h1, 5, 4))
	expVer := Cat(zero, s1rev)
	short := m.WireOf("e_short", Sel(tagged, Lt(s1len, C(16, taggedHdr)), Lt(s1len, C(16, untaggedHdr))), "shorter than its DDP header")
	verr := m.WireOf("e_version", Or(short, Ne(Bits(h0, 1, 0), expVer), Ne(Bits(h1, 7, 6), expVer)), "short, or wrong DV or RV")
	qn := m.WireOf("h_qn", Cat(hb[6], hb[7], hb[8], hb[9]), "QN (untagged)")
	qnBad := Or(RedOr(Bits(qn, 31, 2)), Eq(Bits(qn, 1, 0), C(2, 3)))
	qnErr := m.WireOf("e_qn", And(Not(verr), Not(tagged), qnBad), "untagged QN above 2")
	opIs := func(v uint64) Expr { return Eq(op, C(4, v)) }
	qnIs := func(v uint64) Expr { return Eq(qn, C(32, v)) }
	fits := Sel(tagged, Or(opIs(0), opIs(2)),
		Or(And(qnIs(0), Or(opIs(3), opIs(4), opIs(5), opIs(6))), And(qnIs(1), opIs(1)), And(qnIs(2), opIs(7))))
	opErr := m.WireOf("e_opcode", And(Not(verr), Not(qnErr), Not(fits)), "opcode reserved or not fitting T/QN")

	// Reads outstanding per connection (the card's, cfg_read_check): the
	// Read Requests card_tx sent (s_rd_issue, their count plus one) less
	// the Read Responses with L=1 placed, plus one; both read with the
	// STag table. A Read Response with none outstanding is refused (the
	// model's CheckReadResponse) before its STag is looked at.
	RQ := placementRdQPBits
	rdCWr := m.Wire("rd_done_wr", 1, "a Read Response with L=1 passes: its connection's count moves")
	rdCWrQP := m.Wire("rd_done_wr_qp", RQ, "")
	rdCWrV := m.Wire("rd_done_wr_v", 16, "")
	clrIss := m.RegDecl("rd_clr_iss", 1, "a cleared connection's Read Request count waits for a free write")
	clrDone := m.RegDecl("rd_clr_done", 1, "... and its Read Response count")
	clrQ := m.RegDecl("rd_clr_qp", RQ, "")
	issWrClr := m.WireOf("rd_iss_wr_clr", And(Or(clrV, clrIss), Not(rdIssV)), "")
	doneWrClr := m.WireOf("rd_done_wr_clr", And(Or(clrV, clrDone), Not(rdCWr)), "")
	clrAddr := m.WireOf("rd_clr_addr", Sel(Or(clrIss, clrDone), clrQ, Bits(clrQP, RQ-1, 0)), "")
	m.Drive(clrQ, nil, Bits(clrQP, RQ-1, 0), clrV)
	m.Drive(clrIss, big.NewInt(0), And(Or(clrV, clrIss), rdIssV), nil)
	m.Drive(clrDone, big.NewInt(0), And(Or(clrV, clrDone), rdCWr), nil)
	live := m.WireOf("rd_live", Not(m.Port("rst")), "no count moves in reset")
	issRd := m.Mem("rd_issued", 16, 1<<RQ, And(live, Or(rdIssV, issWrClr)), Sel(rdIssV, rdIssQP, clrAddr), Sel(rdIssV, rdIssN, C(16, 1)),
		rdEn, Bits(s0qp, RQ-1, 0), "per connection: Read Requests sent, plus one")
	doneRd := m.Mem("rd_done", 16, 1<<RQ, And(live, Or(rdCWr, doneWrClr)), Sel(rdCWr, rdCWrQP, clrAddr), Sel(rdCWr, rdCWrV, C(16, 1)),
		rdEn, Bits(s0qp, RQ-1, 0), "per connection: Read Responses with L=1 placed, plus one")
	// A count written in the cycle it was read for the next segment.
	doneFwd := m.Reg("s1_rd_done_fwd", 1, nil, And(rdCWr, Eq(rdCWrQP, Bits(s0qp, RQ-1, 0))), rdEn, "the segment's Read Response count was read as it was written")
	doneFwdV := m.Reg("s1_rd_done_fwd_v", 16, nil, rdCWrV, rdEn, "")
	doneCnt := m.WireOf("rd_done_cnt", Sel(doneFwd, doneFwdV, doneRd), "")
	unasked := m.WireOf("e_unasked", And(rdChk, Not(verr), Not(qnErr), Not(opErr), tagged, opIs(2), Eq(issRd, doneCnt)), "a Read Response with no Read outstanding")
	unused = append(unused, Bits(s0qp, 31, RQ))
	orqIn := placementORQIn{live: live, rdEn: rdEn, qp: Bits(s0qp, RQ-1, 0), s1QP: Bits(s1qp, RQ-1, 0), doneCnt: doneCnt,
		issV: rdIssV, issQP: rdIssQP, issN: rdIssN, sink: Cat(rdIssLen, rdIssTO, rdIssSTag), clrV: clrV, clrQP: Bits(clrQP, RQ-1, 0), clrQ: clrQ,
		progWr: m.Wire("orq_prog_wr", 1, "a Read Response passes: its Read's progress moves"), progLast: m.Wire("orq_prog_last", 1, ""),
		progNext: m.Wire("orq_prog_next", 64, ""), progLeft: m.Wire("orq_prog_left", 32, "")}
	orq := placementORQ(m, orqIn)
	unused = append(unused, orq.unused...)

	ef := stagEntryOf(entry, PW)
	eKey := m.WireOf("e_key", Bits(tagRd, 7, 0), "")
	eAcc := m.WireOf("e_access", ef.acc, "")
	ef.pd = m.WireOf("e_pd", ef.pd, "")
	ef.qp = m.WireOf("e_qp", ef.qp, "")
	ef.base = m.WireOf("e_base", ef.base, "")
	ef.end = m.WireOf("e_end", ef.end, "")
	ef.delta = m.WireOf("e_delta", ef.delta, "")
	ef.pbl = m.WireOf("e_pbl", ef.pbl, "")
	ePaged, eDelta, ePBL := ef.paged, ef.delta, ef.pbl
	unused = append(unused, Bit(eAcc, 1), Bit(eAcc, 3), ef.mw) // windows serve remote uses as regions do
	to := m.WireOf("h_to", Cat(hb[6], hb[7], hb[8], hb[9], hb[10], hb[11], hb[12], hb[13]), "tagged offset")
	payLen := m.WireOf("h_paylen", Sub(s1len, C(16, taggedHdr)), "tagged payload length")
	payZero := m.WireOf("h_payzero", Eq(payLen, C(16, 0)), "")
	end := m.WireOf("h_end", Add(to, Cat(C(48, 0), payLen)), "TO + payload length")
	cInv := m.WireOf("c_invalid", Or(Not(idxOK), Not(Bit(tagRd, 8)), Ne(eKey, Cat(hb[5]))), "index, valid bit or key")
	cAssoc := m.WireOf("c_assoc", ef.foreign(s1pd, s1qp), "PD or stream")
	cRights := m.WireOf("c_rights", Not(Sel(opIs(0), Bit(eAcc, 2), Bit(eAcc, 0))), "remote write (Write) or local write (Read Response)")
	cWrap := m.WireOf("c_wrap", Lt(end, to), "TO + length wraps")
	cBounds := m.WireOf("c_bounds", ef.outside(to, end), "outside [BASE, BASE+LEN)")
	memErr := m.WireOf("e_stag", And(Not(verr), Not(qnErr), Not(opErr), tagged, Not(payZero),
		Or(cInv, cAssoc, cRights, cWrap, cBounds)), "the STag check fails")
	// A Read Response against the oldest outstanding Read, before the
	// STag table's check, in the model's order: with payload, the sink's
	// STag, then its next TO and what is left of it; then a last segment
	// must end the Read.
	rrChk := m.WireOf("rr_check", And(rdChk, Not(verr), Not(qnErr), Not(opErr), tagged, opIs(2), Not(unasked)), "a Read Response with a Read outstanding")
	hSTag := m.WireOf("h_stag", Cat(hb[2], hb[3], hb[4], hb[5]), "STag (tagged)")
	payLen32 := zext(payLen, 32)
	rrSTag := m.WireOf("e_rr_stag", And(rrChk, Not(payZero), Ne(hSTag, orq.stag)), "not the Read's sink STag")
	rrPlace := m.WireOf("e_rr_place", And(rrChk, Not(payZero), Or(Ne(to, orq.to), Lt(orq.left, payLen32))), "not at the sink's next TO, or past its end")
	rrShort := m.WireOf("e_rr_short", And(rrChk, Bit(h0, 6), Ne(orq.left, payLen32)), "the Read's last segment, and bytes of it are missing")
	fail := m.WireOf("e_fail", Or(verr, qnErr, opErr, unasked, rrSTag, rrPlace, memErr, rrShort), "the segment fails")
	cc := func(v uint64) Expr { return C(16, v) }
	memCause := Sel(cInv, cc(causeDDPInvalidSTag), Sel(cAssoc, cc(causeDDPNotAssociated), Sel(cRights, cc(causeDDPInvalidSTag),
		Sel(cWrap, cc(causeDDPTOWrap), cc(causeDDPBaseBounds)))))
	cause := m.WireOf("e_cause", Sel(verr, Sel(Or(short, Ne(Bits(h0, 1, 0), expVer)), Sel(tagged, cc(causeDDPTaggedVersion), cc(causeDDPUntaggedVersion)), cc(causeRDMAPInvalidVersion)),
		Sel(qnErr, cc(causeDDPInvalidQN), Sel(opErr, cc(causeRDMAPUnexpectedOpcod), Sel(unasked, cc(causeDDPLocalCatastrophic),
			Sel(rrSTag, cc(causeDDPInvalidSTag), Sel(Or(rrPlace, rrShort), cc(causeDDPBaseBounds), memCause)))))),
		"Terminate cause when the segment fails")
	md := m.WireOf("e_md", Or(qnErr, And(memErr, Not(unasked)), rrSTag, rrPlace, rrShort), "the Terminate copies the segment length and DDP header")

	// Connections with a failed segment: every later segment of theirs is
	// dropped silently (RFC 5041 §7.1) until the host clears them. A small
	// set of slots, filled in turn; a host clear empties the matching slots,
	// and a failure recorded in the same cycle wins its own slot.
	clearQP := m.WireOf("conn_clear", hit("CONN_CLEAR"), "the host clears the connection on reg_wr_data")
	dropFld := rm.Field("CTRL", "DROP_AFTER_FAIL")
	dropReg := m.Reg("ctrl_drop", 1, big.NewInt(0), Bit(regData, dropFld.Lo), hit("CTRL"), "CTRL.DROP_AFTER_FAIL")
	dropOn := m.WireOf("drop_on", Or(dropReg, cfgDrop), "")
	fsPtr := m.RegDecl("fail_ptr", log2(PlacementFailSlots), "slot the next failure takes")
	var inFail, inKill []Expr
	record := m.Wire("fail_record", 1, "a first segment failure of its connection is recorded this cycle")
	killRec := m.Wire("kill_record", 1, "an outside failure is recorded this cycle (in the slot after record's when both are)")
	N := PlacementFailSlots
	for k := 0; k < N; k++ {
		at := func(j int) Expr { return Eq(fsPtr, C(fsPtr.W, uint64((j+N)%N))) }
		take := m.WireOf(fmt.Sprintf("fail_take%d", k), And(record, at(k)), "")
		ktake := m.WireOf(fmt.Sprintf("kill_take%d", k), And(killRec, Sel(record, at(k-1), at(k))), "")
		fq := m.Reg(fmt.Sprintf("fail_qp%d", k), 32, nil, Sel(take, s1qp, killQP), Or(take, ktake), "")
		fv := m.RegDecl(fmt.Sprintf("fail_valid%d", k), 1, "")
		m.Drive(fv, big.NewInt(0), Or(take, ktake, And(fv, Not(And(clearQP, Eq(fq, regData))), Not(And(clrV, Eq(fq, clrQP))))), nil)
		inFail = append(inFail, And(fv, Eq(fq, s1qp)))
		inKill = append(inKill, And(fv, Eq(fq, killQP)))
	}
	// The same cycle's outside failure of the segment's connection counts
	// (and then the segment records none of its own).
	killNow := m.WireOf("kill_now", And(killV, Eq(killQP, s1qp)), "")
	failedConn := m.WireOf("conn_failed", And(dropOn, Or(RedOr(Cat(inFail...)), killNow)), "the segment's connection already failed")
	m.Assign(record, And(advUp, s1.v, s1.sop, fail, dropOn, Not(failedConn)))
	m.Assign(killRec, And(killV, Not(RedOr(Cat(inKill...)))))
	m.Drive(fsPtr, big.NewInt(0), Add(Add(fsPtr, zext(record, fsPtr.W)), zext(killRec, fsPtr.W)), nil)
	dst := m.WireOf("e_dest", Sel(failedConn, C(2, PlaceDrop), Sel(fail, C(2, PlaceTerm), Sel(tagged, Sel(payZero, C(2, PlaceDrop), C(2, PlaceDMA)), C(2, PlaceHost)))), "")
	vm := m.WireOf("t_vm", Add(to, eDelta), "translated offset of the segment's byte 0 (contiguous: its host address)")
	rot := m.WireOf("t_rot", Bits(vm, LB-1, 0), "lane rotation from input to host blocks")
	lo := make([]Expr, L)
	for i := 0; i < L; i++ {
		lo[L-1-i] = zero // lane L-1 is never below rot
		if i < L-1 {
			lo[L-1-i] = Lt(C(LB, uint64(i)), rot)
		}
	}
	loMask := m.WireOf("t_lomask", Cat(lo...), "host lanes filled from the previous input beat")
	vbase := m.WireOf("t_vbase", Cat(Bits(vm, 63, LB), C(LB, 0)), "host block of the segment's first beat")

	// Stage 2: decided beats with their segment's context.
	s2 := beat{}
	s2.v = m.Reg("s2_valid", 1, big.NewInt(0), s1.v, advUp, "stage 2 holds a beat")
	s2.data = m.Reg("s2_data", W, nil, s1.data, advUp, "")
	s2.keep = m.Reg("s2_keep", L, nil, s1.keep, advUp, "")
	s2.pmask = m.Reg("s2_pmask", L, nil, s1.pmask, advUp, "")
	s2.last = m.Reg("s2_last", 1, nil, s1.last, advUp, "")
	s2.sop = m.Reg("s2_sop", 1, nil, s1.sop, advUp, "")
	s2.bidx = m.Reg("s2_bidx", 2, nil, s1.bidx, advUp, "")
	ctxEn := m.WireOf("s2_ctx_load", And(advUp, s1.v, s1.sop), "a first beat enters stage 2 with its decision")
	m.Assign(decV, ctxEn)
	m.Assign(decDest, gate(ctxEn, dst))
	m.Assign(decDead, And(ctxEn, failedConn))
	s2dest := m.Reg("s2_dest", 2, nil, dst, ctxEn, "")
	s2cause := m.Reg("s2_cause", 16, nil, cause, ctxEn, "")
	s2md := m.Reg("s2_md", 1, nil, md, ctxEn, "")
	done := And(tagged, opIs(2), Bit(h0, 6), Not(fail), Not(failedConn))
	m.Assign(rdCWr, And(ctxEn, done))
	m.Assign(rdCWrQP, Bits(s1qp, RQ-1, 0))
	m.Assign(rdCWrV, Add(doneCnt, C(16, 1)))
	m.Assign(orqIn.progWr, And(ctxEn, tagged, opIs(2), Not(fail), Not(failedConn), Or(Bit(h0, 6), Not(payZero))))
	m.Assign(orqIn.progLast, Bit(h0, 6))
	m.Assign(orqIn.progNext, end)
	m.Assign(orqIn.progLeft, Sub(orq.left, payLen32))
	s2done := m.Reg("s2_done", 1, nil, done, ctxEn, "a Read Response with L=1: report it once placed")
	s2rot := m.Reg("s2_rot", LB, nil, rot, ctxEn, "")
	s2lo := m.Reg("s2_lomask", L, nil, loMask, ctxEn, "")
	s2vbase := m.Reg("s2_vbase", 64, nil, vbase, ctxEn, "")
	s2paged := m.Reg("s2_paged", 1, nil, ePaged, ctxEn, "")
	s2pbl := m.Reg("s2_pbl", PW, nil, ePBL, ctxEn, "")
	s2len := m.Reg("s2_len", 16, nil, s1len, ctxEn, "")
	s2qp := m.Reg("s2_qp", 32, nil, s1qp, ctxEn, "")

	// Realignment: rotate the beat (and its payload mask) up by rot lanes.
	curR := rotateLanes(m, "r_data", s2.data, s2rot, 8)
	curRm := rotateLanes(m, "r_mask", s2.pmask, s2rot, 1)
	prevR := m.Reg("prev_data", W, nil, curR, And(advUp, s2.v), "previous beat, rotated")
	prevRm := m.Reg("prev_mask", L, nil, curRm, And(advUp, s2.v), "its payload lanes, rotated")
	prevEff := m.WireOf("prev_mask_eff", gate(Not(s2.sop), prevRm), "")
	blkStrb := m.WireOf("blk_strb", Or(And(s2lo, prevEff), And(Not(s2lo), curRm)), "payload lanes of the host block")
	blkData := m.WireOf("blk_data", Or(And(expand(s2lo), prevR), And(Not(expand(s2lo)), curR)), "")
	flStrb := m.Reg("flush_strb", L, nil, And(curRm, s2lo), And(advUp, s2.v), "lanes of the block after the last beat")
	isDMA := m.WireOf("s2_is_dma", And(s2.v, dest(s2dest, PlaceDMA)), "")
	// While a trailing block is written, a first beat that writes nothing
	// (its payload starts in the next host block, or a zero-length segment)
	// moves on at the same time, so steady streams of one alignment keep one
	// beat per cycle.
	spill := m.WireOf("spill", And(isDMA, s2.last, RedOr(And(curRm, s2lo))), "the segment's last beat leaves a trailing block")
	doneNow := m.WireOf("done_now", And(s2.v, s2.last, s2done, Not(spill)), "the completion goes with this beat")
	merge := m.WireOf("merge", And(flush, s2.v, s2.sop, Not(And(s2.last, s2done)), Or(dest(s2dest, PlaceDrop), And(dest(s2dest, PlaceDMA), Not(RedOr(blkStrb))))),
		"a first beat that writes nothing moves on beside the trailing block")
	m.Assign(advUp, And(adv, Or(Not(flush), merge)))
	m.Drive(flush, big.NewInt(0), And(advUp, spill), adv)
	flDone := m.Reg("flush_done", 1, nil, And(s2done, spill), And(advUp, s2.v), "the completion goes with the trailing block")
	flPaged := m.Reg("flush_paged", 1, nil, s2paged, And(advUp, s2.v), "translation of the trailing block")
	flPBL := m.Reg("flush_pbl", PW, nil, s2pbl, And(advUp, s2.v), "")

	// Stage 3: the output register.
	s3data := m.RegDecl("s3_data", W, "")
	s3last := m.RegDecl("s3_last", 1, "")
	s3vblk := m.RegDecl("s3_vblk", 64, "translated offset of the host block")
	vnext := m.RegDecl("vnext", 64, "translated offset of the segment's next host block")
	out := Sel(dest(s2dest, PlaceDMA), RedOr(blkStrb), Sel(dest(s2dest, PlaceHost), one, Sel(dest(s2dest, PlaceTerm), s2.last, zero)))
	m.Drive(s3v, big.NewInt(0), Or(flush, And(s2.v, out), doneNow), adv)
	m.Assign(busy, Or(s0.v, s1.v, s2.v, s3v, flush))
	m.Drive(s3done, nil, Sel(flush, flDone, doneNow), adv)
	m.Drive(s3dest, nil, Sel(flush, C(2, PlaceDMA), s2dest), adv)
	m.Drive(s3data, nil, Sel(flush, prevR, Sel(dest(s2dest, PlaceDMA), blkData, s2.data)), adv)
	m.Drive(s3strb, nil, Sel(flush, flStrb, Sel(dest(s2dest, PlaceDMA), blkStrb, s2.keep)), adv)
	m.Drive(s3last, nil, And(Not(flush), s2.last), adv)
	nextVblk := m.WireOf("next_vblk", Sel(Or(flush, Not(s2.sop)), vnext, s2vbase), "")
	m.Drive(s3vblk, nil, nextVblk, adv)
	m.Drive(vnext, nil, Add(Sel(merge, s2vbase, nextVblk), C(64, uint64(L))), And(adv, Or(flush, s2.v)))
	ld3 := m.WireOf("s3_ctx_load", And(advUp, s2.v, Not(flush)), "a beat enters the output register")
	s3cause := m.Reg("s3_cause", 16, nil, s2cause, ld3, "")
	s3md := m.Reg("s3_md", 1, nil, s2md, ld3, "")
	s3paged := m.Reg("s3_paged", 1, nil, Sel(flush, flPaged, s2paged), adv, "")
	s3len := m.Reg("s3_len", 16, nil, s2len, ld3, "")
	s3qp := m.Reg("s3_qp", 32, nil, s2qp, ld3, "")
	m.Assign(pblRdAddr, pageSlot(Sel(flush, flPBL, s2pbl), nextVblk, PW))
	// Header copy: the first PlacementHdrBytes bytes of the segment in the output register.
	s3hdr := m.RegDecl("s3_hdr", 8*PlacementHdrBytes, "first bytes of the segment, byte 0 in bits 7:0")
	hp := make([]Expr, PlacementHdrBytes)
	for k := 0; k < PlacementHdrBytes; k++ {
		hp[PlacementHdrBytes-1-k] = Sel(Eq(s2.bidx, C(2, uint64(k/L))), lane(s2.data, k%L),
			Sel(s2.sop, C(8, 0), lane(s3hdr, k)))
	}
	m.Drive(s3hdr, nil, Cat(hp...), ld3)

	// Outputs.
	// A block that also completes a Read Response is offered on m_dma only
	// while m_done can be taken, and m_done only while the block can: the
	// output register stays until both are, so neither is taken twice.
	dmaV := m.WireOf("dma_v", And(s3v, dest(s3dest, PlaceDMA), RedOr(s3strb), Or(Not(s3done), dReady)), "")
	doneV := m.WireOf("done_v", And(s3v, s3done, chanOK), "")
	m.Assign(dValid, doneV)
	m.Assign(dQP, gate(doneV, s3qp))
	m.Assign(dSTag, gate(doneV, Cat(lane(s3hdr, 2), lane(s3hdr, 3), lane(s3hdr, 4), lane(s3hdr, 5))))
	m.Assign(dTO, gate(doneV, Cat(lane(s3hdr, 6), lane(s3hdr, 7), lane(s3hdr, 8), lane(s3hdr, 9), lane(s3hdr, 10), lane(s3hdr, 11), lane(s3hdr, 12), lane(s3hdr, 13))))
	m.Assign(dLen, gate(doneV, s3len))
	hostV := m.WireOf("host_v", And(s3v, dest(s3dest, PlaceHost)), "")
	termV := m.WireOf("term_v", And(s3v, dest(s3dest, PlaceTerm)), "")
	hostEnd := m.WireOf("host_end", And(hostV, s3last), "")
	addr := hostAddr(s3paged, pblRd, s3vblk)
	m.Assign(dmaValid, dmaV)
	m.Assign(dmaAddr, gate(dmaV, addr))
	m.Assign(dmaData, And(s3data, expand(s3strb), Rep(dmaV, W)))
	m.Assign(dmaStrb, gate(dmaV, s3strb))
	m.Assign(dmaQP, gate(dmaV, s3qp))
	m.Assign(hValid, hostV)
	m.Assign(hData, gate(hostV, s3data))
	m.Assign(hKeep, gate(hostV, s3strb))
	m.Assign(hLast, hostEnd)
	m.Assign(hQP, gate(hostV, s3qp))
	m.Assign(hLen, gate(hostV, s3len))
	hbyte := func(k int) Expr { return lane(s3hdr, k) }
	m.Assign(hOp, gate(hostEnd, Bits(s3hdr, 11, 8)))
	m.Assign(hDDPLast, And(hostEnd, Bit(s3hdr, 6)))
	m.Assign(hQN, gate(hostEnd, Bits(s3hdr, 8*9+1, 8*9)))
	m.Assign(hMSN, gate(hostEnd, Cat(hbyte(10), hbyte(11), hbyte(12), hbyte(13))))
	m.Assign(hMO, gate(hostEnd, Cat(hbyte(14), hbyte(15), hbyte(16), hbyte(17))))
	m.Assign(hInv, gate(hostEnd, Cat(hbyte(2), hbyte(3), hbyte(4), hbyte(5))))
	m.Assign(tValid, termV)
	m.Assign(tCause, gate(termV, s3cause))
	m.Assign(tMDR, gate(termV, Cat(s3md, s3md, zero)))
	m.Assign(tSegLen, gate(termV, s3len))
	m.Assign(tHdr, gate(termV, s3hdr))
	m.Assign(tQP, gate(termV, s3qp))
	m.WireOf("unused_bits", RedOr(Cat(unused...)), "bits no logic reads (keeps lint quiet on purpose)")
	return m, m.Validate()
}

func holdDoc(lanes int) string {
	if lanes >= taggedHdr {
		return "Every beat moves on as soon as the pipeline advances: its output shows 4 cycles after the cycle it is accepted in."
	}
	return fmt.Sprintf("A ULPDU's first beat waits in the input register until its second beat is accepted (or it is the last), so the decision sees header bytes 0-%d; other beats move on at once; a beat's output shows 4 cycles after the cycle it is accepted in.", taggedHdr-1)
}

// stringsUpper is strings.ToUpper for the ASCII register names.
func stringsUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// rotateLanes rotates x (lanes of laneBits bits, lane 0 in the low bits) up
// by amt lanes: lane i moves to lane (i + amt) mod lanes. A log-depth tree
// of 2:1 multiplexers, one level per bit of amt.
func rotateLanes(m *Module, name string, x *Signal, amt *Signal, laneBits int) *Signal {
	cur := x
	w := x.W
	for b := 0; b < amt.W; b++ {
		k := (1 << b) * laneBits
		rot := Cat(Bits(cur, w-1-k, 0), Bits(cur, w-1, w-k))
		cur = m.WireOf(fmt.Sprintf("%s_%d", name, b), Sel(Bit(amt, b), rot, cur), fmt.Sprintf("rotated by bit %d of the amount", b))
	}
	return cur
}

// stagEntry is a word of the STag table (stag_table and the check ports'
// copies), as Placement writes it, least significant field first: access
// rights 3:0, paged 4, PD 36:5, QP 68:37, BASE 132:69, END = BASE + LEN
// 196:133, END wraps 197, DELTA = ADDR - BASE - 14 261:198, page-list slot
// from 262, then the window bit (a bind wrote it: remote access only).
// Every reader decodes it here.
type stagEntry struct {
	acc, paged, pd, qp, base, end, wrap, delta, pbl, mw Expr
}

// stagEntryOf splits the table word e (pw page-list slot bits) into its
// fields.
func stagEntryOf(e *Signal, pw int) stagEntry {
	return stagEntry{
		acc: Bits(e, 3, 0), paged: Bit(e, 4), pd: Bits(e, 36, 5), qp: Bits(e, 68, 37),
		base: Bits(e, 132, 69), end: Bits(e, 196, 133), wrap: Bit(e, 197), delta: Bits(e, 261, 198),
		pbl: Bits(e, 262+pw-1, 262), mw: Bit(e, 262+pw),
	}
}

// foreign is mem.Check's "not associated": another PD, or bound to a QP
// other than qp.
func (e stagEntry) foreign(pd, qp Expr) Expr {
	return Or(Ne(e.pd, pd), And(Ne(e.qp, C(32, 0)), Ne(e.qp, qp)))
}

// keyBad is mem.Check's "invalid STag" for an index in range (idxOK), the
// entry's valid bit and key (tag, 9 bits) and the STag's key.
func keyBad(idxOK Expr, tag *Signal, key Expr) Expr {
	return Or(Not(idxOK), Not(Bit(tag, 8)), Ne(Bits(tag, 7, 0), key))
}

// translate is the entry's translation of tagged offset to: the host
// address of a contiguous region, the offset into the pages of a paged one.
func (e stagEntry) translate(to Expr) Expr { return Add(Add(to, e.delta), C(64, taggedHdr)) }

// pageSlot is the page-list slot of translated offset vm in a region whose
// list starts at slot base (pw slot bits).
func pageSlot(base Expr, vm *Signal, pw int) Expr {
	return Add(base, Bits(vm, PageShift+pw-1, PageShift))
}

// hostAddr is the host address of translated offset vm: in page (its page
// list's entry) when paged, else vm itself.
func hostAddr(paged, page Expr, vm *Signal) Expr {
	return Sel(paged, Cat(page, Bits(vm, PageShift-1, 0)), vm)
}

// outside is mem.Check's base-and-bounds fault for [to, end).
func (e stagEntry) outside(to, end Expr) Expr {
	return Or(Lt(to, e.base), Lt(e.end, end), e.wrap)
}
