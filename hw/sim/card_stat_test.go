package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// statRef is the card model's rule for what card_stat owns, QP by QP
// (host/driver/cardmodel: qpCommand and toError for CREATE, ERROR and
// DESTROY; stream for ARM_TX and ARM_RX; step for TX_DATA after the
// status write that publishes TXS_PI; consume for RX_SPACE after the
// status write of RXS_CI; complete for the status write before a CQE): the status writes it makes, in order, and each
// completion and event with the number of status writes that precede it.
type statRef struct {
	base   uint64
	qps    map[uint32]*statQP
	writes []statWrite
	cpls   []statOut
	evs    []statOut
	ends   []statOut // card_tx's stream-end records: {qpn, lost}
}

type statQP struct {
	pi, ci, tci  uint32
	rxpi         uint32
	fin, ended   bool
	sq, rq, sqpi uint16
	state        cs.QPState
	txc          bool
	armTX, armRX bool
}

type statWrite struct {
	addr uint64
	rec  [cs.QPStatSize]byte
}

// statOut is a completion or event: its fields as card_stat gives them,
// and how many status writes must have their response before it.
type statOut struct {
	f     [9]uint64
	after int
}

func (r *statRef) write(n uint32, q *statQP) {
	var w statWrite
	w.addr = r.base + uint64(n)*cs.QPStatSize
	s := cs.QPStat(w.rec[:])
	s.SetTXSPI(q.pi)
	s.SetRXSCI(q.ci)
	s.SetSQCI(q.sq)
	s.SetRQCI(q.rq)
	s.SetState(q.state)
	s.SetTXClosed(q.txc)
	r.writes = append(r.writes, w)
}

func (r *statRef) event(n uint32, t cs.EQEType, info uint32) {
	r.evs = append(r.evs, statOut{f: [9]uint64{uint64(t), uint64(n), uint64(info)}, after: len(r.writes)})
	// The stream's end or loss also goes to card_tx (its Read flush, or
	// the QP in error), with the event.
	if lost := t == cs.EQETypeQPError && info == uint32(cs.QPErrLLPLost); lost || t == cs.EQETypeStreamEnd {
		r.ends = append(r.ends, statOut{f: [9]uint64{uint64(n), b2u(lost)}, after: len(r.writes)})
	}
}

// toError is toError's: a QP in RTS, CLOSING or CLOSED goes to ERROR
// with TX_CLOSED, its record written, then QP_ERROR with the reason.
func (r *statRef) toError(n uint32, q *statQP, why cs.QPErr) bool {
	if q == nil || q.state == cs.QPStateError || q.state == cs.QPStateReset {
		return false
	}
	q.state, q.txc = cs.QPStateError, true
	r.write(n, q)
	r.event(n, cs.EQETypeQPError, uint32(why))
	return true
}

// streamEnd is rxStep's: the peer's stream ended and the ring is consumed
// to its end, in a QP not in error: STREAM_END, once.
func (r *statRef) streamEnd(n uint32, q *statQP) bool {
	if !q.fin || q.ended || q.ci != q.rxpi || q.state == cs.QPStateError || q.state == cs.QPStateReset {
		return false
	}
	q.ended = true
	r.event(n, cs.EQETypeStreamEnd, 0)
	return true
}

// txData is step's check: an armed QP whose transmit ring holds bytes
// past TXS_CI gets TX_DATA, and the arm is spent.
func (r *statRef) txData(n uint32, q *statQP) {
	if q.armTX && q.pi != q.tci {
		q.armTX = false
		r.event(n, cs.EQETypeTXData, 0)
	}
}

// command is qpCommand's; an ERROR that is card_rx's (why: its bad
// doorbell, its cut stream) is toError BAD_DOORBELL or STREAM_CUT.
func (r *statRef) command(n uint32, op cs.QPOp, why cs.QPErr) {
	q := r.qps[n]
	switch op {
	case cs.QPOpCreate:
		q = &statQP{state: cs.QPStateRts}
		r.qps[n] = q
		r.write(n, q)
	case cs.QPOpError:
		if why == 0 {
			why = cs.QPErrHost
		}
		r.toError(n, q, why)
	case cs.QPOpClose:
		if q == nil || q.state != cs.QPStateRts {
			return
		}
		q.state = cs.QPStateClosing
		if !r.closed(n, q) {
			r.write(n, q)
		}
	case cs.QPOpDestroy:
		if q != nil && (q.state == cs.QPStateClosed || q.state == cs.QPStateError) {
			q.state, q.txc = cs.QPStateReset, false
		}
	}
}

