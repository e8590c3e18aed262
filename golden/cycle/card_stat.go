package cycle

import (
	"fmt"

	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// The writer of the QP status records and of the stream events
// (card_stat_w<W>), modelled from its contract: docs/card-rtl.md (the
// card_stat rows), hw/README.md's card_stat section and the card model's
// rules (host/driver/cardmodel qp.go qpCommand, toError, stream, step,
// writeStatus; rx.go rxStep, consume), not from the generator. Its DMA
// writes go through a dma_wr, modelled by DMAWr.

// CardStatPend is how many entries (status writes, and events of updates
// that write nothing) wait in card_stat's in-order queue.
const CardStatPend = 16

// cardStatQPMask keeps a QP number's 10 bits (MAX_QP QPs).
const cardStatQPMask = cs.MaxQP - 1

// CardStatCpl is a completion as card_stat passes it to card_cq (m_cpl_*).
type CardStatCpl struct {
	CQ, QPN                       uint16
	WRID                          uint64
	Opcode, Status                uint8
	ByteLen, InvSTag              uint32
	Solicited, Invalidated        bool
	TermLayer, TermType, TermCode uint8 // the Terminate behind an error status (transmit completions only)
}

// CardStatTx is card_tx's record (s_tx_*): the QP's SQ_CI and TXS_PI
// after a WQE and, with CQE, its completion; Term marks the record of the
// QP's Terminate (card_tx sent it or took one received).
type CardStatTx struct {
	QPN, SQCI uint16
	TXSPI     uint32
	CQE       bool
	CQ        uint16
	WRID      uint64
	Opcode    uint8
	Status    uint8
	ByteLen   uint32
	TermCause uint16 // TERM_LAYER 15:12, TERM_TYPE 11:8, TERM_CODE 7:0
	Term      bool
	// KeepTXSPI: TXS_PI stays as it is (s_tx_keep_txs: a record of a QP
	// whose transmit ring write was refused publishes no further).
	KeepTXSPI bool
}

// CardStatRx is card_rx's RXS_CI record (s_rx_*); Err: the FPDU it moved
// past failed.
type CardStatRx struct {
	QPN   uint16
	RXSCI uint32
	Err   bool
}

// CardStatRc is card_rx's receive completion (s_rc_*) with the QP's RQ_CI
// past the completed WQE; Silent: no CQE, only RQ_CI moves.
type CardStatRc struct {
	QPN, RQCI, CQ          uint16
	WRID                   uint64
	Opcode, Status         uint8
	ByteLen, InvSTag       uint32
	Solicited, Invalidated bool
	Silent                 bool
}

// CardStatIn is one cycle of card_stat's inputs: the QP command and the
// doorbell (card_regs, forked by the top), QPSTAT_BASE, the engines'
// records, card_cq's and card_tx's readiness, and the AXI write slave's
// side of the status writes.
type CardStatIn struct {
	Reset      bool
	QPStatBase uint64

	CmdValid         bool
	CmdOp            cs.QPOp
	CmdQPN           uint16
	CmdBadDB, CmdCut bool // the ERROR is card_rx's bad RXS_PI doorbell's, its cut stream's

	DBValid bool
	DBKind  cs.DBKind
	DBIndex uint16
	DBValue uint32

	TxValid bool
	Tx      CardStatTx
	RxValid bool
	Rx      CardStatRx
	RcValid bool
	Rc      CardStatRc

	CplReady, EvReady, EndReady bool

	AWReady, WReady, BValid bool
	BResp                   uint8

	// Owed: the QP of OwedQPN owes a Read Response (card_tx's answer).
	Owed bool
}

// CardStatOut is what card_stat shows in a cycle.
type CardStatOut struct {
	CmdReady, DBReady, TxReady, RxReady, RcReady bool

	// The head entry's completion; its fields show whether or not
	// CplValid (see CardStat).
	CplValid bool
	Cpl      CardStatCpl

	EvValid bool
	EvType  cs.EQEType
	EvQPN   uint16
	EvInfo  uint32
	EvStop  bool // the event is a status write's DMA_FAULT: the card stops

	EndValid bool // card_tx's stream-end record
	EndQPN   uint16
	EndLost  bool

	FaultValid bool // a status write's error response: its DMA_FAULT is taken
	FaultQPN   uint16
	FaultAddr  uint64
	Fatal      bool
	Busy       bool

	DoneValid  bool // the update put the QP in CLOSED or ERROR
	DoneQPN    uint16
	DoneClosed bool // ... in CLOSED

	OwedQPN uint16 // the QP whose owed Read Responses Owed answers (during the context read)

	AXIWr // the status writes' AXI master (card_stat's dma_wr)
}

// statCtx is what card_stat keeps of a QP.
type statCtx struct {
	txsPI, rxsCI, txsCI, rxsPI uint32
	sqCI, rqCI, sqPI           uint16
	state                      cs.QPState
	txClosed                   bool
	armTX, armRX               bool
	rxFin, ended               bool
}

func (x *statCtx) live() bool {
	return x.state == cs.QPStateRts || x.state == cs.QPStateClosing || x.state == cs.QPStateClosed
}

// The updates card_stat serves.
const (
	statNone = iota
	statCreate
	statClose
	statError
	statDestroy
	statSQPI
	statPush
	statTXSCI
	statRXSPI
	statStream
	statTx
	statRx
	statRc
)

// statOp is an update taken.
type statOp struct {
	kind       int
	qpn        uint16
	v          uint32 // TXS_PI, RXS_CI or the doorbell's value
	idx        uint16 // SQ_CI or RQ_CI
	badDB, cut bool
	term       bool // a Terminate's transmit record, a failed FPDU's RXS_CI record
	keepTXSPI  bool // a transmit record that leaves TXS_PI
	cpl        CardStatCpl
	hasCpl     bool
	owed       bool // the QP owes a Read Response (s_owed, at the context read)
}

// statResult is what an update gives besides its context.
type statResult struct {
	write     bool // the record is written
	ev        bool
	evType    cs.EQEType
	info      uint32
	end, lost bool // a stream-end record to card_tx (RX_LOST)
	done      bool // the QP reached CLOSED or ERROR
	closed    bool // ... CLOSED
}

func (r *statResult) event(t cs.EQEType, info uint32) { r.ev, r.evType, r.info = true, t, info }

// statEntry is an entry of the in-order queue.
type statEntry struct {
	write     bool
	ev        bool
	evType    cs.EQEType
	info      uint32
	end, lost bool
	qpn       uint16
	addr      uint64 // the record's address
	hasCpl    bool
	cpl       CardStatCpl
}

// card_stat's steps of an update.
const (
	statIdle = iota
	statRead // the context read
	statCalc // the update acts: context written back, entry pushed
	statData // the record's beats go to dma_wr
)

// CardStat is card_stat's cycle model.
//
// Timing: an update is taken in a cycle when card_stat is idle and its
// queue has room (or the card is stopped): QP commands first, then
// doorbells, then the engines' records, the transmit and the receive side
// alternately (after a transmit record the receive side goes first),
// RXS_CI records and receive completions alternately on the receive side.
// Its ready rises in that cycle. The context is read in the next cycle,
// the update acts in the one after (the context written back, the entry
// pushed, m_done); an update with a status write then hands its 32 bytes
// to dma_wr (one beat at 512 bits, four at 64, the request offered
// meanwhile) and is done with the cycle that hands the last. So an update
// without a write takes 3 cycles, one with a write at least 4. Every QP
// command and doorbell is taken, those that do nothing (other OPs, other
// doorbell kinds) in one cycle.
//
// The queue's head is released (its completion to m_cpl, its event to
// m_ev, its stream-end record to m_end, each in its own handshake) once
// its status write, if it has one, has its write response; it leaves
// once all it carries is taken. A head whose write response was an error
// releases a DMA_FAULT (OBJ 0, INFO the record's address) with EvStop
// instead; once that is taken the card is stopped (Fatal) until reset:
// updates are still taken, nothing more is written or passed on.
//
// The data lines show the head slot even when nothing is valid: the
// completion fields (zero for an entry without a status write; for one
// with a write but no CQE, the receive completion port's fields as they
// were when its update was taken, as the RTL latches them), the event's
// type and INFO (TX_DATA and 0 for an entry without an event) and the
// entry's QP.
//
// Reset (rst) ends the update under way and empties the queue, the count
// of write responses and the stop, with dma_wr; the QPs' contexts and the
// queue's slots (block RAM and registers without reset) are kept, and an
// update acting in a reset cycle still writes its context and its slot.
//
// m_done also pulses for card_tx's Terminate record on a QP already in
// ERROR (it adds TX_CLOSED), as the RTL does: card_cmd's class is ERROR
// already, so the pulse changes nothing there.
type CardStat struct {
	lanes, beats int
	dma          *DMAWr
	dIn          DMAWrIn
	dOut         DMAWrOut
	data         []byte

	ctx  []statCtx // per QP, kept through reset (block RAM)
	rd   statCtx   // the context as read
	op   statOp
	stp  int
	addr uint64 // the record's address, latched in the read step
	rec  [cs.QPStatSize]byte
	beat int

	reqPend         bool
	rxFirst, rcNext bool // the receive side goes first; a receive completion goes first
	fatal           bool

	slots                       [CardStatPend]statEntry
	wp, rp, n                   int
	resp                        [2 * CardStatPend]bool // write responses not yet claimed, true: an error
	respHead, respN             int
	cplTaken, evTaken, endTaken bool
}

// NewCardStat models card_stat with its dma_wr of configuration dma
// (dma.Width: 64 or 512 bits).
func NewCardStat(dma DMAWrConfig) (*CardStat, error) {
	if dma.Width != 64 && dma.Width != 512 {
		return nil, fmt.Errorf("%w: card_stat data width %d (64 or 512)", ErrConfig, dma.Width)
	}
	d, err := NewDMAWr(dma)
	if err != nil {
		return nil, err
	}
	L := dma.Width / 8
	c := &CardStat{lanes: L, beats: max(1, cs.QPStatSize/L), dma: d, data: make([]byte, L), ctx: make([]statCtx, cs.MaxQP)}
	c.dIn.SData = c.data
	c.dIn.ReqLenM1 = cs.QPStatSize - 1
	c.dIn.DReady = true
	return c, nil
}

// Waiting is how many entries wait in the queue.
func (c *CardStat) Waiting() int { return c.n }

// statRecAddr is QP qpn's record address: QPSTAT_BASE (its low 5 bits
// ignored: the base is 32-byte aligned) + 32 x QPN.
func statRecAddr(base uint64, qpn uint16) uint64 {
	return base&^(cs.QPStatSize-1) + uint64(qpn)*cs.QPStatSize
}

// update applies op to the QP's context x as the card model's rules have
// it: the new context and what the update gives. One event per update:
// QP_ERROR, QP_CLOSED or STREAM_END first; a TX_DATA or RX_SPACE due in
// the same update keeps its arm for a later one.
func statUpdate(op *statOp, x statCtx) (statCtx, statResult) {
	n := x
	var r statResult
	toError := func(why cs.QPErr) {
		n.state, n.txClosed = cs.QPStateError, true
		r.write, r.done = true, true
		r.event(cs.EQETypeQPError, uint32(why))
	}
	// closed: a closing QP whose posted send work is done (SQ_CI at
	// SQ_PI) is CLOSED with TX_CLOSED, then QP_CLOSED.
	closed := func() {
		if n.state == cs.QPStateClosing && n.sqCI == n.sqPI && !op.owed {
			n.state, n.txClosed = cs.QPStateClosed, true
			r.done, r.closed = true, true
			r.event(cs.EQETypeQPClosed, 0)
		}
	}
	// streamEnd: the peer's stream ended and the ring is consumed to its
	// end, in a QP not in error: STREAM_END (and card_tx's record), once.
	streamEnd := func() {
		if !r.ev && n.rxFin && !n.ended && n.rxsCI == n.rxsPI && n.live() {
			n.ended = true
			r.event(cs.EQETypeStreamEnd, 0)
			r.end = true
		}
	}
	// txData: step's check, an armed QP with bytes past TXS_CI.
	txData := func() {
		if !r.ev && n.armTX && n.txsPI != n.txsCI {
			n.armTX = false
			r.event(cs.EQETypeTXData, 0)
		}
	}
	switch op.kind {
	case statCreate:
		n = statCtx{state: cs.QPStateRts}
		r.write = true
	case statClose:
		if x.state == cs.QPStateRts {
			n.state = cs.QPStateClosing
			r.write = true
			closed()
		}
	case statError:
		if x.live() {
			why := cs.QPErrHost
			switch {
			case op.badDB:
				why = cs.QPErrBadDoorbell
			case op.cut:
				why = cs.QPErrStreamCut
			}
			toError(why)
		}
	case statDestroy:
		if x.state == cs.QPStateClosed || x.state == cs.QPStateError {
			n.state, n.txClosed = cs.QPStateReset, false
		}
	case statSQPI:
		n.sqPI = uint16(op.v)
	case statPush:
		n.sqPI++
	case statTXSCI:
		n.txsCI = op.v
		txData()
	case statRXSPI:
		n.rxsPI = op.v
		streamEnd()
	case statStream:
		n.rxFin = n.rxFin || op.v>>cs.QPDBStreamRXFinShift&1 != 0
		n.armTX = n.armTX || op.v>>cs.QPDBStreamArmTXShift&1 != 0
		n.armRX = n.armRX || op.v>>cs.QPDBStreamArmRXShift&1 != 0
		if op.v>>cs.QPDBStreamRXLostShift&1 != 0 && x.live() {
			toError(cs.QPErrLLPLost)
			r.end, r.lost = true, true
		}
		streamEnd()
		txData()
	case statTx:
		n.sqCI = op.idx
		if !op.keepTXSPI {
			n.txsPI = op.v
		}
		r.write = true
		switch {
		case op.term:
			// card_tx's Terminate: ERROR with TX_CLOSED, no QP_ERROR
			// (card_tx gave TERM_SENT or TERM_RECV).
			if x.live() || x.state == cs.QPStateError {
				n.state, n.txClosed = cs.QPStateError, true
				r.done = true
			}
		default:
			closed()
		}
		txData()
	case statRx:
		n.rxsCI = op.v
		r.write = true
		if op.term && x.live() {
			// Past a failed FPDU: ERROR, no event, no TX_CLOSED (card_tx's
			// Terminate record adds it).
			n.state = cs.QPStateError
			r.done = true
		}
		streamEnd()
		if !r.ev && n.armRX {
			n.armRX = false
			r.event(cs.EQETypeRXSpace, 0)
		}
	case statRc:
		n.rqCI = op.idx
		r.write = true
	}
	return n, r
}

// record writes x's status record (docs/card.md QPSTAT) into b.
func (x *statCtx) record(b *[cs.QPStatSize]byte) {
	*b = [cs.QPStatSize]byte{}
	s := cs.QPStat(b[:])
	s.SetTXSPI(x.txsPI)
	s.SetRXSCI(x.rxsCI)
	s.SetSQCI(x.sqCI)
	s.SetRQCI(x.rqCI)
	s.SetState(x.state)
	s.SetTXClosed(x.txClosed)
}

// statDBKind is the update a doorbell of kind k is (statNone: taken without
// effect).
func statDBKind(k cs.DBKind) int {
	switch k {
	case cs.DBKindQPDBSQPI:
		return statSQPI
	case cs.DBKindQPDBTXSCI:
		return statTXSCI
	case cs.DBKindQPDBRXSPI:
		return statRXSPI
	case cs.DBKindQPDBStream:
		return statStream
	case cs.DBKindQPDBPush:
		return statPush
	}
	return statNone
}

// statCmdKind is the update a QP command of op is (statNone: taken without
// effect).
func statCmdKind(op cs.QPOp) int {
	switch op {
	case cs.QPOpCreate:
		return statCreate
	case cs.QPOpClose:
		return statClose
	case cs.QPOpError:
		return statError
	case cs.QPOpDestroy:
		return statDestroy
	}
	return statNone
}

// Step writes to out what card_stat shows during this cycle, given in,
// then takes the clock edge.
func (c *CardStat) Step(in *CardStatIn, out *CardStatOut) {
	// dma_wr: its inputs are card_stat's registers and the slave's.
	d := &c.dIn
	d.Reset = in.Reset
	d.ReqValid, d.ReqAddr = c.reqPend, c.addr
	d.SValid = c.stp == statData
	clear(c.data)
	if lo := c.beat * c.lanes; lo < len(c.rec) {
		copy(c.data, c.rec[lo:])
	}
	d.AWReady, d.WReady, d.BValid, d.BResp = in.AWReady, in.WReady, in.BValid, in.BResp
	c.dma.Step(d, &c.dOut)
	do := &c.dOut

	// The update taken this cycle.
	idle := c.stp == statIdle
	free := idle && (c.n < CardStatPend || c.fatal)
	takeCmd := free && in.CmdValid
	takeDB := free && !in.CmdValid && in.DBValid
	records := free && !in.CmdValid && !in.DBValid
	rxSide := in.RxValid || in.RcValid
	takeTx := records && in.TxValid && (!rxSide || !c.rxFirst)
	takeRxSide := records && rxSide && !takeTx
	takeRc := takeRxSide && in.RcValid && (!in.RxValid || c.rcNext)
	takeRx := takeRxSide && !takeRc

	// The update acting this cycle.
	var nx statCtx
	var res statResult
	calc := c.stp == statCalc
	if calc {
		nx, res = statUpdate(&c.op, c.rd)
	}
	calcWrites := calc && res.write && !c.fatal
	push := calc && (res.write || res.ev) && !c.fatal

	// The queue's head.
	h := &c.slots[c.rp]
	ready := c.n > 0 && (!h.write || c.respN > 0)
	bad := ready && h.write && c.resp[c.respHead] && !c.fatal
	good := ready && !bad && !c.fatal
	cplV := good && h.hasCpl && !c.cplTaken
	evV := good && h.ev && !c.evTaken || bad
	endV := good && h.end && !c.endTaken
	pop := good && (!h.hasCpl || c.cplTaken || in.CplReady) && (!h.ev || c.evTaken || in.EvReady) &&
		(!h.end || c.endTaken || in.EndReady)
	faultTaken := bad && in.EvReady

	*out = CardStatOut{
		CmdReady: takeCmd, DBReady: takeDB, TxReady: takeTx, RxReady: takeRx, RcReady: takeRc,
		CplValid: cplV, Cpl: h.cpl,
		EvValid: evV, EvType: cs.EQETypeTXData, EvQPN: h.qpn, EvStop: bad,
		EndValid: endV, FaultValid: faultTaken, Fatal: c.fatal,
		Busy:      !idle || c.n > 0,
		DoneValid: calc && res.done, DoneClosed: calc && res.closed,
		AXIWr: do.AXIWr,
	}
	if h.ev {
		out.EvType, out.EvInfo = h.evType, h.info
	}
	if bad {
		out.EvType, out.EvQPN, out.EvInfo = cs.EQETypeDMAFault, 0, uint32(h.addr)
	}
	if endV {
		out.EndQPN, out.EndLost = h.qpn, h.lost
	}
	if faultTaken {
		out.FaultQPN, out.FaultAddr = h.qpn, h.addr
	}
	if calc {
		out.DoneQPN = c.op.qpn
	}
	if c.stp == statRead {
		out.OwedQPN = c.op.qpn
	}

	// The clock edge.
	c.cplTaken = !pop && (c.cplTaken || cplV && in.CplReady)
	c.evTaken = !pop && (c.evTaken || evV && in.EvReady)
	c.endTaken = !pop && (c.endTaken || endV && in.EndReady)
	if pop && h.write { // its write response is claimed
		c.respHead = (c.respHead + 1) % len(c.resp)
		c.respN--
	}
	if do.DValid && c.respN < len(c.resp) {
		c.resp[(c.respHead+c.respN)%len(c.resp)] = do.DErr
		c.respN++
	}
	if pop {
		c.rp = (c.rp + 1) % CardStatPend
		c.n--
	}
	if faultTaken {
		c.fatal = true
	}
	if push {
		e := statEntry{write: res.write, ev: res.ev, evType: res.evType, info: res.info, end: res.end, lost: res.lost,
			qpn: c.op.qpn, addr: c.addr}
		if res.write {
			e.hasCpl, e.cpl = c.op.hasCpl, c.op.cpl
		}
		c.slots[c.wp] = e
		c.wp = (c.wp + 1) % CardStatPend
		c.n++
	}
	c.reqPend = calcWrites || c.reqPend && !do.ReqReady
	sTake := c.stp == statData && do.SReady
	switch c.stp {
	case statRead:
		c.addr = statRecAddr(in.QPStatBase, c.op.qpn)
		c.op.owed = in.Owed
		c.stp = statCalc
	case statCalc:
		c.ctx[c.op.qpn] = nx
		nx.record(&c.rec)
		c.stp = statIdle
		if calcWrites {
			c.stp = statData
		}
	case statData:
		if sTake {
			c.beat++
			if c.beat == c.beats {
				c.beat, c.stp = 0, statIdle
			}
		}
	}
	if takeTx || takeRxSide {
		c.rxFirst = takeTx
	}
	if takeRxSide {
		c.rcNext = takeRx
	}
	if k := c.take(in, takeCmd, takeDB, takeTx, takeRx, takeRc); k != statNone {
		c.stp = statRead
	}
	if in.Reset {
		c.stp, c.beat, c.reqPend = statIdle, 0, false
		c.rxFirst, c.rcNext, c.fatal = false, false, false
		c.wp, c.rp, c.n = 0, 0, 0
		c.respHead, c.respN = 0, 0
		c.cplTaken, c.evTaken, c.endTaken = false, false, false
	}
}

// take latches the update taken this cycle, if it acts, with the QP's
// context, and returns its kind (statNone: none, or one without effect).
func (c *CardStat) take(in *CardStatIn, takeCmd, takeDB, takeTx, takeRx, takeRc bool) int {
	op := statOp{}
	switch {
	case takeCmd:
		op.kind, op.qpn = statCmdKind(in.CmdOp), in.CmdQPN&cardStatQPMask
		op.badDB, op.cut = in.CmdBadDB, in.CmdCut
	case takeDB:
		op.kind, op.qpn, op.v = statDBKind(in.DBKind), in.DBIndex&cardStatQPMask, in.DBValue
	case takeTx:
		t := &in.Tx
		op.kind, op.qpn, op.v, op.idx, op.term, op.keepTXSPI = statTx, t.QPN&cardStatQPMask, t.TXSPI, t.SQCI, t.Term, t.KeepTXSPI
		op.hasCpl = t.CQE
		op.cpl = CardStatCpl{CQ: t.CQ & cardStatQPMask, QPN: op.qpn, WRID: t.WRID, Opcode: t.Opcode, Status: t.Status, ByteLen: t.ByteLen,
			TermLayer: uint8(t.TermCause >> 12), TermType: uint8(t.TermCause >> 8 & 0xf), TermCode: uint8(t.TermCause)}
	case takeRx:
		op.kind, op.qpn, op.v, op.term = statRx, in.Rx.QPN&cardStatQPMask, in.Rx.RXSCI, in.Rx.Err
	case takeRc:
		op.kind, op.qpn, op.idx = statRc, in.Rc.QPN&cardStatQPMask, in.Rc.RQCI
		op.hasCpl = !in.Rc.Silent
	default:
		return statNone
	}
	if op.kind == statNone {
		return statNone
	}
	if !takeTx { // the RTL latches the receive completion port's fields at any other take
		r := &in.Rc
		op.cpl = CardStatCpl{CQ: r.CQ & cardStatQPMask, QPN: r.QPN & cardStatQPMask, WRID: r.WRID, Opcode: r.Opcode, Status: r.Status,
			ByteLen: r.ByteLen, InvSTag: r.InvSTag, Solicited: r.Solicited, Invalidated: r.Invalidated}
	}
	c.op = op
	c.rd = c.ctx[op.qpn]
	return op.kind
}
