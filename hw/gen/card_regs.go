package gen

import (
	"fmt"
	"math/big"
	"strings"
)

// CardRegsWidths lists the data-path widths card_regs is generated for (the
// register block itself is 32 bits wide; the width only shows in
// CAPS_DATAPATH.WIDTH_BYTES).
var CardRegsWidths = []int{64, 512}

// CardRegsDBDepth is the depth of card_regs' doorbell FIFO.
const CardRegsDBDepth = 4

// AXI responses.
const (
	axiOkay   = 0
	axiSlvErr = 2
)

// cardRegConsts are the values of the card's constant read-only registers,
// by "REGISTER.FIELD", taken from the spec's constants.
func cardRegConsts(width int) map[string]uint64 {
	return map[string]uint64{
		"ID.VENDOR": CardVendorID, "ID.DEVICE": CardDeviceID,
		"VERSION.MINOR": CardVersion & 0xFFFF, "VERSION.MAJOR": CardVersion >> 16,
		"CAPS_DATAPATH.WIDTH_BYTES": uint64(width / 8), "CAPS_DATAPATH.MAX_SGE": CardMaxSGE,
		"CAPS_DATAPATH.MAX_WQE_BBS": CardMaxWQEBBs, "CAPS_DATAPATH.MAX_RD": CardMaxRd,
		"CAPS_OBJECTS.LOG_QP": uint64(log2(CardMaxQP)), "CAPS_OBJECTS.LOG_CQ": uint64(log2(CardMaxCQ)),
		"CAPS_OBJECTS.LOG_STAG": uint64(log2(CardSTags)), "CAPS_OBJECTS.LOG_QUEUE": CardMaxQueLog,
		"CAPS_INLINE.MAX_INLINE": CardMaxInline, "CAPS_INLINE.PUSH_INLINE": CardPushInline,
		"CAPS_RING.MIN_LOG": CardMinRingLog, "CAPS_RING.MAX_LOG": CardMaxRingLog,
	}
}

// CardRegPort is the port name of a register field of card_regs: the
// register and field names in lower case ("QP_SIZES", "SQ_LOG" ->
// "qp_sizes_sq_log"), or the register's alone when it has no fields.
func CardRegPort(r Reg, f *RegField) string {
	if f == nil {
		return strings.ToLower(r.Name)
	}
	return strings.ToLower(r.Name + "_" + f.Name)
}

// regFields are a register's fields, or one 32-bit field when it has none.
func regFields(r Reg) []*RegField {
	if len(r.Fields) == 0 {
		return []*RegField{nil}
	}
	fs := make([]*RegField, len(r.Fields))
	for i := range r.Fields {
		fs[i] = &r.Fields[i]
	}
	return fs
}

func fieldLoW(f *RegField) (int, int) {
	if f == nil {
		return 0, 32
	}
	return f.Lo, f.Width
}

// packFields places each field's expression at its bits of a 32-bit word
// (zero elsewhere).
func packFields(fs []*RegField, vals []Expr) Expr {
	var word Expr = C(32, 0)
	for i, f := range fs {
		lo, w := fieldLoW(f)
		var parts []Expr
		if lo+w < 32 {
			parts = append(parts, C(32-lo-w, 0))
		}
		parts = append(parts, vals[i])
		if lo > 0 {
			parts = append(parts, C(lo, 0))
		}
		word = Or(word, Cat(parts...))
	}
	return word
}

// CardDBKind returns the DB_KIND value of register reg of doorbell array arr.
func CardDBKind(arr, reg string) (uint64, error) { return cardEnum("DB_KIND", arr+"_"+reg) }

// cardEnum returns the value called name of the card enum called enum.
func cardEnum(enum, name string) (uint64, error) {
	for _, e := range CardEnums() {
		if e.Name != enum {
			continue
		}
		for _, v := range e.Values {
			if v.Name == name {
				return v.Value, nil
			}
		}
	}
	return 0, fmt.Errorf("%w: card: no %s value %s", ErrInvalid, enum, name)
}