func (r *statRef) doorbell(n uint32, kind, v uint32) {
	q := r.qps[n]
	switch kind {
	case 3: // QP_DB_TXS_CI
		q.tci = v
	case 1: // QP_DB_SQ_PI
		q.sqpi = uint16(v)
		return
	case 6: // QP_DB_PUSH: SQ_PI + 1
		q.sqpi++
		return
	case 4: // QP_DB_RXS_PI
		q.rxpi = v
		r.streamEnd(n, q)
		return
	case 5: // QP_DB_STREAM
		q.armTX = q.armTX || v>>cs.QPDBStreamArmTXShift&1 != 0
		q.armRX = q.armRX || v>>cs.QPDBStreamArmRXShift&1 != 0
		q.fin = q.fin || v>>cs.QPDBStreamRXFinShift&1 != 0
		// card_stat gives one event per update: QP_ERROR or STREAM_END
		// first, and the arm stays for the next.
		if v>>cs.QPDBStreamRXLostShift&1 != 0 && r.toError(n, q, cs.QPErrLLPLost) || r.streamEnd(n, q) {
			return
		}
	default:
		return
	}
	r.txData(n, q)
}

// closed is step's end of a CLOSE: a closing QP whose posted send work
// is done (SQ_CI at SQ_PI) is CLOSED with TX_CLOSED, its record written,
// then QP_CLOSED.
func (r *statRef) closed(n uint32, q *statQP) bool {
	if q.state != cs.QPStateClosing || q.sq != q.sqpi {
		return false
	}
	q.state, q.txc = cs.QPStateClosed, true
	r.write(n, q)
	r.event(n, cs.EQETypeQPClosed, 0)
	return true
}

func (r *statRef) tx(n uint32, sq uint16, pi uint32, cpl *[9]uint64) {
	q := r.qps[n]
	q.pi, q.sq = pi, sq
	if r.closed(n, q) {
		// card_stat gives one event per update: QP_CLOSED, and TX_DATA
		// waits for the next.
		if cpl != nil {
			r.cpls = append(r.cpls, statOut{f: *cpl, after: len(r.writes)})
		}
		return
	}
	r.write(n, q)
	if cpl != nil {
		r.cpls = append(r.cpls, statOut{f: *cpl, after: len(r.writes)})
	}
	r.txData(n, q)
}

// rc is a receive completion: RQ_CI moves, the record is written, then
// the CQE.
func (r *statRef) rc(n uint32, rq uint16, cpl [9]uint64) {
	q := r.qps[n]
	q.rq = rq
	r.write(n, q)
	r.cpls = append(r.cpls, statOut{f: cpl, after: len(r.writes)})
}

// rx is consume's: RXS_CI moved; past a failed FPDU (failed), a live QP
// is in error already (the model's reject, before consume), with no event
// and its transmit stream still open.
func (r *statRef) rx(n uint32, ci uint32, failed bool) {
	q := r.qps[n]
	q.ci = ci
	if failed && (q.state == cs.QPStateRts || q.state == cs.QPStateClosing || q.state == cs.QPStateClosed) {
		q.state = cs.QPStateError
	}
	r.write(n, q)
	if r.streamEnd(n, q) {
		return
	}
	if q.armRX {
		q.armRX = false
		r.event(n, cs.EQETypeRXSpace, 0)
	}
}

type cardStatPorts struct {
	rst                                                         Port
	cmdV, cmdR, cmdOp, cmdQPN, baseLo, baseHi                   Port
	dbV, dbR, dbKind, dbIdx, dbVal                              Port
	txV, txR, txQPN, txSQ, txPI, txCQE, txCQ, txWR, txOpc       Port
	txSt, txLen, rxV, rxR, rxQPN, rxCI, rxErr, cmdBadDB, cmdCut Port
	rcV, rcR, rcQPN, rcRQ, rcCQ, rcWR, rcOpc, rcSt, rcLen       Port
	rcInv, rcSol, rcInvd, cplInv, cplSol, cplInvd               Port
	cplV, cplR, cplCQ, cplQPN, cplWR, cplOpc, cplSt, cplLn      Port
	evV, evR, evT, evQPN, evInfo, fault, bValid, bReady         Port
	endV, endR, endQPN, endLost                                 Port
}

