package gen

import (
	"fmt"
	"math/big"
	"sort"
	"strings"
)

// CardTopWidths are the data path widths iwcard is generated at.
var CardTopWidths = []int{64, 512}

// Masters of the card's AXI muxes (the source number is the top bits of
// m_axi_*id).
const (
	CardRdMasterTx = 0 // card_tx's dma_rd (WQE reads)
	CardRdMasterRx = 1 // card_rx's dma_rd (receive stream ring reads)
	CardRdMasterRQ = 2 // card_rx's RQ WQE reads
	CardWrMasterTx = 0 // card_tx's dma_wr (transmit stream ring writes)
	CardWrMasterPl = 1 // card_rx's place_axi: placement's payload and the Sends'

	CardWrMasterCQ = 2 // card_cq's dma_wr (CQEs, EQEs)
	CardWrMasterSt = 3 // card_stat's dma_wr (QP status records)
)

// CardResetCycles is how long the engines are held in reset after the
// card's rst or a RESET command (card_regs is not reset by the command).
const CardResetCycles = 16

// topWiring builds a top from instances: every instance output becomes a
// wire <inst>_<port>; outputs nothing reads are gathered into one
// "unused" wire at the end so that lint stays quiet on purpose only.
type topWiring struct {
	m    *Module
	outs map[string]*Signal
	used map[*Signal]bool
	errs []error
}

func newTopWiring(m *Module) *topWiring {
	return &topWiring{m: m, outs: map[string]*Signal{}, used: map[*Signal]bool{}}
}

// declare makes the output wires of instance inst of module of.
func (t *topWiring) declare(inst string, of *Module) {
	for _, p := range of.Ports {
		if p.Dir == Out {
			t.outs[inst+"."+p.Name] = t.m.Wire(inst+"_"+p.Name, p.W, "")
		}
	}
}

// o is output port of instance inst (declared first), marked as read.
func (t *topWiring) o(inst, port string) *Signal {
	s := t.outs[inst+"."+port]
	if s == nil {
		t.errs = append(t.errs, fmt.Errorf("%w: card top: no output %s.%s", ErrInvalid, inst, port))
		return t.m.Wire(fmt.Sprintf("bad_%s_%s_%d", inst, port, len(t.errs)), 1, "")
	}
	t.used[s] = true
	return s
}

// place instantiates of as inst: every input from ins (all required),
// every output to its declared wire.
func (t *topWiring) place(inst string, of *Module, ins map[string]Expr) {
	var cs []Conn
	seen := map[string]bool{}
	for _, p := range of.Ports {
		if p.Dir == Out {
			cs = append(cs, Conn{p.Name, t.outs[inst+"."+p.Name]})
			continue
		}
		e, ok := ins[p.Name]
		if !ok {
			t.errs = append(t.errs, fmt.Errorf("%w: card top: input %s.%s is not connected (wire it in hw/gen/card_top.go)", ErrInvalid, inst, p.Name))
			continue
		}
		if e.Width() != p.W {
			t.errs = append(t.errs, fmt.Errorf("%w: card top: input %s.%s is %d bits, given %d", ErrInvalid, inst, p.Name, p.W, e.Width()))
		}
		seen[p.Name] = true
		cs = append(cs, Conn{p.Name, e})
	}
	for k := range ins {
		if !seen[k] {
			t.errs = append(t.errs, fmt.Errorf("%w: card top: %s has no input %s", ErrInvalid, inst, k))
		}
	}
	t.m.Instantiate(inst, of, cs...)
}