// CardPushReg is the register of the QP_DB array whose window of CardBB
// bytes receives pushed basic blocks.
const CardPushReg = "PUSH"

// CardRegs builds card_regs_w<width>: the card's BAR0 slave, decoded from
// CardRegMap.
func CardRegs(width int) (*Module, error) {
	if width != 64 && width != 128 && width != 256 && width != 512 {
		return nil, fmt.Errorf("%w: card_regs width %d (64, 128, 256 or 512)", ErrInvalid, width)
	}
	rm := CardRegMap()
	if err := rm.Validate(); err != nil {
		return nil, err
	}
	consts := cardRegConsts(width)
	A := rm.AddrBits
	m := NewModule(fmt.Sprintf("card_regs_w%d", width), "AMBA AXI4-Lite slave; docs/card.md (BAR0)",
		"BAR0 register slave of the card, decoded from the register map of hw/gen/card_spec.go (docs/card.md): 32-bit AXI4-Lite, 18-bit byte addresses. One write and one read can be accepted per cycle; each is answered in the next cycle (bvalid, rvalid), and the answer stays until taken. awready and wready rise together, only while both awvalid and wvalid are high and the write can be taken: the B channel is free (bvalid low or bready high), no command is waiting for its ready, and a doorbell or push write finds room (the doorbell FIFO is not full; no pushed block is still waiting in it). arready is high while the R channel is free (rvalid low or rready high).",
		"Reads: read-only registers show the spec's constants (ID, VERSION, CAPS_*) or the status inputs (STATUS, DMA_FAULT_*, CMD_STATUS) sampled in the cycle the read is accepted; staging registers read back their field bits (other bits 0). Command registers, doorbells, the push window and the placement window are write only and read 0, as do unmapped addresses; every read answers OKAY (a PCIe completer abort for a stray read is harder on a host than a zero).",
		"Writes: staging registers honour wstrb byte by byte and drive their fields as outputs (<register>_<field>). A command register written with all four strobes raises <register>_valid with its fields until <register>_ready (no further write is taken meanwhile, so the staged context stays put). A placement window write with all strobes is forwarded the next cycle on reg_wr_valid/addr/data. A doorbell write with all strobes enters the doorbell FIFO, which drives m_db (kind from DB_KIND, index = CQ or QP number, the written value). Partial writes to a command, a doorbell, the push window or the placement window are dropped and answered SLVERR (they are whole 32-bit words by definition); writes to read-only or unmapped addresses are ignored and answered OKAY.",
		fmt.Sprintf("Push: one push at a time. Word 0 (offset 0x40) of any QP's push window starts a push owned by that QP; word k is kept if the previous word of the same push was k-1 of the same QP; the last word (0x7C) posts a QP_DB_PUSH doorbell whose m_db_push_ok says whether all %d words came in order from that QP (m_db_push_data then holds the block, word 0 in bits 31:0); otherwise the consumer reads the block from the SQ. The doorbell is never lost. Push writes wait while a pushed doorbell is still in the FIFO.", CardBB/4),
		"Outputs that belong to a valid (command fields, m_db_*, reg_wr_addr/data, rdata, bresp) read zero while it is low.",
	)
	m.Clock()
	rst := m.ResetPort()
	awaddr := m.Input("s_axil_awaddr", A, "write address (byte address; bits 1:0 ignored)")
	awvalid := m.Input("s_axil_awvalid", 1, "")
	awready := m.Output("s_axil_awready", 1, "")
	wdata := m.Input("s_axil_wdata", 32, "")
	wstrb := m.Input("s_axil_wstrb", 4, "byte strobes")
	wvalid := m.Input("s_axil_wvalid", 1, "")
	wready := m.Output("s_axil_wready", 1, "")
	bresp := m.Output("s_axil_bresp", 2, "0 OKAY, 2 SLVERR (a partial write of a whole-word register)")
	bvalid := m.Output("s_axil_bvalid", 1, "")
	bready := m.Input("s_axil_bready", 1, "")
	araddr := m.Input("s_axil_araddr", A, "read address (bits 1:0 ignored)")
	arvalid := m.Input("s_axil_arvalid", 1, "")
	arready := m.Output("s_axil_arready", 1, "")
	rdata := m.Output("s_axil_rdata", 32, "")
	rresp := m.Output("s_axil_rresp", 2, "always OKAY")
	rvalid := m.Output("s_axil_rvalid", 1, "")
	rready := m.Input("s_axil_rready", 1, "")

	one, zero := C(1, 1), C(1, 0)
	var unused []Expr
	unused = append(unused, Bits(awaddr, 1, 0), Bits(araddr, 1, 0))

	wa := m.WireOf("wr_word", Bits(awaddr, A-1, 2), "word address of the write")
	ra := m.WireOf("rd_word", Bits(araddr, A-1, 2), "word address of the read")
	hitW := func(off uint32) Expr { return Eq(wa, C(A-2, uint64(off>>2))) }
	hitR := func(off uint32) Expr { return Eq(ra, C(A-2, uint64(off>>2))) }
	full := m.WireOf("wr_full", RedAnd(wstrb), "all four strobes")
	bm := m.WireOf("wr_mask", Cat(Rep(Bit(wstrb, 3), 8), Rep(Bit(wstrb, 2), 8), Rep(Bit(wstrb, 1), 8), Rep(Bit(wstrb, 0), 8)), "strobes per bit")
	wrGo := m.Wire("wr_go", 1, "a write is taken this cycle")
	bvq := m.RegDecl("bvalid_q", 1, "a write response is waiting")
	rvq := m.RegDecl("rvalid_q", 1, "a read response is waiting")
	arOK := m.WireOf("rd_free", Or(Not(rvq), rready), "the R channel can take a response")
	arGo := m.WireOf("rd_go", And(arvalid, arOK), "a read is taken this cycle")

	// Plain registers: constants, status inputs, staging registers, commands.
	var readVals []Expr // values of readable registers, already gated by their hit
	var wholeWord []Expr
	var cmdBusy []Expr
	for _, r := range rm.Regs {
		fs := regFields(r)
		switch {
		case r.ReadOnly:
			vals := make([]Expr, len(fs))
			nconst := 0
			for i, f := range fs {
				_, w := fieldLoW(f)
				key := r.Name
				if f != nil {
					key += "." + f.Name
				}
				if v, ok := consts[key]; ok {
					if v>>w != 0 {
						return nil, fmt.Errorf("%w: card_regs: %s = %d does not fit in %d bits", ErrInvalid, key, v, w)
					}
					vals[i] = C(w, v)
					nconst++
				} else {
					vals[i] = m.Input(CardRegPort(r, f), w, "status: "+firstSentence(r.Doc))
				}
			}
			if nconst != 0 && nconst != len(fs) {
				return nil, fmt.Errorf("%w: card_regs: %s is partly constant", ErrInvalid, r.Name)
			}
			readVals = append(readVals, gate(hitR(r.Offset), packFields(fs, vals)))
		case r.Command:
			set := m.WireOf(CardRegPort(r, nil)+"_set", And(wrGo, hitW(r.Offset), full), "command written")
			ready := m.Input(CardRegPort(r, nil)+"_ready", 1, "the command is taken")
			v := m.RegDecl(CardRegPort(r, nil)+"_pend", 1, "command waiting for its ready")
			m.Drive(v, big.NewInt(0), Sel(set, one, Sel(ready, zero, v)), nil)
			m.Assign(m.Output(CardRegPort(r, nil)+"_valid", 1, "command: "+firstSentence(r.Doc)), v)
			cmdBusy = append(cmdBusy, And(v, Not(ready)))
			wholeWord = append(wholeWord, hitW(r.Offset))
			if len(r.Fields) == 0 {
				continue
			}
			for _, f := range fs {
				lo, w := fieldLoW(f)
				q := m.Reg(CardRegPort(r, f)+"_q", w, big.NewInt(0), Bits(wdata, lo+w-1, lo), set, "")
				m.Assign(m.Output(CardRegPort(r, f), w, f.Doc), gate(v, q))
			}
		default:
			en := m.WireOf(CardRegPort(r, nil)+"_wr", And(wrGo, hitW(r.Offset)), "staging register written")
			if r.Strobe {
				m.Assign(m.Output(CardRegPort(r, nil)+"_wr_pulse", 1, "the register is written this cycle"), And(en, Not(rst)))
			}
			vals := make([]Expr, len(fs))
			for i, f := range fs {
				lo, w := fieldLoW(f)
				q := m.RegDecl(CardRegPort(r, f)+"_q", w, "")
				mk := Bits(bm, lo+w-1, lo)
				m.Drive(q, big.NewInt(0), Or(And(q, Not(mk)), And(Bits(wdata, lo+w-1, lo), mk)), en)
				doc := firstSentence(r.Doc)
				if f != nil {
					doc = f.Doc
				}
				m.Assign(m.Output(CardRegPort(r, f), w, doc), q)
				vals[i] = q
			}
			readVals = append(readVals, gate(hitR(r.Offset), packFields(fs, vals)))
		}
	}

	// The placement window.
	if len(rm.Windows) != 1 {
		return nil, fmt.Errorf("%w: card_regs: expected one register window, have %d", ErrInvalid, len(rm.Windows))
	}
	win := rm.Windows[0]
	wb := win.Map.AddrBits
	if win.Base%(1<<wb) != 0 {
		return nil, fmt.Errorf("%w: card_regs: window %s at %#x is not aligned to its size", ErrInvalid, win.Name, win.Base)
	}
	inWin := m.WireOf("win_hit", Eq(Bits(awaddr, A-1, wb), C(A-wb, uint64(win.Base>>wb))), "write to the "+win.Name+" window")
	wholeWord = append(wholeWord, inWin)
	winGo := m.WireOf("win_go", And(wrGo, inWin, full), "window write forwarded")
	rwv := m.Reg("reg_wr_valid_q", 1, big.NewInt(0), winGo, nil, "")
	rwa := m.Reg("reg_wr_addr_q", wb, big.NewInt(0), Sel(winGo, Cat(Bits(awaddr, wb-1, 2), C(2, 0)), C(wb, 0)), nil, "")
	rwd := m.Reg("reg_wr_data_q", 32, big.NewInt(0), Sel(winGo, wdata, C(32, 0)), nil, "")
	m.Assign(m.Output("reg_wr_valid", 1, "placement register write (the "+win.Name+" window)"), rwv)
	m.Assign(m.Output("reg_wr_addr", wb, "its byte address inside the window"), rwa)
	m.Assign(m.Output("reg_wr_data", 32, ""), rwd)

	// Doorbell arrays.
	IW := 0
	for _, a := range rm.Arrays {
		IW = max(IW, log2(a.Count))
	}
	var dbHit, dbKind, dbIdx []Expr
	var pushHit, pushK, pushIdx Expr
	for _, a := range rm.Arrays {
		span := int(a.Stride) * a.Count
		if a.Stride&(a.Stride-1) != 0 || a.Count&(a.Count-1) != 0 || int(a.Base)%span != 0 {
			return nil, fmt.Errorf("%w: card_regs: array %s needs a power-of-two stride and count and a base aligned to its span", ErrInvalid, a.Name)
		}
		sb, eb := log2(span), log2(int(a.Stride))
		lname := strings.ToLower(a.Name)
		var in Expr = one
		if sb < A {
			in = Eq(Bits(awaddr, A-1, sb), C(A-sb, uint64(int(a.Base)>>sb)))
		}
		inA := m.WireOf(lname+"_hit", in, "write inside "+a.Name)
		idx := m.WireOf(lname+"_index", Bits(awaddr, sb-1, eb), "its element")
		pad := func(x Expr) Expr {
			if x.Width() < IW {
				return Cat(C(IW-x.Width(), 0), x)
			}
			return x
		}
		for _, r := range a.Regs {
			kind, err := CardDBKind(a.Name, r.Name)
			if err != nil {
				return nil, err
			}
			rname := lname + "_" + strings.ToLower(r.Name)
			if r.Name == CardPushReg {
				if a.Name != "QP_DB" || r.Offset%CardBB != 0 || eb <= log2(CardBB) || pushHit != nil {
					return nil, fmt.Errorf("%w: card_regs: push window %s.%s", ErrInvalid, a.Name, r.Name)
				}
				pb := log2(CardBB)
				pushHit = m.WireOf(rname+"_hit", And(inA, Eq(Bits(awaddr, eb-1, pb), C(eb-pb, uint64(r.Offset>>pb)))), "write to a push window")
				pushK = m.WireOf(rname+"_word", Bits(awaddr, pb-1, 2), "its word")
				pushIdx = pad(idx)
				dbKind = append(dbKind, C(3, kind))
				continue
			}
			h := m.WireOf(rname+"_hit", And(inA, Eq(Bits(awaddr, eb-1, 2), C(eb-2, uint64(r.Offset>>2)))), "doorbell "+a.Name+"."+r.Name)
			dbHit = append(dbHit, h)
			dbKind = append(dbKind, Sel(h, C(3, kind), C(3, 0)))
			dbIdx = append(dbIdx, gate(h, pad(idx)))
		}
	}
	if pushHit == nil {
		return nil, fmt.Errorf("%w: card_regs: no push window", ErrInvalid)
	}
	anyDB := m.WireOf("db_hit", RedOr(Cat(dbHit...)), "write to a doorbell register")
	wholeWord = append(wholeWord, anyDB, pushHit)

	// Push buffer.
	PW := CardBB / 4
	pushAny := m.WireOf("push_any", And(wrGo, pushHit), "a push window write is taken")
	pushW := m.WireOf("push_wr", And(pushAny, full), "a whole push word is taken")
	lastK := m.WireOf("push_last", Eq(pushK, C(pushK.Width(), uint64(PW-1))), "the window's last word")
	pown := m.Reg("push_owner", IW, big.NewInt(0), pushIdx, And(pushW, Eq(pushK, C(pushK.Width(), 0))), "QP whose push the buffer holds")
	pnext := m.Reg("push_next", pushK.Width(), big.NewInt(0), Add(pushK, C(pushK.Width(), 1)), pushW, "the word the push expects next")
	pgood := m.RegDecl("push_good", 1, "the words so far came in order from push_owner")
	inOrder := m.WireOf("push_in_order", And(pgood, Eq(pown, pushIdx), Eq(pnext, pushK)), "this word continues the push")
	isFirst := m.WireOf("push_first", Eq(pushK, C(pushK.Width(), 0)), "")
	m.Drive(pgood, big.NewInt(0), And(pushW, Not(lastK), Or(isFirst, inOrder)), pushAny)
	words := make([]Expr, PW)
	for i := 0; i < PW; i++ {
		words[PW-1-i] = m.Reg(fmt.Sprintf("push_w%d", i), 32, big.NewInt(0), wdata, And(pushW, Eq(pushK, C(pushK.Width(), uint64(i)))), "")
	}
	pushOK := m.WireOf("push_ok", And(lastK, inOrder), "the last word completes an in-order push")

	// Doorbell FIFO.
	dbFull := m.Wire("db_full", 1, "the doorbell FIFO is full")
	pushPend := m.RegDecl("push_pend", 1, "a pushed doorbell is in the FIFO")
	enq := m.WireOf("db_enq", And(wrGo, full, Or(anyDB, And(pushHit, lastK))), "a doorbell enters the FIFO")
	isPushEnq := m.WireOf("db_enq_push", And(pushHit, lastK), "")
	kindW := m.WireOf("db_kind_w", Sel(isPushEnq, dbKind[len(dbKind)-1], RedOrParts(dbKind[:len(dbKind)-1])), "")
	idxW := m.WireOf("db_index_w", Sel(isPushEnq, pushIdx, RedOrParts(dbIdx)), "")
	mDBReady := m.Input("m_db_ready", 1, "")
	mDBValid := m.Wire("db_head_valid", 1, "")
	pop := m.WireOf("db_pop", And(mDBValid, mDBReady), "")
	cw := addrWidth(CardRegsDBDepth + 1)
	q := ShiftQueue(m, "dbq", CardRegsDBDepth, []string{"kind", "index", "value", "ok"}, []int{3, IW, 32, 1},
		enq, []Expr{kindW, idxW, wdata, And(isPushEnq, pushOK)}, Cat(C(cw-1, 0), pop))
	m.Assign(dbFull, Eq(q.Count, C(cw, CardRegsDBDepth)))
	m.Assign(mDBValid, Ne(q.Count, C(cw, 0)))
	headPush := m.WireOf("db_head_push", And(mDBValid, Eq(q.Fields[0][0], dbKind[len(dbKind)-1])), "the head is a pushed doorbell")
	m.Drive(pushPend, big.NewInt(0), Sel(And(enq, isPushEnq), one, Sel(And(pop, headPush), zero, pushPend)), nil)
	m.Assign(m.Output("m_db_valid", 1, "a doorbell"), mDBValid)
	m.Assign(m.Output("m_db_kind", 3, "DB_KIND: which register"), gate(mDBValid, q.Fields[0][0]))
	m.Assign(m.Output("m_db_index", IW, "CQ or QP number"), gate(mDBValid, q.Fields[0][1]))
	m.Assign(m.Output("m_db_value", 32, "the value written"), gate(mDBValid, q.Fields[0][2]))
	m.Assign(m.Output("m_db_push_ok", 1, "QP_DB_PUSH: m_db_push_data holds the whole block"), And(mDBValid, q.Fields[0][3]))
	m.Assign(m.Output("m_db_push_data", 8*CardBB, "the pushed block, byte 0 in bits 7:0 (when m_db_push_ok)"),
		gate(And(mDBValid, q.Fields[0][3]), Cat(words...)))

	// Write acceptance and the B channel.
	stall := []Expr{And(bvq, Not(bready)), And(Or(anyDB, pushHit), dbFull), And(pushHit, pushPend)}
	stall = append(stall, cmdBusy...)
	m.Assign(wrGo, And(awvalid, wvalid, Not(RedOrParts(stall))))
	m.Assign(awready, wrGo)
	m.Assign(wready, wrGo)
	slverr := m.WireOf("wr_slverr", And(Not(full), RedOrParts(wholeWord)), "a partial write of a whole-word register")
	m.Drive(bvq, big.NewInt(0), Sel(wrGo, one, Sel(bready, zero, bvq)), nil)
	br := m.Reg("bresp_q", 2, big.NewInt(0), Sel(wrGo, Cat(slverr, zero), C(2, 0)), Or(Not(bvq), bready), "")
	m.Assign(bvalid, bvq)
	m.Assign(bresp, br)

	// The R channel.
	m.Assign(arready, arOK)
	m.Drive(rvq, big.NewInt(0), Sel(arGo, one, Sel(rready, zero, rvq)), nil)
	rd := m.Reg("rdata_q", 32, big.NewInt(0), Sel(arGo, RedOrParts(readVals), C(32, 0)), arOK, "")
	m.Assign(rvalid, rvq)
	m.Assign(rdata, rd)
	m.Assign(rresp, C(2, axiOkay))
	m.WireOf("unused_bits", RedOr(Cat(unused...)), "bits no logic reads (keeps lint quiet on purpose)")
	return m, m.Validate()
}

// RedOrParts is the bitwise OR of equal-width expressions (the expression
// itself for one).
func RedOrParts(xs []Expr) Expr {
	if len(xs) == 1 {
		return xs[0]
	}
	return Or(xs[0], xs[1], xs[2:]...)
}