// cardStatDriver drives card_stat with random QP commands, TXS_CI and
// STREAM doorbells, transmit and receive records on a few QPs, random
// backpressure on every port and random write-response latency, and
// checks it against statRef fed the operations in the order the RTL took
// them: every status write (address and bytes, in order), every
// completion and event (fields, in order), each only after the write
// responses of the status writes before it.
type cardStatDriver struct {
	p     cardStatPorts
	rng   Rand
	host  *AXIHost
	ref   statRef
	cycle uint64
	base  uint64
	qpns  []uint32

	cmd, db, tx, rx, rc  []uint64 // the record offered, nil when none
	rqs                  map[uint32]uint16
	pis                  map[uint32]uint32
	sqs                  map[uint32]uint16
	cis                  map[uint32]uint32
	wrote, bResp         int
	cplGot, evGot        int
	endGot               int
	stop                 uint64 // no new operations from this cycle on
	Err                  error
	Writes, Cpls, Evs    int
	EvTypes              map[cs.EQEType]int
	BadDB, Cut, RxFailed int // QP_ERROR BAD_DOORBELL and STREAM_CUT events; RXS_CI records past a failed FPDU
	statW                []statWrite
	cplReadyP, evReadyP  int
}

// statMem records card_stat's writes.
type statMem struct{ d *cardStatDriver }

func (m statMem) ReadMem(a uint64, p []byte) error { clear(p); return nil }
func (m statMem) WriteMem(a uint64, p []byte) error {
	var w statWrite
	w.addr = a
	copy(w.rec[:], p)
	if len(p) != cs.QPStatSize {
		m.d.fail("a status write of %d bytes at %#x", len(p), a)
	}
	m.d.statW = append(m.d.statW, w)
	return nil
}