// finish gathers the unread outputs (plus extra) into the unused wire.
func (t *topWiring) finish(extra ...Expr) error {
	var names []string
	for k, s := range t.outs {
		if !t.used[s] {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	parts := extra
	for _, k := range names {
		parts = append(parts, t.outs[k])
	}
	if len(parts) > 0 {
		t.m.WireOf("unused_outputs", RedOr(Cat(parts...)), "block outputs the card does not use yet (docs/card-rtl.md), kept for lint")
	}
	if len(t.errs) > 0 {
		return t.errs[0]
	}
	return nil
}

// heldPriority grants the first of the requests that is up and holds the
// grant while the granted record waits for taken (a valid may not drop or
// change until its ready). It returns the one-hot grants.
func heldPriority(m *Module, name string, reqs []Expr, taken Expr) []*Signal {
	n := len(reqs)
	hold := m.RegDecl(name+"_hold", 1, "a granted record waits for its ready")
	held := m.RegDecl(name+"_held", n, "its grant (bit i: request i)")
	grants := make([]*Signal, n)
	parts := make([]Expr, n)
	for j, r := range reqs {
		free := r
		if j > 0 {
			free = And(r, Not(RedOrParts(reqs[:j])))
		}
		grants[j] = m.WireOf(fmt.Sprintf("%s_g%d", name, j), Sel(hold, Bit(held, j), free), "")
		parts[n-1-j] = grants[j]
	}
	m.Drive(hold, big.NewInt(0), And(RedOrParts(toExprs(grants)), Not(taken)), nil)
	m.Drive(held, big.NewInt(0), Cat(parts...), nil)
	return grants
}

// forkRecord sends one valid/ready record to the targets whose sel is 1
// (sel may depend on the record) and acknowledges it upstream once every
// selected target has taken it: each target takes it in its own cycle, a
// done bit per target remembers who already has it. It returns the
// targets' valids and the upstream ready.
func forkRecord(m *Module, name string, valid Expr, sel []Expr, ready []Expr) ([]Expr, Expr) {
	n := len(sel)
	done := make([]*Signal, n)
	for i := range done {
		done[i] = m.RegDecl(fmt.Sprintf("%s_done%d", name, i), 1, "this target already took the record")
	}
	vs := make([]Expr, n)
	ok := make([]Expr, n)
	for i := range sel {
		vs[i] = m.WireOf(fmt.Sprintf("%s_valid%d", name, i), And(valid, sel[i], Not(done[i])), "")
		ok[i] = Or(Not(sel[i]), done[i], ready[i])
	}
	allOK := ok[0]
	if n > 1 {
		allOK = And(ok[0], ok[1], ok[2:]...)
	}
	up := m.WireOf(name+"_ready", And(valid, allOK), "every selected target has the record")
	for i := range done {
		m.Drive(done[i], big.NewInt(0), And(Not(up), Or(done[i], And(vs[i], ready[i]))), nil)
	}
	return vs, up
}

// CardTop builds iwcard_w<width>, the card (docs/card-rtl.md): card_regs
// (BAR0), card_tx, card_rx with placement and place_axi, card_cq, and the
// AXI muxes onto one DMA master.
func CardTop(width int) (*Module, error) {
	W := width
	if W != 64 && W != 512 {
		return nil, fmt.Errorf("%w: iwcard data width %d (64 or 512)", ErrInvalid, W)
	}
	regs, err := CardRegs(W)
	if err != nil {
		return nil, err
	}
	tx, err := CardTx(W)
	if err != nil {
		return nil, err
	}
	rx, err := CardRx(W)
	if err != nil {
		return nil, err
	}
	pl, err := Placement(PlacementDefault(W))
	if err != nil {
		return nil, err
	}
	cq, err := CardCQ(CardCQDefault(W))
	if err != nil {
		return nil, err
	}
	stat, err := CardStat(W)
	if err != nil {
		return nil, err
	}
	cmd, err := CardCmd()
	if err != nil {
		return nil, err
	}
	rdm, err := AXIRdMux(AXIMuxDefault(W))
	if err != nil {
		return nil, err
	}
	wrm, err := AXIWrMux(AXIMuxDefault(W))
	if err != nil {
		return nil, err
	}
	kind := func(arr, reg string) Expr {
		v, e := CardDBKind(arr, reg)
		if e != nil && err == nil {
			err = e
		}
		return C(3, v)
	}
	kCQ, kSQ, kRQ := kind("CQ_DB", "CI"), kind("QP_DB", "SQ_PI"), kind("QP_DB", "RQ_PI")
	kTXS, kRXS, kStream, kPush := kind("QP_DB", "TXS_CI"), kind("QP_DB", "RXS_PI"), kind("QP_DB", "STREAM"), kind("QP_DB", "PUSH")
	if err != nil {
		return nil, err
	}

	m := NewModule(fmt.Sprintf("iwcard_w%d", W), "docs/card.md (host interface), docs/card-rtl.md (the cut into blocks)",
		fmt.Sprintf("The openiwarp card, %d-bit data path: BAR0 (AXI4-Lite slave s_axil, card_regs), one AXI4 DMA master m_axi (axi_rd_mux and axi_wr_mux merging the engines' masters; the top bits of an ID name the engine) and an interrupt (irq_valid/irq_ready/irq_vector, card_cq).", W),
		"Inside: card_cmd decides card_regs' QP and CQ commands (CMD_STATUS) and passes on the ones it takes; the QP command goes out to card_tx, card_rx and card_stat (each takes it in its own cycle; card_cmd sees ready once all have), the CQ command to card_cq; doorbells by kind (SQ_PI, TXS_CI, PUSH to card_tx; RXS_PI, RQ_PI to card_rx; STREAM to both; SQ_PI, PUSH, TXS_CI, RXS_PI and STREAM to card_stat too; CQ_DB to card_cq), the EQ registers to card_cq, the placement window to placement. card_rx's ULPDUs go to placement, whose untagged segments, STag checks and DMA blocks come back to card_rx (card_rx writes placement's blocks and its Sends' through its own place_axi); card_rx's receive completions go through card_stat (RQ_CI first) to card_cq. card_tx's records go to card_stat (every record's status fields are for the QP status record; signaled ones carry a CQE it passes on to card_cq).",
		fmt.Sprintf("RESET (the command) holds every engine, the muxes and placement in reset for %d cycles; card_cq and placement then clear their tables (STATUS.INIT_DONE low until both are done). card_regs keeps its staging registers. A RESET with DMA in flight is not supported: the host must quiesce the card first.", CardResetCycles),
		"card_stat writes the QP status records (QP commands, card_tx's records, card_rx's RXS_CI) and the events TX_DATA, RX_SPACE, QP_CLOSED, STREAM_END and QP_ERROR (HOST, LLP_LOST) to card_cq's first event port (it takes the SQ_PI, PUSH, TXS_CI, RXS_PI and STREAM doorbells too), each CQE and event after the status writes before it.",
		"card_rx's untagged receive errors (m_rxterm), placement's (m_term: tagged checks, header checks) and mpa_rx's CRC, marker and length errors (card_rx's m_err: Layer LLP, EType MPA, mpa_rx's code; an FPDU longer than its ring: RDMAP Local Catastrophic) go one at a time, in that priority, to card_tx's Terminate sender (s_term), whose TERM_SENT events go to card_cq's second event port and whose Terminate record (m_cpl_term) makes card_stat write STATE ERROR with TX_CLOSED; placement's and m_err's wait until card_rx's Send engine holds no segment (m_err's until placement is empty too), and their QP then joins card_rx's RQ flush queue (s_fl).",
		"DMA faults: DMA_FAULT_* name the last access that got an error response among card_stat's status records, card_cq's CQEs and EQEs and the reads that fail a QP: card_tx's WQE reads and payload reads (gather and Read Response source: the message is cut at the FPDU holding the refused page, the FPDUs from there on never published), card_rx's receive WQE and receive ring reads and its payload writes (whose Terminate record carries the fault to card_tx; a write's sets DMA_FAULT_INFO.WRITE): DMA_FAULT, then QP_ERROR DMA and a Local Catastrophic Terminate; a faulted status record (card_stat's DMA_FAULT event, OBJ 0) or EQE stops the card (STATUS.FATAL): no new AXI address goes out, bursts already started finish, and DMA_FAULT_* keep the fault that stopped it. A refused transmit ring write (card_tx): DMA_FAULT (WRITE), QP_ERROR DMA, no Terminate. A CQE whose write faults puts its CQ in error (card_cq's CQ_ERROR event, INFO the CQE's address bits 31:0; DMA_FAULT_* name it, with its QP) and, through cqSweep, every QP on that CQ (QP_ERROR DMA, a Local Catastrophic Terminate); the CQ takes no CQE again until DESTROY. Placement's Read dones reach card_tx through card_rx once their writes have their responses; a stream-end record and the receive-side Terminate records wait while one is held there. card_cq's overrun record puts the QPs on that CQ in error (cqSweep). card_rx's bad RXS_PI doorbell (m_err kind 7) and cut stream (kind 6) go to the engines as an ERROR command (the QP command fork, while card_regs offers none) whose QP_ERROR says BAD_DOORBELL or STREAM_CUT, with no Terminate; an FPDU longer than its ring (kind 5) has card_tx send an RDMAP Local Catastrophic Terminate. card_tx's Local Invalidate and bind go to placement's mop port.")
	clk := m.Clock()
	rst := m.ResetPort()
	t := newTopWiring(m)
	for _, x := range []struct {
		n  string
		of *Module
	}{{"regs", regs}, {"tx", tx}, {"rx", rx}, {"pl", pl}, {"cq", cq}, {"st", stat}, {"cmd", cmd}, {"rdm", rdm}, {"wrm", wrm}} {
		t.declare(x.n, x.of)
	}
	o := t.o

	// Engine reset: rst, or RESET taken, held CardResetCycles cycles.
	rcnt := m.RegDecl("eng_reset_cnt", 5, "cycles of engine reset left")
	m.Drive(rcnt, big.NewInt(CardResetCycles), Sel(o("regs", "reset_valid"), C(5, CardResetCycles), Sub(rcnt, C(5, 1))), RedOr(Cat(o("regs", "reset_valid"), rcnt)))
	erst := m.WireOf("eng_rst", Or(rst, RedOr(rcnt)), "the engines' reset")

	// Host ports.
	regIn := map[string]Expr{"clk": clk, "rst": rst}
	for _, p := range regs.Ports {
		if p.Dir == In && strings.HasPrefix(p.Name, "s_axil_") {
			regIn[p.Name] = m.Input(p.Name, p.W, "BAR0 (AXI4-Lite)")
		}
	}
	for _, p := range regs.Ports {
		if p.Dir == Out && strings.HasPrefix(p.Name, "s_axil_") {
			m.Assign(m.Output(p.Name, p.W, ""), o("regs", p.Name))
		}
	}
	// hostAXI makes the mux's m_axi_* ports the card's and returns the
	// mux's inputs so far (clk, rst and those ports).
	hostAXI := func(mux *Module, inst string) map[string]Expr {
		ins := map[string]Expr{"clk": clk, "rst": erst}
		for _, p := range mux.Ports {
			if !strings.HasPrefix(p.Name, "m_axi_") {
				continue
			}
			if p.Dir == In {
				ins[p.Name] = m.Input(p.Name, p.W, "DMA master (AXI4)")
			} else {
				m.Assign(m.Output(p.Name, p.W, ""), o(inst, p.Name))
			}
		}
		return ins
	}
	rdIn := hostAXI(rdm, "rdm")
	wrIn := hostAXI(wrm, "wrm")
	// Once the card is stopped (card_cq's fatal: STATUS.FATAL), no engine
	// starts a burst: each master's address channel into the mux closes
	// at the first cycle it holds no address waiting for its ready (a
	// valid may not drop before it, nor the mux's grant of it). Bursts
	// already started finish. card_cq's writes stay open: the DMA_FAULT
	// event that stops the card, and the records queued before the stop,
	// still go out.
	stopped := o("cq", "fatal")
	var rdShut, wrShut [4]*Signal
	for i := range rdShut {
		if i < 3 { // the fourth read slot is unused
			rdShut[i] = m.RegDecl(fmt.Sprintf("stop_rd%d", i), 1, "the card is stopped: read master i starts no burst")
		}
		if i != CardWrMasterCQ {
			wrShut[i] = m.RegDecl(fmt.Sprintf("stop_wr%d", i), 1, "the card is stopped: write master i starts no burst")
		}
	}
	shutGate := func(shut *Signal, valid, ready Expr) Expr {
		if shut == nil {
			return valid
		}
		m.Drive(shut, big.NewInt(0), Or(shut, And(stopped, Or(Not(valid), ready))), nil)
		return And(valid, Not(shut))
	}
	shutReady := func(shut *Signal, ready Expr) Expr {
		if shut == nil {
			return ready
		}
		return And(ready, Not(shut))
	}
	irqReady := m.Input("irq_ready", 1, "the interrupt was taken")
	m.Assign(m.Output("irq_valid", 1, "an interrupt (MSI-X)"), o("cq", "irq_valid"))
	m.Assign(m.Output("irq_vector", 8, ""), o("cq", "irq_vector"))

	// QP command to the engines: card_regs', or the ERROR of a QP whose
	// RXS_PI doorbell moved past its ring's size (card_rx's m_err of kind
	// bad doorbell: the model's toError BAD_DOORBELL, no Terminate), given
	// while card_regs offers none and kept until every engine has it.
	regsCmd := o("cmd", "m_qp_valid") // card_regs' command, once card_cmd took it
	// card_rx's cut stream (STREAM_CUT) goes the same way, then card_tx's
	// bad SQ_PI and card_rx's bad RQ_PI (m_baddb: BAD_DOORBELL).
	errKind := o("rx", "m_err_kind")
	bdV := m.WireOf("qpcmd_bd_offer", And(o("rx", "m_err_valid"), Or(Eq(errKind, C(3, CardRxErrBadDoorbell)), Eq(errKind, C(3, CardRxErrStreamCut)))),
		"a bad RXS_PI doorbell's or cut stream's QP waits to go to error")
	txBdV := o("tx", "m_baddb_valid")
	rqBdV := o("rx", "m_baddb_valid")
	const bdErr, bdTxSQ, bdRxRQ = 0, 1, 2 // the bad doorbell's source
	bdSelQ := m.RegDecl("qpcmd_bd_sel", 1, "the command in the fork is a bad doorbell's ERROR")
	bdSrcQ := m.RegDecl("qpcmd_bd_src", 2, "... whose: card_rx's m_err (0), card_tx's m_baddb (1), card_rx's m_baddb (2)")
	bdSel := m.WireOf("qpcmd_bd", Or(bdSelQ, And(Or(bdV, txBdV, rqBdV), Not(regsCmd))), "")
	bdSrc := m.WireOf("qpcmd_bd_src_now", Sel(bdSelQ, bdSrcQ, Sel(bdV, C(2, bdErr), Sel(txBdV, C(2, bdTxSQ), C(2, bdRxRQ)))), "")
	bdIs := func(k uint64) Expr { return Eq(bdSrc, C(2, k)) }
	cmdOp := m.WireOf("qpcmd_op", Sel(bdSel, C(4, 3), o("regs", "qp_cmd_op")), "QP_OP ERROR for a bad doorbell")
	cmdQPN := m.WireOf("qpcmd_qpn", Sel(bdSel, Sel(bdIs(bdTxSQ), zext(o("tx", "m_baddb_qpn"), 16), Sel(bdIs(bdRxRQ), zext(o("rx", "m_baddb_qpn"), 16), zext(o("rx", "m_err_qp"), 16))), o("regs", "qp_num_qpn")), "")
	qpV, qpReady := forkRecord(m, "qpcmd", Or(regsCmd, bdSel), []Expr{C(1, 1), C(1, 1), C(1, 1)},
		[]Expr{o("tx", "s_qp_ready"), o("rx", "qp_cmd_ready"), o("st", "qp_cmd_ready")})
	m.Drive(bdSelQ, big.NewInt(0), And(bdSel, Not(qpReady)), nil)
	m.Drive(bdSrcQ, big.NewInt(0), bdSrc, nil)
	bdTaken := m.WireOf("qpcmd_bd_taken", And(bdSel, qpReady, bdIs(bdErr)), "every engine has card_rx's bad doorbell's ERROR: m_err is taken")

	// Doorbells by kind.
	dk := o("regs", "m_db_kind")
	isK := func(ks ...Expr) Expr {
		var e Expr = C(1, 0)
		for _, k := range ks {
			e = Or(e, Eq(dk, k))
		}
		return e
	}
	dbV, dbReady := forkRecord(m, "db", o("regs", "m_db_valid"),
		[]Expr{isK(kSQ, kTXS, kPush, kStream), isK(kRXS, kRQ, kStream), isK(kCQ), isK(kSQ, kPush, kTXS, kRXS, kStream)},
		[]Expr{o("tx", "s_db_ready"), o("rx", "s_db_ready"), o("cq", "s_cqdb_ready"), o("st", "s_db_ready")})
	dbOther := m.WireOf("db_other", And(o("regs", "m_db_valid"), Not(isK(kSQ, kTXS, kPush, kStream, kRXS, kRQ, kCQ))), "a kind no engine serves (none today): taken")

	// card_regs.
	initDone := m.WireOf("init_done", And(o("cq", "init_done"), o("pl", "init_done"), o("cmd", "init_done"), Not(erst)), "STATUS.INIT_DONE")
	regIn["status_init_done"] = initDone
	regIn["status_fatal"] = o("cq", "fatal")
	regIn["reset_ready"] = C(1, 1)
	// DMA_FAULT_*: the last faulted access reported (card_stat's status
	// records, card_cq's CQEs and EQEs, card_tx's WQE reads), until a
	// fault stops the card (a status record's or an EQE's): from then on
	// they keep that one, as the card model, which stops at it, does.
	// One report is taken a cycle, in that order: another in the same
	// cycle is not recorded (they come from different faults, rarely
	// in one cycle).
	stF, cqF, txF := o("st", "m_fault_valid"), o("cq", "m_fault_valid"), o("tx", "m_fault_valid")
	fltFrozen := m.RegDecl("flt_frozen", 1, "a fault stopped the card: DMA_FAULT_* keep it")
	fltSt := m.WireOf("flt_take_st", And(stF, Not(fltFrozen)), "card_stat's fault is recorded")
	fltCQ := m.WireOf("flt_take_cq", And(cqF, Not(fltFrozen), Not(stF)), "card_cq's fault is recorded")
	fltTx := m.WireOf("flt_take_tx", And(txF, Not(fltFrozen), Not(stF), Not(cqF)), "card_tx's fault is recorded")
	fltTake := m.WireOf("flt_take", Or(fltSt, fltCQ, fltTx), "")
	m.Drive(fltFrozen, big.NewInt(0), Or(fltFrozen, fltSt, And(fltCQ, o("cq", "m_fault_eqe"))), nil)
	fltAddr := m.Reg("flt_addr", 64, big.NewInt(0), Sel(fltSt, o("st", "m_fault_addr"), Sel(fltCQ, o("cq", "m_fault_addr"), o("tx", "m_fault_addr"))), fltTake, "DMA_FAULT_ADDR")
	fltQPN := m.Reg("flt_qpn", 16, big.NewInt(0), Sel(fltSt, zext(o("st", "m_fault_qpn"), 16), Sel(fltCQ, o("cq", "m_fault_qpn"), zext(o("tx", "m_fault_qpn"), 16))), fltTake, "DMA_FAULT_INFO.QPN")
	fltWrite := m.Reg("flt_write", 1, big.NewInt(0), Or(Not(fltTx), o("tx", "m_fault_write")), fltTake, "DMA_FAULT_INFO.WRITE: card_tx's are reads but for card_rx's payload writes")
	fltCnt := m.RegDecl("flt_count", 8, "DMA_FAULT_INFO.COUNT (saturates)")
	m.Drive(fltCnt, big.NewInt(0), Add(fltCnt, C(8, 1)), And(fltTake, Not(RedAnd(fltCnt))))
	regIn["dma_fault_addr_lo"] = Bits(fltAddr, 31, 0)
	regIn["dma_fault_addr_hi"] = Bits(fltAddr, 63, 32)
	regIn["dma_fault_info_qpn"] = fltQPN
	regIn["dma_fault_info_resp"] = Cat(RedOr(fltCnt), C(1, 0)) // SLVERR: the engines hear of an error, not which
	regIn["dma_fault_info_write"] = fltWrite
	regIn["dma_fault_info_count"] = fltCnt
	regIn["eq_db_ready"] = o("cq", "eq_db_ready")
	// card_cmd decides card_regs' QP and CQ commands, hands on those it
	// takes and keeps CMD_STATUS.
	cmdIn := map[string]Expr{"clk": clk, "rst": erst, "m_qp_ready": And(qpReady, Not(bdSel)), "m_cq_ready": o("cq", "cq_cmd_ready"),
		"s_done_valid": o("st", "m_done_valid"), "s_done_qpn": o("st", "m_done_qpn"), "stopped": o("cq", "fatal")}
	for _, p := range cmd.Ports {
		if _, ok := cmdIn[p.Name]; !ok && p.Dir == In {
			cmdIn[p.Name] = o("regs", p.Name)
		}
	}
	t.place("cmd", cmd, cmdIn)
	for _, p := range []string{"qp_cmd_ready", "cq_cmd_ready", "cmd_status_seq", "cmd_status_refused", "cmd_status_why"} {
		regIn[p] = o("cmd", p)
	}
	regIn["m_db_ready"] = Or(dbReady, dbOther)
	t.place("regs", regs, regIn)

	// card_tx.
	txIn := map[string]Expr{"clk": clk, "rst": erst,
		"s_qp_valid": qpV[0], "s_qp_op": cmdOp, "s_qp_num": Bits(cmdQPN, 9, 0),
		"s_qp_sq_base": Cat(o("regs", "qp_sq_base_hi"), o("regs", "qp_sq_base_lo")), "s_qp_sq_log": o("regs", "qp_sizes_sq_log"),
		"s_qp_txs_base": Cat(o("regs", "qp_txs_base_hi"), o("regs", "qp_txs_base_lo")), "s_qp_txs_log": o("regs", "qp_sizes_txs_log"),
		"s_qp_mulpdu": o("regs", "qp_mpa_mulpdu"), "s_qp_markers": o("regs", "qp_mpa_markers_tx"), "s_qp_crc": o("regs", "qp_mpa_crc"),
		"s_qp_rev0": o("regs", "qp_mpa_rev0"), "s_qp_send_cq": Bits(o("regs", "qp_cqs_send_cq"), 9, 0),
		"s_db_valid": dbV[0], "s_db_kind": dk, "s_db_index": o("regs", "m_db_index"), "s_db_value": o("regs", "m_db_value"),
		"s_db_push_ok": o("regs", "m_db_push_ok"), "s_db_push_data": o("regs", "m_db_push_data"),
		"s_qp_ord": Bits(o("regs", "qp_rd_ord"), 4, 0),
		// Read done: placement's m_done through card_rx, once its writes
		// have their responses.
		"s_rdone_valid": o("rx", "m_rdone_valid"), "s_rdone_qp": o("rx", "m_rdone_qp"),
		"s_rdone_stag": o("rx", "m_rdone_stag"), "s_rdone_to": o("rx", "m_rdone_to"), "s_rdone_len": o("rx", "m_rdone_len"),
	}
	// Read Requests from card_rx (checked there) to the responder.
	for _, f := range []string{"valid", "qpn", "sink_stag", "sink_to", "size", "src_stag", "src_to", "hdr"} {
		txIn["s_rreq_"+f] = o("rx", "m_rreq_"+f)
	}
	txIn["m_rreq_done_ready"] = o("rx", "s_rreq_done_ready")
	// CLOSE: card_stat asks whether a QP owes a Read Response (card_tx's,
	// or card_rx's record on its way to card_tx), and tells card_tx when
	// the QP is CLOSED.
	txIn["s_owed_qpn"] = o("st", "m_owed_qpn")
	txIn["s_closed_valid"] = o("st", "m_done_closed")
	txIn["s_closed_qpn"] = o("st", "m_done_qpn")
	// The receive errors to the Terminate sender, one record at a time
	// (heldPriority, in this order): card_rx's untagged ones (m_rxterm),
	// placement's (m_term: tagged, and the header checks) and mpa_rx's
	// CRC, marker and length errors (card_rx's m_err). placement's and
	// m_err's are offered once card_rx's Send engine holds no segment
	// (snd_idle), m_err's once placement is empty too, so that the
	// segments before them are done first, as in the card model; their
	// QP then joins card_rx's flush queue (s_fl, one at a time). TERM_SENT
	// to card_cq's second event port. m_err's bad-doorbell kind (the
	// model's QP_ERROR BAD_DOORBELL, with no Terminate) is not a
	// Terminate: it goes to the engines as an ERROR command (above).
	rxTV, plTV := o("rx", "m_rxterm_valid"), o("pl", "m_term_valid")
	flOK := And(o("rx", "snd_idle"), o("rx", "s_fl_ready"))
	errTV := And(o("rx", "m_err_valid"), Not(bdV), Not(o("pl", "busy")), flOK)
	// Last, the QPs of a CQ that overran (cqSweep): QP_ERROR CQ_OVERRUN
	// and a Local Catastrophic Terminate; card_rx learns of them from
	// card_tx's Terminate record (s_fail, below), as of card_tx's own.
	swTaken := m.Wire("sweep_taken", 1, "card_tx took the sweep's record")
	sw := newCQSweep(m, o("cq", "m_overrun_valid"), o("cq", "m_overrun_cq"), o("cq", "m_overrun_dma"),
		And(regsCmd, Not(bdSel), qpReady), cmdOp, cmdQPN, o("regs", "qp_cqs_send_cq"), o("regs", "qp_cqs_recv_cq"), swTaken)
	// A receive-side record waits while card_rx holds a Read done for its
	// writes' responses: that done may be of a Read Response before the
	// failing segment, whose Read the model completes before the error.
	rdQuiet := m.WireOf("term_rd_quiet", Not(o("rx", "m_rdone_busy")), "no Read done waits in card_rx")
	tmG := heldPriority(m, "term", []Expr{And(rxTV, rdQuiet), And(plTV, flOK, rdQuiet), And(errTV, rdQuiet), sw.offer}, o("tx", "s_term_ready"))
	tmPl, tmErr, tmSw := tmG[1], tmG[2], tmG[3]
	tmV := m.WireOf("term_valid", RedOrParts(toExprs(tmG)), "")
	tmTake := m.WireOf("term_take", And(tmV, o("tx", "s_term_ready")), "card_tx takes the record")
	m.Assign(swTaken, And(tmTake, tmSw))
	pick := func(rx, pl, mpa, sweep Expr) Expr { return Sel(tmPl, pl, Sel(tmErr, mpa, Sel(tmSw, sweep, rx))) }
	txIn["s_term_valid"] = tmV
	txIn["s_term_qpn"] = pick(o("rx", "m_rxterm_qp"), Bits(o("pl", "m_term_qp"), 9, 0), o("rx", "m_err_qp"), sw.qpn)
	// An MPA error's cause: Layer LLP, EType MPA, mpa_rx's code (2 CRC,
	// 3 marker or length); an FPDU longer than the ring, a faulted ring
	// read and a CQ overrun: RDMAP Local Catastrophic (the model's); no
	// header is copied.
	errDMA := m.WireOf("term_err_dma", Eq(errKind, C(3, CardRxErrDMA)), "card_rx's error is a faulted ring read")
	txIn["s_term_cause"] = pick(o("rx", "m_rxterm_cause"), o("pl", "m_term_cause"),
		Sel(Or(Eq(errKind, C(3, CardRxErrTooLarge)), errDMA), C(16, causeRDMAPLocalCatastrophic), Cat(C(13, 0x2000>>3), o("rx", "m_err_code"))),
		C(16, causeRDMAPLocalCatastrophic))
	for _, f := range []string{"hdr", "seglen"} {
		z := C(tx.Port("s_term_"+f).W, 0)
		txIn["s_term_"+f] = pick(o("rx", "m_rxterm_"+f), o("pl", "m_term_"+f), z, z)
	}
	txIn["s_term_rdma"] = gate(tmG[0], o("rx", "m_rxterm_rdma"))
	txIn["s_term_recv"] = And(tmG[0], o("rx", "m_rxterm_recv"))
	rxFlt := m.WireOf("term_rx_fault", And(tmG[0], o("rx", "m_rxterm_fault")), "card_rx's record is a receive WQE read's DMA fault")
	ringFlt := m.WireOf("term_ring_fault", And(tmErr, errDMA), "card_rx's error record is a receive ring read's DMA fault")
	txIn["s_term_fault"] = Or(rxFlt, ringFlt)
	txIn["s_term_fault_addr"] = Sel(ringFlt, o("rx", "m_err_addr"), gate(rxFlt, o("rx", "m_rxterm_fault_addr")))
	txIn["s_term_fault_write"] = And(rxFlt, o("rx", "m_rxterm_fault_write"))
	txIn["s_term_reason"] = Sel(tmSw, Sel(sw.dma, C(8, cardTxErrDMA), C(8, cardStatErrCQOverrun)), Sel(Or(rxFlt, ringFlt), C(8, cardTxErrDMA), C(8, 0)))
	// A WQE on a tight CQ waits while a completion is between card_tx
	// and card_cq's verdict, or an overrun is served (card_tx).
	txIn["cq_tight"] = o("cq", "cq_tight")
	txIn["m_baddb_ready"] = m.WireOf("qpcmd_bd_tx_taken", And(bdSel, qpReady, bdIs(bdTxSQ)), "every engine has card_tx's bad SQ_PI's ERROR")
	txIn["cpl_hold"] = m.WireOf("cpl_hold", Or(o("st", "busy"), o("cq", "cpl_busy"), o("cq", "m_overrun_valid"), sw.busy), "a completion has no verdict yet, or an overrun's QPs are not all in error")
	txIn["m_ev_ready"] = o("cq", "s_ev1_ready")
	// The peer's stream ended or was lost (card_stat's record), once
	// placement holds no ULPDU any more: its Read dones of that stream
	// (whose ULPDUs it took before card_rx reported the RXS_CI that ended
	// the stream) are then all taken by card_rx, and once card_rx holds
	// none waiting for its writes' responses (m_rdone_busy), by card_tx:
	// the flush comes behind them.
	endGo := m.WireOf("end_go", Not(Or(o("pl", "busy"), o("rx", "m_rdone_busy"))), "placement is empty and no Read done waits: a stream-end record may pass")
	txIn["s_end_valid"] = And(o("st", "m_end_valid"), endGo)
	txIn["s_end_qpn"] = o("st", "m_end_qpn")
	txIn["s_end_lost"] = o("st", "m_end_lost")
	// Records (status fields and, when signaled, a CQE) to card_stat; a
	// Terminate record (the QP in error, whatever the cause) to card_rx
	// too, which then treats the QP as the host's ERROR command has it
	// (the card model's errorStep: the ring read no more, the RQ flushed).
	txRecV, txRecUp := forkRecord(m, "txrec", o("tx", "m_cpl_valid"), []Expr{C(1, 1), o("tx", "m_cpl_term")},
		[]Expr{o("st", "s_tx_ready"), o("rx", "s_fail_ready")})
	txIn["m_cpl_ready"] = txRecUp
	// lkey checks through placement's check port.
	txIn["s_qp_pd"] = o("regs", "qp_pd_pd")
	txIn["m_chk_ready"] = o("pl", "s_chk_ready")
	txIn["s_tbl_wr"] = o("pl", "m_tbl_wr")
	for _, f := range []string{"valid", "tag", "fault", "addr", "run"} {
		txIn["s_chk_"+f] = o("pl", "m_chk_"+f)
	}
	// Local Invalidate and bind through placement's mop port.
	txIn["m_mop_ready"] = o("pl", "s_mop_ready")
	txIn["s_mop_valid"] = o("pl", "m_mop_valid")
	txIn["s_mop_ok"] = o("pl", "m_mop_ok")
	// rdBack and wrBack connect an engine's read (write) master, ports
	// named pre+"arready"..., to its slot of axi_rd_mux (axi_wr_mux). The
	// engines' write IDs are 4 bits: the top 2 of the slot's bid go unread.
	rdBack := func(dst map[string]Expr, pre string, slot int) {
		for _, p := range []string{"arready", "rid", "rdata", "rresp", "rlast", "rvalid"} {
			dst[pre+p] = o("rdm", fmt.Sprintf("s%d_axi_%s", slot, p))
		}
		dst[pre+"arready"] = shutReady(rdShut[slot], dst[pre+"arready"])
	}
	var bidTop [4]Expr
	wrBack := func(dst map[string]Expr, slot int) {
		s := fmt.Sprintf("s%d_axi_", slot)
		for _, p := range []string{"awready", "wready", "bresp", "bvalid"} {
			dst["m_axi_"+p] = o("wrm", s+p)
		}
		dst["m_axi_awready"] = shutReady(wrShut[slot], dst["m_axi_awready"])
		dst["m_axi_bid"] = Bits(o("wrm", s+"bid"), 3, 0)
		bidTop[slot] = Bits(o("wrm", s+"bid"), 5, 4)
	}
	rdBack(txIn, "m_axi_", CardRdMasterTx)
	wrBack(txIn, CardWrMasterTx)
	t.place("tx", tx, txIn)

	// card_rx, placement, place_axi (as card_rx_tb).
	rxIn := map[string]Expr{"clk": clk, "rst": erst,
		"qp_cmd_valid": qpV[1], "qp_cmd_op": cmdOp, "qp_num_qpn": cmdQPN,
		"qp_pd_pd": o("regs", "qp_pd_pd"), "qp_rxs_base_lo": o("regs", "qp_rxs_base_lo"), "qp_rxs_base_hi": o("regs", "qp_rxs_base_hi"),
		"qp_sizes_rxs_log": o("regs", "qp_sizes_rxs_log"), "qp_mpa_markers_rx": o("regs", "qp_mpa_markers_rx"),
		"qp_mpa_crc": o("regs", "qp_mpa_crc"), "qp_mpa_rev0": o("regs", "qp_mpa_rev0"),
		"s_db_valid": dbV[1], "s_db_kind": dk, "s_db_index": o("regs", "m_db_index"), "s_db_value": o("regs", "m_db_value"),
		"m_ulp_tready": o("pl", "s_axis_tready"), "m_ci_ready": o("st", "s_rx_ready"), "m_err_ready": Or(bdTaken, And(tmErr, o("tx", "s_term_ready"))), "m_baddb_ready": m.WireOf("qpcmd_bd_rq_taken", And(bdSel, qpReady, bdIs(bdRxRQ)), "every engine has card_rx's bad RQ_PI's ERROR"),
		"s_fl_valid": And(tmTake, Or(tmPl, tmErr)), "s_fl_qp": Sel(tmPl, Bits(o("pl", "m_term_qp"), 9, 0), o("rx", "m_err_qp")), "s_fail_valid": txRecV[1], "s_fail_qp": o("tx", "m_cpl_qpn"),
		"qp_rq_base_lo": o("regs", "qp_rq_base_lo"), "qp_rq_base_hi": o("regs", "qp_rq_base_hi"),
		"qp_sizes_rq_log": o("regs", "qp_sizes_rq_log"), "qp_cqs_recv_cq": o("regs", "qp_cqs_recv_cq"),
		"m_cpl_ready": o("st", "s_rc_ready"), "m_rxterm_ready": And(tmG[0], o("tx", "s_term_ready")),
		// Read Requests to card_tx's responder; their IRD entries back.
		"qp_rd_ird": o("regs", "qp_rd_ird"), "m_rreq_ready": o("tx", "s_rreq_ready"), "m_rdone_ready": o("tx", "s_rdone_ready"),
		"s_rreq_done_valid": o("tx", "m_rreq_done_valid"), "s_rreq_done_qpn": o("tx", "m_rreq_done_qpn"),
	}
	plIn := map[string]Expr{"clk": clk, "rst": erst,
		"s_axis_tdata": o("rx", "m_ulp_tdata"), "s_axis_tkeep": o("rx", "m_ulp_tkeep"), "s_axis_tvalid": o("rx", "m_ulp_tvalid"),
		"s_axis_tlast": o("rx", "m_ulp_tlast"), "s_axis_tuser_len": o("rx", "m_ulp_len"), "s_axis_tuser_qp": o("rx", "m_ulp_qp"),
		"s_axis_tuser_pd": o("rx", "m_ulp_pd"), "s_axis_tuser_rev": o("rx", "m_ulp_rev"),
		"reg_wr_valid": o("regs", "reg_wr_valid"), "reg_wr_addr": o("regs", "reg_wr_addr"), "reg_wr_data": o("regs", "reg_wr_data"),
		"m_term_ready": And(tmPl, o("tx", "s_term_ready")),
		// The check port: card_tx's lkey checks (the only user so far).
		"s_chk_valid": o("tx", "m_chk_valid"), "s_chk_stag": o("tx", "m_chk_stag"), "s_chk_pd": o("tx", "m_chk_pd"),
		"s_chk_qp": o("tx", "m_chk_qp"), "s_chk_need": o("tx", "m_chk_need"), "s_chk_to": o("tx", "m_chk_to"),
		"s_chk_len": o("tx", "m_chk_len"), "s_chk_tag": o("tx", "m_chk_tag"), "m_chk_ready": o("tx", "s_chk_ready"),
	}
	plIn["s_mop_valid"] = o("tx", "m_mop_valid")
	for _, f := range mopReqFields {
		plIn["s_mop_"+f.name] = o("tx", "m_mop_"+f.name)
	}
	// Untagged segments, STag checks, invalidations and placement's DMA
	// blocks between card_rx and placement (card_rx writes them).
	for _, c := range CardRxPlacementWiring() {
		if rx.Port(c[0]).Dir == In {
			rxIn[c[0]] = o("pl", c[1])
		} else {
			plIn[c[1]] = o("rx", c[0])
		}
	}
	rdBack(rxIn, "m_axi_", CardRdMasterRx)
	rdBack(rxIn, "m_axi_rq_", CardRdMasterRQ)
	wrBack(rxIn, CardWrMasterPl)
	t.place("rx", rx, rxIn)
	plIn["cfg_drop_after_fail"] = C(1, 1)
	plIn["cfg_read_check"] = C(1, 1)
	for _, n := range []string{"valid", "qp", "count", "stag", "to", "len"} {
		plIn["s_rd_issue_"+n] = o("tx", "m_rd_issue_"+n)
	}
	t.place("pl", pl, plIn)

	// card_stat: status records; card_tx's CQEs pass through it.
	stIn := map[string]Expr{"clk": clk, "rst": erst,
		"qp_cmd_valid": qpV[2], "qp_cmd_op": cmdOp, "qp_num_qpn": cmdQPN, "qp_cmd_bad_db": And(bdSel, Or(Not(bdIs(bdErr)), Eq(errKind, C(3, CardRxErrBadDoorbell)))), "qp_cmd_cut": And(bdSel, bdIs(bdErr), Eq(errKind, C(3, CardRxErrStreamCut))),
		"qpstat_base_lo": o("regs", "qpstat_base_lo"), "qpstat_base_hi": o("regs", "qpstat_base_hi"),
		"s_tx_valid": txRecV[0], "s_tx_qpn": o("tx", "m_cpl_qpn"), "s_tx_sq_ci": o("tx", "m_cpl_sq_ci"),
		"s_tx_txs_pi": o("tx", "m_cpl_txs_pi"), "s_tx_cqe": o("tx", "m_cpl_cqe"), "s_tx_cq": o("tx", "m_cpl_cq"),
		"s_tx_wr_id": o("tx", "m_cpl_wr_id"), "s_tx_opcode": o("tx", "m_cpl_opcode"), "s_tx_status": o("tx", "m_cpl_status"),
		"s_tx_byte_len": o("tx", "m_cpl_byte_len"), "s_tx_term": o("tx", "m_cpl_term"), "s_tx_term_cause": o("tx", "m_cpl_term_cause"), "s_tx_keep_txs": o("tx", "m_cpl_keep_txs"),
		"s_rx_valid": o("rx", "m_ci_valid"), "s_rx_qpn": o("rx", "m_ci_qp"), "s_rx_rxs_ci": o("rx", "m_ci_value"), "s_rx_err": o("rx", "m_ci_err"),
		"m_cpl_ready": o("cq", "s_cpl0_ready"), "m_ev_ready": o("cq", "s_ev0_ready"),
		"m_end_ready": And(o("tx", "s_end_ready"), endGo),
		// card_rx's receive completions: RQ_CI, then the CQE.
		"s_rc_valid": o("rx", "m_cpl_valid"), "s_rc_qpn": o("rx", "m_cpl_qpn"), "s_rc_rq_ci": o("rx", "m_cpl_rq_ci"),
		"s_rc_cq": o("rx", "m_cpl_cq"), "s_rc_wr_id": o("rx", "m_cpl_wr_id"), "s_rc_opcode": o("rx", "m_cpl_opcode"),
		"s_rc_status": o("rx", "m_cpl_status"), "s_rc_byte_len": o("rx", "m_cpl_byte_len"), "s_rc_inv_stag": o("rx", "m_cpl_inv_stag"),
		"s_rc_solicited": o("rx", "m_cpl_solicited"), "s_rc_invalidated": o("rx", "m_cpl_invalidated"), "s_rc_silent": o("rx", "m_cpl_silent"),
		// SQ_PI and PUSH (CLOSE waits for SQ_CI to reach SQ_PI), TXS_CI,
		// RXS_PI and STREAM (the stream events).
		"s_db_valid": dbV[3], "s_db_kind": dk, "s_db_index": o("regs", "m_db_index"), "s_db_value": o("regs", "m_db_value"),
		"s_owed": Or(o("tx", "m_owed"), And(o("rx", "m_rreq_valid"), Eq(o("rx", "m_rreq_qpn"), o("st", "m_owed_qpn")))),
	}
	wrBack(stIn, CardWrMasterSt)
	t.place("st", stat, stIn)

	// card_cq.
	cqIn := map[string]Expr{"clk": clk, "rst": erst,
		"s_cpl0_valid": o("st", "m_cpl_valid"), "s_cpl0_cq": o("st", "m_cpl_cq"), "s_cpl0_qpn": zext(o("st", "m_cpl_qpn"), 16),
		"s_cpl0_wr_id": o("st", "m_cpl_wr_id"), "s_cpl0_byte_len": o("st", "m_cpl_byte_len"), "s_cpl0_opcode": o("st", "m_cpl_opcode"),
		"s_cpl0_status": o("st", "m_cpl_status"), "s_cpl0_inv_stag": o("st", "m_cpl_inv_stag"),
		"s_cpl0_solicited": o("st", "m_cpl_solicited"), "s_cpl0_invalidated": o("st", "m_cpl_invalidated"),
		"s_cqdb_valid": dbV[2], "s_cqdb_index": o("regs", "m_db_index"), "s_cqdb_value": o("regs", "m_db_value"),
		"irq_ready": irqReady, "m_overrun_ready": sw.ready,
		// card_stat's events (TX_DATA, RX_SPACE, QP_ERROR), after the
		// status writes before them.
		"s_ev0_valid": o("st", "m_ev_valid"), "s_ev0_type": o("st", "m_ev_type"), "s_ev0_obj": zext(o("st", "m_ev_qpn"), 32),
		"s_ev0_info": o("st", "m_ev_info"), "s_ev0_term_layer": C(4, 0), "s_ev0_term_type": C(4, 0), "s_ev0_term_code": C(8, 0),
		"s_ev0_stop": o("st", "m_ev_stop"),
		// card_tx's TERM_SENT, TERM_RECV and QP_ERROR CQ_OVERRUN events.
		"s_ev1_valid": o("tx", "m_ev_valid"), "s_ev1_type": o("tx", "m_ev_type"), "s_ev1_obj": zext(o("tx", "m_ev_qpn"), 32),
		"s_ev1_info": o("tx", "m_ev_info"), "s_ev1_term_layer": Bits(o("tx", "m_ev_cause"), 15, 12), "s_ev1_term_type": Bits(o("tx", "m_ev_cause"), 11, 8),
		"s_ev1_term_code": Bits(o("tx", "m_ev_cause"), 7, 0),
	}
	// The second completion port (every completion comes through
	// card_stat): tied off.
	for _, f := range []string{"term_layer", "term_type", "term_code"} {
		cqIn["s_cpl0_"+f] = o("st", "m_cpl_"+f)
	}
	for _, p := range cq.Ports {
		if _, ok := cqIn[p.Name]; !ok && p.Dir == In && (strings.HasPrefix(p.Name, "s_cpl1_") || strings.HasPrefix(p.Name, "s_ev1_")) {
			cqIn[p.Name] = C(p.W, 0)
		}
	}
	cqIn["cq_cmd_valid"] = o("cmd", "m_cq_valid")
	for _, p := range []string{"cq_cmd_op", "cq_num_cqn", "cq_base_lo", "cq_base_hi", "cq_cfg_log_size",
		"eq_base_lo", "eq_base_hi", "eq_cfg_log_size", "eq_cfg_vector", "eq_cfg_enable", "eq_cfg_wr_pulse",
		"eq_db_valid", "eq_db_ci", "eq_db_arm", "irq_moderation_cycles"} {
		cqIn[p] = o("regs", p)
	}
	wrBack(cqIn, CardWrMasterCQ)
	t.place("cq", cq, cqIn)

	// AXI muxes: engine masters in, m_axi out.
	for i, src := range []string{"tx.m_axi_", "rx.m_axi_", "rx.m_axi_rq_", ""} {
		s := fmt.Sprintf("s%d_axi_", i)
		for _, p := range []string{"arid", "araddr", "arlen", "arsize", "arburst", "arvalid", "rready"} {
			if src != "" {
				inst, pre, _ := strings.Cut(src, ".")
				rdIn[s+p] = o(inst, pre+p)
				if p == "arvalid" {
					rdIn[s+p] = shutGate(rdShut[i], o(inst, pre+p), o("rdm", s+"arready"))
				}
				continue
			}
			w := rdm.Port(s + p).W
			v := uint64(0)
			if p == "rready" {
				v = 1 // a stray response to an unused source is dropped
			}
			rdIn[s+p] = C(w, v)
		}
	}
	t.place("rdm", rdm, rdIn)
	for i, src := range []string{"tx", "rx", "cq", "st"} {
		s := fmt.Sprintf("s%d_axi_", i)
		for _, p := range []string{"awid", "awaddr", "awlen", "awsize", "awburst", "awvalid", "wdata", "wstrb", "wlast", "wvalid", "bready"} {
			if p == "awid" {
				wrIn[s+p] = zext(o(src, "m_axi_awid"), wrm.Port(s+p).W)
				continue
			}
			wrIn[s+p] = o(src, "m_axi_"+p)
			if p == "awvalid" {
				wrIn[s+p] = shutGate(wrShut[i], o(src, "m_axi_"+p), o("wrm", s+"awready"))
			}
		}
	}
	t.place("wrm", wrm, wrIn)

	if err := t.finish(append([]Expr{Bits(o("regs", "qp_cqs_send_cq"), 15, 10), Bits(o("regs", "qp_rd_ord"), 7, 5),
		Bits(o("pl", "m_term_qp"), 31, 10), o("pl", "m_term_mdr")}, bidTop[:]...)...); err != nil {
		return nil, err
	}
	return m, m.Validate()
}
