package sim

import (
	"errors"
	"fmt"

	"github.com/openiwarp/openiwarp/golden/cycle"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// CardStatBench is the per-cycle co-simulation bench of card_stat_w<width>
// against golden/cycle's CardStat (its dma_wr modelled by DMAWr).
func CardStatBench(width int) (*Bench, error) {
	m, err := gen.CardStat(width)
	if err != nil {
		return nil, err
	}
	dcfg := gen.DMAWrDefault(width)
	b := NewBench(m, nil, nil)
	b.NewModel = func() (Model, error) {
		p, err := lookupCardStatCyclePorts(b.Layout)
		if err != nil {
			return nil, err
		}
		c, err := cycle.NewCardStat(cycle.DMAWrConfig{Width: dcfg.Width, IDBits: dcfg.IDBits, Bursts: dcfg.Bursts, TagBits: dcfg.TagBits})
		if err != nil {
			return nil, err
		}
		return &cardStatModel{m: c, p: p}, nil
	}
	b.NewDriver = func(seed uint64) Driver {
		d, err := newCardStatCycleDriver(b.Layout, seed)
		if err != nil {
			panic(err) // the model constructor reports the same port error first
		}
		return d
	}
	return b, nil
}

type cardStatCyclePorts struct {
	rst, cmdV, cmdOp, cmdQPN, cmdBad, cmdCut         Port
	base                                             [2]Port
	dbV, dbKind, dbIdx, dbVal                        Port
	txV, txQPN, txSQ, txPI, txCQE, txCQ              Port
	txWR, txOpc, txSt, txLen, txCause, txTrm, txKeep Port
	rxV, rxQPN, rxCI, rxErr                          Port
	rcV, rcQPN, rcRQ, rcCQ, rcWR, rcOpc              Port
	rcSt, rcLen, rcInv, rcSol, rcInvd, rcSil         Port
	cplR, evR, endR                                  Port
	awR, wR, bID, bResp, bV                          Port

	cmdR, dbR, txR, rxR, rcR                  Port
	cplV, cplCQ, cplQPN, cplWR, cplOpc, cplSt Port
	cplLen, cplInv, cplSol, cplInvd           Port
	cplTL, cplTT, cplTC                       Port
	evV, evT, evQPN, evInfo, evStop           Port
	endV, endQPN, endLost                     Port
	fltV, fltQPN, fltAddr, fatal, busy        Port
	doneV, doneQPN, doneClosed                Port
	owed, owedQPN                             Port
	axiWrPorts
}

func lookupCardStatCyclePorts(l Layout) (cardStatCyclePorts, error) {
	var p cardStatCyclePorts
	s := &portSet{l: l}
	p.rst, p.cmdV, p.cmdOp, p.cmdQPN = s.in("rst"), s.in("qp_cmd_valid"), s.in("qp_cmd_op"), s.in("qp_num_qpn")
	p.cmdBad, p.cmdCut = s.in("qp_cmd_bad_db"), s.in("qp_cmd_cut")
	p.base = [2]Port{s.in("qpstat_base_lo"), s.in("qpstat_base_hi")}
	p.dbV, p.dbKind, p.dbIdx, p.dbVal = s.in("s_db_valid"), s.in("s_db_kind"), s.in("s_db_index"), s.in("s_db_value")
	p.txV, p.txQPN, p.txSQ, p.txPI = s.in("s_tx_valid"), s.in("s_tx_qpn"), s.in("s_tx_sq_ci"), s.in("s_tx_txs_pi")
	p.txCQE, p.txCQ, p.txWR, p.txOpc = s.in("s_tx_cqe"), s.in("s_tx_cq"), s.in("s_tx_wr_id"), s.in("s_tx_opcode")
	p.txSt, p.txLen, p.txCause, p.txTrm = s.in("s_tx_status"), s.in("s_tx_byte_len"), s.in("s_tx_term_cause"), s.in("s_tx_term")
	p.txKeep = s.in("s_tx_keep_txs")
	p.rxV, p.rxQPN, p.rxCI, p.rxErr = s.in("s_rx_valid"), s.in("s_rx_qpn"), s.in("s_rx_rxs_ci"), s.in("s_rx_err")
	p.rcV, p.rcQPN, p.rcRQ, p.rcCQ = s.in("s_rc_valid"), s.in("s_rc_qpn"), s.in("s_rc_rq_ci"), s.in("s_rc_cq")
	p.rcWR, p.rcOpc, p.rcSt, p.rcLen = s.in("s_rc_wr_id"), s.in("s_rc_opcode"), s.in("s_rc_status"), s.in("s_rc_byte_len")
	p.rcInv, p.rcSol, p.rcInvd, p.rcSil = s.in("s_rc_inv_stag"), s.in("s_rc_solicited"), s.in("s_rc_invalidated"), s.in("s_rc_silent")
	p.cplR, p.evR, p.endR = s.in("m_cpl_ready"), s.in("m_ev_ready"), s.in("m_end_ready")
	p.awR, p.wR, p.bID, p.bResp, p.bV = s.in("m_axi_awready"), s.in("m_axi_wready"), s.in("m_axi_bid"), s.in("m_axi_bresp"), s.in("m_axi_bvalid")

	p.cmdR, p.dbR, p.txR, p.rxR, p.rcR = s.out("qp_cmd_ready"), s.out("s_db_ready"), s.out("s_tx_ready"), s.out("s_rx_ready"), s.out("s_rc_ready")
	p.cplV, p.cplCQ, p.cplQPN, p.cplWR = s.out("m_cpl_valid"), s.out("m_cpl_cq"), s.out("m_cpl_qpn"), s.out("m_cpl_wr_id")
	p.cplOpc, p.cplSt, p.cplLen, p.cplInv = s.out("m_cpl_opcode"), s.out("m_cpl_status"), s.out("m_cpl_byte_len"), s.out("m_cpl_inv_stag")
	p.cplSol, p.cplInvd = s.out("m_cpl_solicited"), s.out("m_cpl_invalidated")
	p.cplTL, p.cplTT, p.cplTC = s.out("m_cpl_term_layer"), s.out("m_cpl_term_type"), s.out("m_cpl_term_code")
	p.evV, p.evT, p.evQPN, p.evInfo, p.evStop = s.out("m_ev_valid"), s.out("m_ev_type"), s.out("m_ev_qpn"), s.out("m_ev_info"), s.out("m_ev_stop")
	p.endV, p.endQPN, p.endLost = s.out("m_end_valid"), s.out("m_end_qpn"), s.out("m_end_lost")
	p.fltV, p.fltQPN, p.fltAddr = s.out("m_fault_valid"), s.out("m_fault_qpn"), s.out("m_fault_addr")
	p.fatal, p.busy, p.doneV, p.doneQPN = s.out("fatal"), s.out("busy"), s.out("m_done_valid"), s.out("m_done_qpn")
	p.doneClosed, p.owed, p.owedQPN = s.out("m_done_closed"), s.in("s_owed"), s.out("m_owed_qpn")
	p.axiWrPorts = s.axiWr()
	return p, s.err
}

// get reads every input of a cycle into x.
func (p *cardStatCyclePorts) get(in []uint32, x *cycle.CardStatIn) {
	g := func(q Port) uint64 { return q.Get(in) }
	t := func(q Port) bool { return q.Get(in) != 0 }
	x.Reset = t(p.rst)
	x.QPStatBase = get64(p.base, in)
	x.CmdValid, x.CmdOp, x.CmdQPN, x.CmdBadDB, x.CmdCut = t(p.cmdV), cs.QPOp(g(p.cmdOp)), uint16(g(p.cmdQPN)), t(p.cmdBad), t(p.cmdCut)
	x.DBValid, x.DBKind, x.DBIndex, x.DBValue = t(p.dbV), cs.DBKind(g(p.dbKind)), uint16(g(p.dbIdx)), uint32(g(p.dbVal))
	x.TxValid = t(p.txV)
	x.Tx = cycle.CardStatTx{QPN: uint16(g(p.txQPN)), SQCI: uint16(g(p.txSQ)), TXSPI: uint32(g(p.txPI)), CQE: t(p.txCQE), CQ: uint16(g(p.txCQ)),
		WRID: g(p.txWR), Opcode: uint8(g(p.txOpc)), Status: uint8(g(p.txSt)), ByteLen: uint32(g(p.txLen)), TermCause: uint16(g(p.txCause)), Term: t(p.txTrm), KeepTXSPI: t(p.txKeep)}
	x.RxValid = t(p.rxV)
	x.Rx = cycle.CardStatRx{QPN: uint16(g(p.rxQPN)), RXSCI: uint32(g(p.rxCI)), Err: t(p.rxErr)}
	x.RcValid = t(p.rcV)
	x.Rc = cycle.CardStatRc{QPN: uint16(g(p.rcQPN)), RQCI: uint16(g(p.rcRQ)), CQ: uint16(g(p.rcCQ)), WRID: g(p.rcWR), Opcode: uint8(g(p.rcOpc)),
		Status: uint8(g(p.rcSt)), ByteLen: uint32(g(p.rcLen)), InvSTag: uint32(g(p.rcInv)), Solicited: t(p.rcSol), Invalidated: t(p.rcInvd), Silent: t(p.rcSil)}
	x.CplReady, x.EvReady, x.EndReady = t(p.cplR), t(p.evR), t(p.endR)
	x.AWReady, x.WReady, x.BValid, x.BResp = t(p.awR), t(p.wR), t(p.bV), uint8(g(p.bResp))
	x.Owed = t(p.owed)
}

// set writes every input of a cycle from x but the AXI slave's (AXIHost
// drives those).
func (p *cardStatCyclePorts) set(in []uint32, x *cycle.CardStatIn) {
	p.rst.Set(in, b2u(x.Reset))
	set64(p.base, in, x.QPStatBase)
	p.cmdV.Set(in, b2u(x.CmdValid))
	p.cmdOp.Set(in, uint64(x.CmdOp))
	p.cmdQPN.Set(in, uint64(x.CmdQPN))
	p.cmdBad.Set(in, b2u(x.CmdBadDB))
	p.cmdCut.Set(in, b2u(x.CmdCut))
	p.dbV.Set(in, b2u(x.DBValid))
	p.dbKind.Set(in, uint64(x.DBKind))
	p.dbIdx.Set(in, uint64(x.DBIndex))
	p.dbVal.Set(in, uint64(x.DBValue))
	t := &x.Tx
	p.txV.Set(in, b2u(x.TxValid))
	p.txQPN.Set(in, uint64(t.QPN))
	p.txSQ.Set(in, uint64(t.SQCI))
	p.txPI.Set(in, uint64(t.TXSPI))
	p.txCQE.Set(in, b2u(t.CQE))
	p.txCQ.Set(in, uint64(t.CQ))
	p.txWR.Set(in, t.WRID)
	p.txOpc.Set(in, uint64(t.Opcode))
	p.txSt.Set(in, uint64(t.Status))
	p.txLen.Set(in, uint64(t.ByteLen))
	p.txCause.Set(in, uint64(t.TermCause))
	p.txTrm.Set(in, b2u(t.Term))
	p.txKeep.Set(in, b2u(t.KeepTXSPI))
	p.rxV.Set(in, b2u(x.RxValid))
	p.rxQPN.Set(in, uint64(x.Rx.QPN))
	p.rxCI.Set(in, uint64(x.Rx.RXSCI))
	p.rxErr.Set(in, b2u(x.Rx.Err))
	r := &x.Rc
	p.rcV.Set(in, b2u(x.RcValid))
	p.rcQPN.Set(in, uint64(r.QPN))
	p.rcRQ.Set(in, uint64(r.RQCI))
	p.rcCQ.Set(in, uint64(r.CQ))
	p.rcWR.Set(in, r.WRID)
	p.rcOpc.Set(in, uint64(r.Opcode))
	p.rcSt.Set(in, uint64(r.Status))
	p.rcLen.Set(in, uint64(r.ByteLen))
	p.rcInv.Set(in, uint64(r.InvSTag))
	p.rcSol.Set(in, b2u(r.Solicited))
	p.rcInvd.Set(in, b2u(r.Invalidated))
	p.rcSil.Set(in, b2u(r.Silent))
	p.cplR.Set(in, b2u(x.CplReady))
	p.evR.Set(in, b2u(x.EvReady))
	p.endR.Set(in, b2u(x.EndReady))
}

type cardStatModel struct {
	m   *cycle.CardStat
	p   cardStatCyclePorts
	in  cycle.CardStatIn
	out cycle.CardStatOut

	Full uint64 // cycles with the queue full
}

func (a *cardStatModel) Step(in, out []uint32) {
	p := &a.p
	p.get(in, &a.in)
	o := &a.out
	a.m.Step(&a.in, o)
	if a.m.Waiting() == cycle.CardStatPend {
		a.Full++
	}
	p.cmdR.Set(out, b2u(o.CmdReady))
	p.dbR.Set(out, b2u(o.DBReady))
	p.txR.Set(out, b2u(o.TxReady))
	p.rxR.Set(out, b2u(o.RxReady))
	p.rcR.Set(out, b2u(o.RcReady))
	c := &o.Cpl
	p.cplV.Set(out, b2u(o.CplValid))
	p.cplCQ.Set(out, uint64(c.CQ))
	p.cplQPN.Set(out, uint64(c.QPN))
	p.cplWR.Set(out, c.WRID)
	p.cplOpc.Set(out, uint64(c.Opcode))
	p.cplSt.Set(out, uint64(c.Status))
	p.cplLen.Set(out, uint64(c.ByteLen))
	p.cplInv.Set(out, uint64(c.InvSTag))
	p.cplSol.Set(out, b2u(c.Solicited))
	p.cplInvd.Set(out, b2u(c.Invalidated))
	p.cplTL.Set(out, uint64(c.TermLayer))
	p.cplTT.Set(out, uint64(c.TermType))
	p.cplTC.Set(out, uint64(c.TermCode))
	p.evV.Set(out, b2u(o.EvValid))
	p.evT.Set(out, uint64(o.EvType))
	p.evQPN.Set(out, uint64(o.EvQPN))
	p.evInfo.Set(out, uint64(o.EvInfo))
	p.evStop.Set(out, b2u(o.EvStop))
	p.endV.Set(out, b2u(o.EndValid))
	p.endQPN.Set(out, uint64(o.EndQPN))
	p.endLost.Set(out, b2u(o.EndLost))
	p.fltV.Set(out, b2u(o.FaultValid))
	p.fltQPN.Set(out, uint64(o.FaultQPN))
	p.fltAddr.Set(out, o.FaultAddr)
	p.fatal.Set(out, b2u(o.Fatal))
	p.busy.Set(out, b2u(o.Busy))
	p.doneV.Set(out, b2u(o.DoneValid))
	p.doneQPN.Set(out, uint64(o.DoneQPN))
	p.doneClosed.Set(out, b2u(o.DoneClosed))
	p.owedQPN.Set(out, uint64(o.OwedQPN))
	p.axiWrPorts.set(out, &o.AXIWr)
}

// errStatRefused is the simulated IOMMU refusing a status write.
var errStatRefused = errors.New("status write refused")

// statFaultMem takes card_stat's status writes, refusing one now and then.
type statFaultMem struct {
	d *cardStatCycleDriver
}

func (m statFaultMem) ReadMem(uint64, []byte) error {
	return fmt.Errorf("sim: card_stat reads nothing")
}
func (m statFaultMem) WriteMem(a uint64, p []byte) error {
	d := m.d
	d.Writes++
	if len(p) != cs.QPStatSize || a%cs.QPStatSize != 0 {
		d.fail("a status write of %d bytes at %#x", len(p), a)
	}
	if d.faultP > 0 && d.rng.Chance(d.faultP) {
		d.Refused++
		return errStatRefused
	}
	return nil
}

// statQPShadow is what the driver keeps of a QP to make plausible
// records: the indices it gave, and whether it created the QP.
type statQPShadow struct {
	created      bool
	sqPI, sqCI   uint16
	rqCI         uint16
	txsPI, rxsCI uint32
}

// cardStatCycleDriver drives card_stat as the card does, with random
// timing: QP commands (CREATE, CLOSE, ERROR with HOST, BAD_DOORBELL or
// STREAM_CUT, DESTROY, and OPs that do nothing), doorbells of every kind
// (STREAM with random bits, RX_LOST now and then; RXS_PI at or past what
// was consumed, so that streams end; SQ_PI toward which the transmit
// records move, so that CLOSE finishes), card_tx's records (CQEs, the
// Terminate's record with its cause), card_rx's RXS_CI records (now and
// then past a failed FPDU) and receive completions (silent ones too), on a
// few QP numbers and now and then on any; junk on the data lines of the
// ports not offered; random readiness of m_cpl, m_ev and m_end (with
// stalls that fill the queue), an AXI slave with random readiness and
// write-response latency that refuses a status write now and then (the
// card then stops; the driver resets it a while later), rare resets at
// any time, and a new QPSTAT_BASE at each reset (with baseMoves, at any
// time).
type cardStatCycleDriver struct {
	p     cardStatCyclePorts
	l     Layout
	rng   Rand
	host  *AXIHost
	seed  uint64
	cycle uint64
	x     cycle.CardStatIn // the inputs offered (records held until taken)
	qpns  []uint16
	qps   [cs.MaxQP]statQPShadow

	resetLeft  int
	wasReset   bool   // the last cycle was a reset cycle
	baseMoves  bool   // QPSTAT_BASE is rewritten at any time, not only at resets
	resetAt    uint64 // when to reset a stopped card
	phaseEnd   uint64
	cplP, evP  int
	endP       int
	faultP     int
	load       int // the odds of new records, out of 256 of the full load's
	junk       bool
	fatalSeen  bool
	hostResets uint64

	Err error

	// Counts for the test.
	Resets, Writes, Refused                     uint64
	Cmds                                        map[cs.QPOp]uint64
	DBs                                         map[cs.DBKind]uint64
	Tx, TxCQE, TxTerm, Rx, RxErr                uint64
	Rc, RcSilent, TakenStopped                  uint64
	Cpls, Ends, EndsLost, Faults, Dones, Closed uint64
	Events                                      map[cs.EQEType]uint64
	QPErrs                                      map[cs.QPErr]uint64
	Offered, Held                               uint64 // cycles with a record offered; ... and none taken
	CplWait, EvWait                             uint64 // cycles a completion or an event waits for its ready
}

func newCardStatCycleDriver(l Layout, seed uint64) (*cardStatCycleDriver, error) {
	p, err := lookupCardStatCyclePorts(l)
	if err != nil {
		return nil, err
	}
	d := &cardStatCycleDriver{p: p, l: l, rng: NewRand(seed), seed: seed, resetLeft: 3,
		Cmds: map[cs.QPOp]uint64{}, DBs: map[cs.DBKind]uint64{}, Events: map[cs.EQEType]uint64{}, QPErrs: map[cs.QPErr]uint64{}}
	seen := map[uint16]bool{}
	for len(d.qpns) < 5 {
		n := uint16(1 + d.rng.IntN(cs.MaxQP-1))
		if !seen[n] {
			seen[n] = true
			d.qpns = append(d.qpns, n)
		}
	}
	d.newBase()
	if err := d.newHost(); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *cardStatCycleDriver) fail(format string, a ...any) {
	if d.Err == nil {
		d.Err = fmt.Errorf("cycle %d: "+format, append([]any{d.cycle}, a...)...)
	}
}

// newHost is a fresh AXI slave (at reset: the bursts in flight are gone).
func (d *cardStatCycleDriver) newHost() error {
	d.hostResets++
	h, err := NewAXIHost(d.l, "m_axi_", statFaultMem{d}, AXITiming{WriteLatency: 1, WriteJitter: 120, Ready: 180}, d.seed^d.hostResets*0x9e3779b97f4a7c15)
	d.host = h
	return err
}

// newBase picks QPSTAT_BASE: 32-byte aligned, now and then with bits 14:5
// all set, so that a QP number carries into bit 15.
func (d *cardStatCycleDriver) newBase() {
	b := d.rng.Uint64() &^ (cs.QPStatSize - 1)
	if d.rng.Chance(64) {
		b |= 0x7fe0
	}
	d.x.QPStatBase = b
}

// phase draws new readiness and fault odds.
func (d *cardStatCycleDriver) phase() {
	r := d.rng
	n := 500 + r.IntN(4500)
	ready := func() int {
		if n < 1500 && r.Chance(48) {
			return 0 // a stall: the queue fills
		}
		return []int{256, 256, 200, 128, 30}[r.IntN(5)]
	}
	d.cplP, d.evP, d.endP = ready(), ready(), ready()
	d.faultP = 0
	if r.Chance(64) {
		d.faultP = 1 + r.IntN(8)
	}
	d.junk = r.Chance(128)
	d.load = []int{256, 256, 64, 16}[r.IntN(4)] // light load now and then: updates meet an idle block
	d.host.Timing.Ready = []int{256, 200, 100, 30}[r.IntN(4)]
	d.host.Timing.WriteJitter = []int{1, 8, 60, 200}[r.IntN(4)]
	d.phaseEnd = d.cycle + uint64(n)
}

// pick is a QP for a new record: mostly one of the driver's, now and then
// any.
func (d *cardStatCycleDriver) pick() uint16 {
	if d.rng.Chance(4) {
		return uint16(d.rng.IntN(cs.MaxQP))
	}
	return d.qpns[d.rng.IntN(len(d.qpns))]
}

// pickLive is a QP the driver created, mostly.
func (d *cardStatCycleDriver) pickLive() (uint16, bool) {
	n := d.pick()
	return n, d.qps[n].created || d.rng.Chance(3)
}

// chance is true with odds p/256 at full load, fewer at a light one.
func (d *cardStatCycleDriver) chance(p int) bool { return d.rng.Chance(max(1, p*d.load/256)) }

func (d *cardStatCycleDriver) offer() {
	r, x := d.rng, &d.x
	if !x.CmdValid && d.chance(6) {
		n := d.pick()
		q := &d.qps[n]
		op := []cs.QPOp{cs.QPOpError, cs.QPOpDestroy, cs.QPOpClose, cs.QPOpError, cs.QPOpClose}[r.IntN(5)]
		switch {
		case !q.created:
			op = cs.QPOpCreate
		case r.Chance(8):
			op = cs.QPOpCreate // card_cmd would refuse it; card_stat starts the QP again
		case r.Chance(8):
			op = []cs.QPOp{0, 5, 6, 15}[r.IntN(4)] // taken without effect
		}
		own := op == cs.QPOpError && r.Chance(100)
		x.CmdValid, x.CmdOp = true, op
		x.CmdQPN = n | uint16(r.IntN(64))<<10 // junk above the QP number's 10 bits
		x.CmdBadDB = own && r.Chance(128)
		x.CmdCut = own && (!x.CmdBadDB || r.Chance(64))
	}
	if !x.DBValid && d.chance(60) {
		n := d.pick()
		q := &d.qps[n]
		kind := []cs.DBKind{cs.DBKindQPDBTXSCI, cs.DBKindQPDBStream, cs.DBKindQPDBStream, cs.DBKindQPDBSQPI, cs.DBKindQPDBRXSPI,
			cs.DBKindQPDBPush, cs.DBKindQPDBRQPI, cs.DBKindQPDBRXSPI, cs.DBKindCQDBCI, 7}[r.IntN(10)]
		v := r.Uint32()
		switch kind {
		case cs.DBKindQPDBStream:
			if r.Chance(230) {
				v &^= 1 << cs.QPDBStreamRXLostShift // a lost connection now and then
			}
		case cs.DBKindQPDBRXSPI:
			// RXS_PI: what the receive records consumed, or ahead.
			v = q.rxsCI + uint32(r.IntN(2))*uint32(r.IntN(5000))
		case cs.DBKindQPDBSQPI:
			// SQ_PI: at or past what the records completed, mostly.
			v = uint32(q.sqCI) + uint32(r.IntN(3))*uint32(r.IntN(9))
			q.sqPI = uint16(v)
		case cs.DBKindQPDBPush:
			q.sqPI++
		case cs.DBKindQPDBTXSCI:
			// TXS_CI: mostly what the ring holds, as a driver writes it.
			v = q.txsPI - uint32(r.IntN(2))*uint32(r.IntN(300))
		}
		x.DBValid, x.DBKind, x.DBIndex, x.DBValue = true, kind, n, v
	}
	if !x.TxValid && d.chance(50) {
		if n, ok := d.pickLive(); ok {
			q := &d.qps[n]
			if r.Chance(200) {
				q.txsPI += uint32(r.IntN(3000))
			}
			if q.sqPI != q.sqCI && r.Chance(200) {
				q.sqCI += min(uint16(r.IntN(9)), q.sqPI-q.sqCI) // toward SQ_PI, which a CLOSE waits for
			} else {
				q.sqCI += uint16(r.IntN(9))
			}
			term := r.Chance(4)
			cause := uint16(0)
			if term || r.Chance(16) {
				cause = uint16(r.Uint32())
			}
			x.TxValid = true
			x.Tx = cycle.CardStatTx{QPN: n, SQCI: q.sqCI, TXSPI: q.txsPI, CQE: !term && r.Chance(128), CQ: uint16(r.IntN(cs.MaxCQ)),
				WRID: r.Uint64(), Opcode: uint8(r.IntN(6)), Status: uint8(r.IntN(10)), ByteLen: r.Uint32(), TermCause: cause, Term: term, KeepTXSPI: !term && r.Chance(8)}
		}
	}
	if !x.RcValid && d.chance(40) {
		if n, ok := d.pickLive(); ok {
			q := &d.qps[n]
			q.rqCI += uint16(1 + r.IntN(8))
			x.RcValid = true
			x.Rc = cycle.CardStatRc{QPN: n | uint16(r.IntN(64))<<10, RQCI: q.rqCI, CQ: uint16(r.IntN(cs.MaxCQ)), WRID: r.Uint64(), Opcode: 3,
				Status: uint8(r.IntN(10)), ByteLen: r.Uint32(), InvSTag: r.Uint32(), Solicited: r.IntN(2) == 0, Invalidated: r.IntN(2) == 0,
				Silent: r.Chance(16)}
		}
	}
	if !x.RxValid && d.chance(40) {
		if n, ok := d.pickLive(); ok {
			q := &d.qps[n]
			q.rxsCI += uint32(1 + r.IntN(5000))
			x.RxValid = true
			x.Rx = cycle.CardStatRx{QPN: n, RXSCI: q.rxsCI, Err: r.Chance(3)} // now and then past a failed FPDU
		}
	}
}

// scramble puts junk on the data lines of the ports not offered.
func (d *cardStatCycleDriver) scramble() {
	r, x := d.rng, &d.x
	if !d.junk || !r.Chance(32) {
		return
	}
	if !x.CmdValid {
		x.CmdOp, x.CmdQPN, x.CmdBadDB, x.CmdCut = cs.QPOp(r.IntN(16)), uint16(r.Uint32()), r.IntN(2) == 0, r.IntN(2) == 0
	}
	if !x.DBValid {
		x.DBKind, x.DBIndex, x.DBValue = cs.DBKind(r.IntN(8)), uint16(r.IntN(cs.MaxQP)), r.Uint32()
	}
	if !x.TxValid {
		x.Tx = cycle.CardStatTx{QPN: uint16(r.IntN(cs.MaxQP)), SQCI: uint16(r.Uint32()), TXSPI: r.Uint32(), CQE: r.IntN(2) == 0, CQ: uint16(r.IntN(cs.MaxCQ)),
			WRID: r.Uint64(), Opcode: uint8(r.Uint32()), Status: uint8(r.Uint32()), ByteLen: r.Uint32(), TermCause: uint16(r.Uint32()), Term: r.IntN(2) == 0, KeepTXSPI: r.IntN(2) == 0}
	}
	if !x.RxValid {
		x.Rx = cycle.CardStatRx{QPN: uint16(r.IntN(cs.MaxQP)), RXSCI: r.Uint32(), Err: r.IntN(2) == 0}
	}
	if !x.RcValid {
		x.Rc = cycle.CardStatRc{QPN: uint16(r.Uint32()), RQCI: uint16(r.Uint32()), CQ: uint16(r.IntN(cs.MaxCQ)), WRID: r.Uint64(), Opcode: uint8(r.Uint32()),
			Status: uint8(r.Uint32()), ByteLen: r.Uint32(), InvSTag: r.Uint32(), Solicited: r.IntN(2) == 0, Invalidated: r.IntN(2) == 0, Silent: r.IntN(2) == 0}
	}
}

func (d *cardStatCycleDriver) Next(in []uint32) {
	r, x := d.rng, &d.x
	d.cycle++
	if d.cycle >= d.phaseEnd {
		d.phase()
	}
	if d.resetLeft == 0 && (d.resetAt != 0 && d.cycle >= d.resetAt || r.Uint32()%100_000 == 0) {
		d.resetLeft = 1 + r.IntN(3)
	}
	x.Reset = d.resetLeft > 0
	if x.Reset {
		d.resetLeft--
		d.resetAt, d.fatalSeen = 0, false
		if err := d.newHost(); err != nil {
			d.fail("%v", err)
		}
		d.phase()
	}
	// A new QPSTAT_BASE from the cycle after a reset cycle on, when the
	// queue is empty (in the reset cycle itself the head still shows);
	// with baseMoves at any time as well, status writes waiting.
	if d.wasReset || d.baseMoves && r.Chance(4) {
		d.newBase()
	}
	d.wasReset = x.Reset
	if d.cycle > 4 {
		d.offer()
	}
	d.scramble()
	x.CplReady, x.EvReady, x.EndReady = r.Chance(d.cplP), r.Chance(d.evP), r.Chance(d.endP)
	d.p.set(in, x)
	d.p.owed.Set(in, b2u(r.IntN(3) == 0)) // card_tx's answer: a QP owes a Read Response one time in three
	d.host.Drive(in)
	if d.p.bV.Get(in) == 0 {
		d.p.bID.Set(in, uint64(r.IntN(16))) // junk while no response is offered
	}
}

func (d *cardStatCycleDriver) Observe(in, out []uint32) {
	p, x := &d.p, &d.x
	if x.Reset {
		d.Resets++
		// What the upstream offered is gone with the reset; the QPs'
		// contexts are kept (RESET does not clear them).
		x.CmdValid, x.DBValid, x.TxValid, x.RxValid, x.RcValid = false, false, false, false, false
		return
	}
	if err := d.host.Observe(in, out); err != nil {
		d.fail("%v", err)
	}
	stopped := p.fatal.Get(out) != 0
	taken := false
	if x.CmdValid && p.cmdR.Get(out) != 0 {
		d.Cmds[x.CmdOp]++
		n := x.CmdQPN % cs.MaxQP
		switch x.CmdOp {
		case cs.QPOpCreate:
			d.qps[n] = statQPShadow{created: true}
		case cs.QPOpDestroy:
			d.qps[n].created = false
		}
		x.CmdValid, taken = false, true
	}
	if x.DBValid && p.dbR.Get(out) != 0 {
		d.DBs[x.DBKind]++
		x.DBValid, taken = false, true
	}
	if x.TxValid && p.txR.Get(out) != 0 {
		d.Tx++
		d.TxCQE += b2u(x.Tx.CQE)
		d.TxTerm += b2u(x.Tx.Term)
		x.TxValid, taken = false, true
	}
	if x.RxValid && p.rxR.Get(out) != 0 {
		d.Rx++
		d.RxErr += b2u(x.Rx.Err)
		x.RxValid, taken = false, true
	}
	if x.RcValid && p.rcR.Get(out) != 0 {
		d.Rc++
		d.RcSilent += b2u(x.Rc.Silent)
		x.RcValid, taken = false, true
	}
	if x.CmdValid || x.DBValid || x.TxValid || x.RxValid || x.RcValid || taken {
		d.Offered++
		if !taken {
			d.Held++
		}
	}
	if taken && stopped {
		d.TakenStopped++
	}
	if p.cplV.Get(out) != 0 {
		if x.CplReady {
			d.Cpls++
		} else {
			d.CplWait++
		}
	}
	if p.evV.Get(out) != 0 {
		if x.EvReady {
			t := cs.EQEType(p.evT.Get(out))
			d.Events[t]++
			if t == cs.EQETypeQPError {
				d.QPErrs[cs.QPErr(p.evInfo.Get(out))]++
			}
		} else {
			d.EvWait++
		}
	}
	if p.endV.Get(out) != 0 && x.EndReady {
		d.Ends++
		d.EndsLost += p.endLost.Get(out)
	}
	if p.fltV.Get(out) != 0 {
		d.Faults++
	}
	d.Dones += p.doneV.Get(out)
	d.Closed += p.doneClosed.Get(out)
	// A stopped card stays so until reset: reset it a while later.
	if stopped && !d.fatalSeen {
		d.fatalSeen = true
		d.resetAt = d.cycle + 50 + uint64(d.rng.IntN(2000))
	}
}