func newCardStatDriver(l Layout, seed uint64, stop uint64) (*cardStatDriver, error) {
	s := &portSet{l: l}
	p := cardStatPorts{rst: s.in("rst"),
		cmdV: s.in("qp_cmd_valid"), cmdR: s.out("qp_cmd_ready"), cmdOp: s.in("qp_cmd_op"), cmdQPN: s.in("qp_num_qpn"),
		baseLo: s.in("qpstat_base_lo"), baseHi: s.in("qpstat_base_hi"),
		dbV: s.in("s_db_valid"), dbR: s.out("s_db_ready"), dbKind: s.in("s_db_kind"), dbIdx: s.in("s_db_index"), dbVal: s.in("s_db_value"),
		txV: s.in("s_tx_valid"), txR: s.out("s_tx_ready"), txQPN: s.in("s_tx_qpn"), txSQ: s.in("s_tx_sq_ci"), txPI: s.in("s_tx_txs_pi"),
		txCQE: s.in("s_tx_cqe"), txCQ: s.in("s_tx_cq"), txWR: s.in("s_tx_wr_id"), txOpc: s.in("s_tx_opcode"), txSt: s.in("s_tx_status"),
		txLen: s.in("s_tx_byte_len"), rxV: s.in("s_rx_valid"), rxR: s.out("s_rx_ready"), rxQPN: s.in("s_rx_qpn"), rxCI: s.in("s_rx_rxs_ci"), rxErr: s.in("s_rx_err"), cmdBadDB: s.in("qp_cmd_bad_db"), cmdCut: s.in("qp_cmd_cut"),
		cplV: s.out("m_cpl_valid"), cplR: s.in("m_cpl_ready"), cplCQ: s.out("m_cpl_cq"), cplQPN: s.out("m_cpl_qpn"), cplWR: s.out("m_cpl_wr_id"),
		cplOpc: s.out("m_cpl_opcode"), cplSt: s.out("m_cpl_status"), cplLn: s.out("m_cpl_byte_len"),
		cplInv: s.out("m_cpl_inv_stag"), cplSol: s.out("m_cpl_solicited"), cplInvd: s.out("m_cpl_invalidated"),
		rcV: s.in("s_rc_valid"), rcR: s.out("s_rc_ready"), rcQPN: s.in("s_rc_qpn"), rcRQ: s.in("s_rc_rq_ci"), rcCQ: s.in("s_rc_cq"),
		rcWR: s.in("s_rc_wr_id"), rcOpc: s.in("s_rc_opcode"), rcSt: s.in("s_rc_status"), rcLen: s.in("s_rc_byte_len"),
		rcInv: s.in("s_rc_inv_stag"), rcSol: s.in("s_rc_solicited"), rcInvd: s.in("s_rc_invalidated"),
		evV: s.out("m_ev_valid"), evR: s.in("m_ev_ready"), evT: s.out("m_ev_type"), evQPN: s.out("m_ev_qpn"), evInfo: s.out("m_ev_info"),
		endV: s.out("m_end_valid"), endR: s.in("m_end_ready"), endQPN: s.out("m_end_qpn"), endLost: s.out("m_end_lost"),
		fault: s.out("m_fault_valid"), bValid: s.in("m_axi_bvalid"), bReady: s.out("m_axi_bready")}
	if s.err != nil {
		return nil, s.err
	}
	d := &cardStatDriver{p: p, rng: NewRand(seed), base: 0x7_0000_0000 + uint64(seed%64)<<15, stop: stop,
		pis: map[uint32]uint32{}, sqs: map[uint32]uint16{}, rqs: map[uint32]uint16{}, cis: map[uint32]uint32{}, EvTypes: map[cs.EQEType]int{}}
	d.ref = statRef{base: d.base, qps: map[uint32]*statQP{}}
	seen := map[uint32]bool{}
	for len(d.qpns) < 4 {
		n := uint32(1 + d.rng.IntN(cs.MaxQP-1))
		if !seen[n] {
			seen[n] = true
			d.qpns = append(d.qpns, n)
		}
	}
	h, err := NewAXIHost(l, "m_axi_", statMem{d}, AXITiming{WriteLatency: 1, WriteJitter: 120, Ready: 180}, seed^0x5a5a)
	if err != nil {
		return nil, err
	}
	d.host = h
	return d, nil
}

func (d *cardStatDriver) fail(format string, a ...any) {
	if d.Err == nil {
		d.Err = fmt.Errorf("cycle %d: "+format, append([]any{d.cycle}, a...)...)
	}
}

// live is a QP card_stat has a context for (created, not destroyed).
func (d *cardStatDriver) live(n uint32) bool {
	q := d.ref.qps[n]
	return q != nil && q.state != cs.QPStateReset
}

func (d *cardStatDriver) pick() uint32 { return d.qpns[d.rng.IntN(len(d.qpns))] }

// offer makes new records: the engines' records only for live QPs, and
// at most one QP command in flight on a QP (a CREATE only on a QP
// without context).
func (d *cardStatDriver) offer() {
	r := d.rng
	if d.cycle >= d.stop {
		return
	}
	if d.cmd == nil && r.Chance(6) {
		n := d.pick()
		op := []cs.QPOp{cs.QPOpError, cs.QPOpDestroy, cs.QPOpClose, cs.QPOpError}[r.IntN(4)]
		if !d.live(n) {
			op = cs.QPOpCreate
		}
		// Junk above the QP number's 10 bits; now and then an ERROR is
		// card_rx's bad doorbell or cut stream.
		own := op == cs.QPOpError && r.Chance(128)
		bad := own && r.Chance(128)
		d.cmd = []uint64{uint64(op), uint64(n) | uint64(r.IntN(2))<<12, b2u(bad), b2u(own && !bad)}
	}
	if d.db == nil && r.Chance(60) {
		if n := d.pick(); d.live(n) {
			kind := []uint32{3, 5, 5, 1, 4, 6, 2, 4}[r.IntN(8)]
			v := r.Uint32()
			if kind == 5 && r.Chance(230) {
				v &^= 1 << cs.QPDBStreamRXLostShift // a lost connection now and then
			}
			if kind == 4 {
				// RXS_PI: what the receive records consumed, or ahead.
				v = d.cis[n] + uint32(r.IntN(2))*uint32(r.IntN(5000))
			}
			if kind == 1 {
				// SQ_PI: at or past what the records completed, mostly.
				v = uint32(d.sqs[n]) + uint32(r.IntN(3))*uint32(r.IntN(9))
			}
			if kind == 3 {
				// TXS_CI: mostly what the ring holds, as a driver writes it.
				v = d.pis[n] - uint32(r.IntN(2))*uint32(r.IntN(300))
			}
			d.db = []uint64{uint64(kind), uint64(n), uint64(v)}
		}
	}
	if d.tx == nil && r.Chance(50) {
		if n := d.pick(); d.live(n) {
			if r.Chance(200) {
				d.pis[n] += uint32(r.IntN(3000))
			}
			if q := d.ref.qps[n]; q.sqpi != d.sqs[n] && r.Chance(200) {
				d.sqs[n] += min(uint16(r.IntN(9)), q.sqpi-d.sqs[n]) // toward SQ_PI, which a CLOSE waits for
			} else {
				d.sqs[n] += uint16(r.IntN(9))
			}
			cqe := r.Chance(128)
			d.tx = []uint64{uint64(n), uint64(d.sqs[n]), uint64(d.pis[n]), b2u(cqe), uint64(r.IntN(1024)), r.Uint64(), uint64(r.IntN(6)), uint64(r.IntN(10)), uint64(r.Uint32())}
		}
	}
	if d.rc == nil && r.Chance(40) {
		if n := d.pick(); d.live(n) {
			d.rqs[n] += uint16(1 + r.IntN(8))
			// qpn, rq_ci, cq, wr_id, opcode, status, byte_len, inv_stag, solicited, invalidated
			d.rc = []uint64{uint64(n), uint64(d.rqs[n]), uint64(r.IntN(1024)), r.Uint64(), 3, uint64(r.IntN(10)), uint64(r.Uint32()),
				uint64(r.Uint32()), uint64(r.IntN(2)), uint64(r.IntN(2))}
		}
	}
	if d.rx == nil && r.Chance(40) {
		if n := d.pick(); d.live(n) {
			d.cis[n] += uint32(1 + r.IntN(5000))
			d.rx = []uint64{uint64(n), uint64(d.cis[n]), b2u(r.Chance(3))} // now and then past a failed FPDU
		}
	}
}

func (d *cardStatDriver) Next(in []uint32) {
	p := &d.p
	d.cycle++
	p.rst.Set(in, b2u(d.cycle <= 4))
	p.baseLo.Set(in, d.base&0xffffffff)
	p.baseHi.Set(in, d.base>>32)
	if d.cycle > 8 {
		d.offer()
	}
	set := func(v Port, rec []uint64, ports ...Port) {
		v.Set(in, b2u(rec != nil))
		for i, q := range ports {
			if rec != nil {
				q.Set(in, rec[i])
			} else {
				q.Set(in, 0)
			}
		}
	}
	set(p.cmdV, d.cmd, p.cmdOp, p.cmdQPN, p.cmdBadDB, p.cmdCut)
	set(p.dbV, d.db, p.dbKind, p.dbIdx, p.dbVal)
	set(p.txV, d.tx, p.txQPN, p.txSQ, p.txPI, p.txCQE, p.txCQ, p.txWR, p.txOpc, p.txSt, p.txLen)
	set(p.rxV, d.rx, p.rxQPN, p.rxCI, p.rxErr)
	set(p.rcV, d.rc, p.rcQPN, p.rcRQ, p.rcCQ, p.rcWR, p.rcOpc, p.rcSt, p.rcLen, p.rcInv, p.rcSol, p.rcInvd)
	if d.cycle%5000 == 0 {
		d.cplReadyP, d.evReadyP = []int{256, 128, 20}[d.rng.IntN(3)], []int{256, 128, 20}[d.rng.IntN(3)]
	}
	p.cplR.Set(in, b2u(d.rng.Chance(d.cplReadyP)))
	p.evR.Set(in, b2u(d.rng.Chance(d.evReadyP)))
	p.endR.Set(in, b2u(d.rng.Chance(d.evReadyP)))
	d.host.Drive(in)
}

func (d *cardStatDriver) Observe(in, out []uint32) {
	p := &d.p
	if err := d.host.Observe(in, out); err != nil {
		d.fail("%v", err)
	}
	if p.fault.Get(out) != 0 {
		d.fail("m_fault without a refused write")
	}
	took := 0
	// The RTL takes one record a cycle; the reference gets them in the
	// order the RTL took them.
	if p.cmdV.Get(in) != 0 && p.cmdR.Get(out) != 0 {
		why := cs.QPErr(0)
		if d.cmd[2] != 0 {
			why = cs.QPErrBadDoorbell
		} else if d.cmd[3] != 0 {
			why = cs.QPErrStreamCut
		}
		d.ref.command(uint32(d.cmd[1]&0x3ff), cs.QPOp(d.cmd[0]), why)
		d.cmd = nil
		took++
	}
	if p.dbV.Get(in) != 0 && p.dbR.Get(out) != 0 {
		d.ref.doorbell(uint32(d.db[1]), uint32(d.db[0]), uint32(d.db[2]))
		d.db = nil
		took++
	}
	if p.txV.Get(in) != 0 && p.txR.Get(out) != 0 {
		t := d.tx
		var cpl *[9]uint64
		if t[3] != 0 {
			// cq, qpn, wr_id, opcode, status, byte_len, inv_stag, solicited, invalidated
			cpl = &[9]uint64{t[4], t[0], t[5], t[6], t[7], t[8]}
		}
		d.ref.tx(uint32(t[0]), uint16(t[1]), uint32(t[2]), cpl)
		d.tx = nil
		took++
	}
	if p.rcV.Get(in) != 0 && p.rcR.Get(out) != 0 {
		c := d.rc
		d.ref.rc(uint32(c[0]), uint16(c[1]), [9]uint64{c[2], c[0], c[3], c[4], c[5], c[6], c[7], c[8], c[9]})
		d.rc = nil
		took++
	}
	if p.rxV.Get(in) != 0 && p.rxR.Get(out) != 0 {
		d.ref.rx(uint32(d.rx[0]), uint32(d.rx[1]), d.rx[2] != 0)
		d.RxFailed += int(d.rx[2])
		d.rx = nil
		took++
	}
	if took > 1 {
		d.fail("%d records taken in one cycle", took)
	}
	if p.bValid.Get(in) != 0 && p.bReady.Get(out) != 0 {
		d.bResp++
	}
	// Status writes, in order.
	for ; d.wrote < len(d.statW); d.wrote++ {
		if d.wrote >= len(d.ref.writes) {
			d.fail("status write %d at %#x: the reference made %d", d.wrote, d.statW[d.wrote].addr, len(d.ref.writes))
			return
		}
		if got, want := d.statW[d.wrote], d.ref.writes[d.wrote]; got != want {
			d.fail("status write %d: RTL %x at %#x, reference %x at %#x", d.wrote, got.rec, got.addr, want.rec, want.addr)
			return
		}
		d.Writes++
	}
	check := func(kind string, got [9]uint64, list []statOut, i *int) {
		if *i >= len(list) {
			d.fail("%s %v: the reference has %d", kind, got, len(list))
			return
		}
		want := list[*i]
		if got != want.f {
			d.fail("%s %d: RTL %v, reference %v", kind, *i, got, want.f)
		}
		if d.bResp < want.after {
			d.fail("%s %d before the write response of status write %d (%d answered)", kind, *i, want.after-1, d.bResp)
		}
		*i++
	}
	if p.cplV.Get(out) != 0 && p.cplR.Get(in) != 0 {
		check("completion", [9]uint64{p.cplCQ.Get(out), p.cplQPN.Get(out), p.cplWR.Get(out), p.cplOpc.Get(out), p.cplSt.Get(out), p.cplLn.Get(out),
			p.cplInv.Get(out), p.cplSol.Get(out), p.cplInvd.Get(out)}, d.ref.cpls, &d.cplGot)
		d.Cpls++
	}
	if p.evV.Get(out) != 0 && p.evR.Get(in) != 0 {
		got := [9]uint64{p.evT.Get(out), p.evQPN.Get(out), p.evInfo.Get(out)}
		check("event", got, d.ref.evs, &d.evGot)
		d.Evs++
		d.EvTypes[cs.EQEType(got[0])]++
		if cs.EQEType(got[0]) == cs.EQETypeQPError && got[2] == uint64(cs.QPErrBadDoorbell) {
			d.BadDB++
		}
		if cs.EQEType(got[0]) == cs.EQETypeQPError && got[2] == uint64(cs.QPErrStreamCut) {
			d.Cut++
		}
	}
	if p.endV.Get(out) != 0 && p.endR.Get(in) != 0 {
		check("stream-end record", [9]uint64{p.endQPN.Get(out), p.endLost.Get(out)}, d.ref.ends, &d.endGot)
	}
}

// drained reports whether the RTL gave everything the reference did.
func (d *cardStatDriver) drained() error {
	if d.wrote != len(d.ref.writes) || d.cplGot != len(d.ref.cpls) || d.evGot != len(d.ref.evs) || d.endGot != len(d.ref.ends) {
		return fmt.Errorf("at the end: %d/%d status writes, %d/%d completions, %d/%d events, %d/%d stream-end records (RTL/reference)",
			d.wrote, len(d.ref.writes), d.cplGot, len(d.ref.cpls), d.evGot, len(d.ref.evs), d.endGot, len(d.ref.ends))
	}
	return nil
}

// card_stat at 64 and 512 bits makes the status writes, completions and
// events of the card model's rules (statRef) for random QP commands,
// doorbells and engine records, each completion and event only after the
// responses of the status writes before it, under random backpressure
// and write-response latency.
func TestCardStatCosim(t *testing.T) {
	for _, w := range []int{64, 512} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			m, err := gen.CardStat(w)
			require.NoError(t, err)
			seed := seedFor(t.Name())
			cycles := *cosimCycles / 5
			drv, err := newCardStatDriver(LayoutOf(m), seed, cycles)
			require.NoError(t, err)
			drv.cplReadyP, drv.evReadyP = 200, 200
			st, err := RunRTL(m, drv, cycles+2000, func() bool { return drv.Err != nil })
			require.NoError(t, err)
			require.NoError(t, drv.Err, "seed %d (rerun with -cosim.seed=%d)", seed, seed)
			require.NoError(t, drv.drained(), "seed %d", seed)
			n := int(cycles / 1000)
			assert.Greater(t, drv.Writes, n, "status writes")
			assert.Greater(t, drv.Cpls, n/4, "completions")
			for _, e := range []cs.EQEType{cs.EQETypeTXData, cs.EQETypeRXSpace, cs.EQETypeQPError, cs.EQETypeQPClosed, cs.EQETypeStreamEnd} {
				assert.Greater(t, drv.EvTypes[e], n/40, "%v events", e)
			}
			assert.Positive(t, drv.BadDB, "QP_ERROR BAD_DOORBELL events")
			assert.Positive(t, drv.Cut, "QP_ERROR STREAM_CUT events")
			assert.Positive(t, drv.RxFailed, "RXS_CI records past a failed FPDU")
			t.Logf("%s: %d cycles, %.2f M cycles/s; %d status writes, %d completions, events %v (%d BAD_DOORBELL), %d records past a failed FPDU",
				m.Name, st.Cycles, st.CyclesPerSecond()/1e6, drv.Writes, drv.Cpls, drv.EvTypes, drv.BadDB, drv.RxFailed)
			t.Logf("%d QP_ERROR STREAM_CUT events", drv.Cut)
		})
	}
}

// The check sees a wrong status record.
func TestCardStatDriverCatchesRecord(t *testing.T) {
	m, err := gen.CardStat(64)
	require.NoError(t, err)
	drv, err := newCardStatDriver(LayoutOf(m), 1, 20000)
	require.NoError(t, err)
	drv.cplReadyP, drv.evReadyP = 256, 256
	flipped := false
	_, err = RunRTL(m, drv, 5000, func() bool {
		if !flipped && len(drv.ref.writes) > 3 {
			drv.ref.writes[3].rec[0] ^= 1
			flipped = true
		}
		return drv.Err != nil
	})
	require.NoError(t, err)
	require.ErrorContains(t, drv.Err, "status write 3")
}
