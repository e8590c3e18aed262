package cardmodel

import (
	"bytes"
	"encoding/binary"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// qp is one queue pair's context and the state of its stream.
type qp struct {
	c     *Card
	n, pd uint32
	state cs.QPState

	sqBase, rqBase, txsBase, rxsBase uint64
	sqSize, rqSize                   uint16 // basic blocks (1 << log; 0 means 2^16)
	sqMask, rqMask                   uint32
	txsSize, rxsSize                 uint32
	sendCQ, recvCQ                   uint32
	mulpdu                           int
	markersRX                        bool
	dv                               ddp.Version
	rv                               rdmap.Version
	ord, ird                         int

	framer mpa.Framer
	defr   *mpa.Deframer

	// Send queue: blocks posted (doorbell), fetched, retired.
	sqPI, sqFetch, sqCI uint16
	pushedBlk           map[uint16]*[cs.BB]byte // blocks that came through the push window
	sq                  []*wqe                  // fetched, not retired, in posting order
	next                int                     // first entry of sq not fully transmitted
	orq                 []*wqe                  // RDMA Reads awaiting their response
	txMSN               [rdmap.NumQueues]uint32

	// Receive queue.
	rqPI, rqFetch, rqCI uint16
	rq                  []*rwqe
	rxMSN               [rdmap.NumQueues]uint32
	irq                 []inRead // inbound Reads accepted, not yet answered

	// Stream rings (free-running byte counters).
	txsPI, txsCI uint32
	rxsPI, rxsCI uint32
	txBuf        []byte // the FPDU being written to the transmit ring
	txOff        int
	txDone       *wqe // completes once txBuf is on the ring
	txClosed     bool
	term         *rdmap.Terminate // to send once txBuf is out
	rxFin        bool
	rxEnded      bool
	armTX, armRX bool

	dirty  bool // the status record is out of date
	queued bool // on the card's ready queue

	ulp, raw []byte                              // scratch: a ULPDU being built (after its MPA header's slot), an FPDU read from the ring
	wqeBuf   [cs.MaxWQEBBs * cs.BB]byte          // scratch: the WQE being fetched
	hdrBuf   [mpa.MarkerLen + mpa.HeaderLen]byte // scratch: the header span of the next FPDU
}

type sge struct {
	addr   uint64
	length uint32
	lkey   uint32
}

// wqe is a send queue entry the card has fetched.
type wqe struct {
	idx, bbs  uint16
	op        cs.WQEOpcode
	signaled  bool
	solicited bool
	fence     bool
	wrID      uint64
	raddr     uint64
	rkey, inv uint32
	inline    []byte
	sgl       []sge
	bind      [cs.BindSize]byte
	// Backing for a short inline payload and a short SGL, so that the
	// usual WQE costs one allocation.
	inlineBuf [cs.BB]byte
	sglBuf    [2]sge
	total     uint64

	started bool
	off     uint64 // payload bytes segmented
	msn     uint32
	cur     sgCursor
	got     uint64 // RDMA Read: response bytes placed

	done   bool
	status cs.WCStatus
	cause  rdmap.Cause
	silent bool // blocks dropped after a DMA fault on the ring: no completion names them
}

// rwqe is a receive queue entry the card has fetched.
type rwqe struct {
	idx, bbs uint16
	wrID     uint64
	sgl      []sge
	sglBuf   [2]sge // backing for a short SGL
	cap, got uint64
	cur      sgCursor
	status   cs.WCStatus // the status it completes with if the QP fails on it
	silent   bool        // blocks dropped after a DMA fault on the ring
}

type inRead struct {
	rr   rdmap.ReadRequestFields
	hdr  []byte // the Read Request's DDP header
	sent uint64
}

// sgl is an SGL of n entries, in buf if it is long enough.
func sgl(buf []sge, n int) []sge {
	if n <= len(buf) {
		return buf[:n:n]
	}
	return make([]sge, n)
}

// sgCursor walks an SGL.
type sgCursor struct {
	i   int
	off uint32
}

// next calls fn for the pieces of the next n bytes of sgl.
func (c *sgCursor) next(sgl []sge, n uint64, fn func(s sge, off, k uint32) bool) bool {
	for n > 0 {
		for c.i < len(sgl) && c.off == sgl[c.i].length {
			c.i, c.off = c.i+1, 0
		}
		if c.i == len(sgl) {
			return false
		}
		s := sgl[c.i]
		k := uint32(min(uint64(s.length-c.off), n))
		if !fn(s, c.off, k) {
			return false
		}
		c.off += k
		n -= uint64(k)
	}
	return true
}

func (c *Card) qpCommand(off uint32, op cs.QPOp) error {
	s := &c.qpStage
	if s.num == 0 || s.num >= cs.MaxQP {
		return refuse(off, cs.CmdWhyBadNumber, "QP number %d (1..%d)", s.num, cs.MaxQP-1)
	}
	q := c.qps[s.num]
	switch op {
	case cs.QPOpCreate:
		if q != nil {
			return refuse(off, cs.CmdWhyExists, "QP %d exists (state %v)", s.num, q.state)
		}
		q, err := c.newQP(off)
		if err != nil {
			return err
		}
		c.qps[s.num] = q
		c.live = append(c.live, s.num)
		c.wake(q)
		c.cqs[q.sendCQ].users++
		c.cqs[q.recvCQ].users++
		return nil
	case cs.QPOpClose, cs.QPOpError, cs.QPOpDestroy:
	default:
		return refuse(off, cs.CmdWhyBadOp, "QP_CMD operation %d", op)
	}
	if q == nil {
		return refuse(off, cs.CmdWhyNoObject, "QP %d does not exist", s.num)
	}
	c.wake(q)
	switch op {
	case cs.QPOpClose:
		switch q.state {
		case cs.QPStateRts:
			q.state, q.dirty = cs.QPStateClosing, true
		case cs.QPStateClosing, cs.QPStateClosed, cs.QPStateError:
			// Without effect. ERROR too: the card puts a QP in error on
			// its own (a Terminate, a lost stream) at any time, so a
			// driver cannot know the state its CLOSE will find; as ERROR
			// on a QP in error, it is not refused.
		default:
			return refuse(off, cs.CmdWhyBadState, "QP %d is in state %v", q.n, q.state)
		}
	case cs.QPOpError:
		q.toError(cs.QPErrHost, nil)
	case cs.QPOpDestroy:
		if q.state != cs.QPStateClosed && q.state != cs.QPStateError {
			return refuse(off, cs.CmdWhyBadState, "QP %d is in state %v (DESTROY needs CLOSED or ERROR)", q.n, q.state)
		}
		c.qps[q.n] = nil
		c.cqs[q.sendCQ].users--
		c.cqs[q.recvCQ].users--
		for i, k := range c.live {
			if k == q.n {
				c.live = append(c.live[:i], c.live[i+1:]...)
				break
			}
		}
	}
	return nil
}

// newQP builds a QP from the staged context, refusing a bad one.
func (c *Card) newQP(off uint32) (*qp, error) {
	s := &c.qpStage
	sqLog := field(s.sizes, cs.QPSizesSQLogShift, cs.QPSizesSQLogMask)
	rqLog := field(s.sizes, cs.QPSizesRQLogShift, cs.QPSizesRQLogMask)
	txsLog := field(s.sizes, cs.QPSizesTXSLogShift, cs.QPSizesTXSLogMask)
	rxsLog := field(s.sizes, cs.QPSizesRXSLogShift, cs.QPSizesRXSLogMask)
	if sqLog > cs.MaxQueueLog || rqLog > cs.MaxQueueLog {
		return nil, refuse(off, cs.CmdWhyBadSize, "SQ of 2^%d or RQ of 2^%d blocks (at most 2^%d)", sqLog, rqLog, cs.MaxQueueLog)
	}
	for _, l := range []uint32{txsLog, rxsLog} {
		if l < cs.MinRingLog || l > cs.MaxRingLog {
			return nil, refuse(off, cs.CmdWhyBadSize, "stream ring of 2^%d bytes (2^%d..2^%d)", l, cs.MinRingLog, cs.MaxRingLog)
		}
	}
	for i, sz := range []uint64{cs.BB << sqLog, cs.BB << rqLog, 1 << txsLog, 1 << rxsLog} {
		if s.base[i]%sz != 0 {
			return nil, refuse(off, cs.CmdWhyBadAlign, "%s base %#x not aligned to its %d bytes", [...]string{"SQ", "RQ", "TXS", "RXS"}[i], s.base[i], sz)
		}
	}
	scq := field(s.cqs, cs.QPCqsSendCQShift, cs.QPCqsSendCQMask)
	rcq := field(s.cqs, cs.QPCqsRecvCQShift, cs.QPCqsRecvCQMask)
	for _, n := range []uint32{scq, rcq} {
		if n >= cs.MaxCQ || c.cqs[n] == nil {
			return nil, refuse(off, cs.CmdWhyNoCQ, "CQ %d does not exist", n)
		}
	}
	mulpdu := int(field(s.mpa, cs.QPMPAMulpduShift, cs.QPMPAMulpduMask))
	if mulpdu < mpa.MinMULPDU || mulpdu > mpa.MaxULPDULength {
		return nil, refuse(off, cs.CmdWhyBadMulpdu, "MULPDU %d (%d..%d)", mulpdu, mpa.MinMULPDU, mpa.MaxULPDULength)
	}
	if mulpdu > 1<<txsLog/2 {
		// An FPDU goes onto the transmit ring whole: one of half the
		// ring always finds room once the host has sent what is
		// published (a quarter of the ring at most is not).
		return nil, refuse(off, cs.CmdWhyBadMulpdu, "MULPDU %d above half the %d-byte transmit ring", mulpdu, 1<<txsLog)
	}
	ord := int(field(s.rd, cs.QPRDORDShift, cs.QPRDORDMask))
	ird := int(field(s.rd, cs.QPRDIRDShift, cs.QPRDIRDMask))
	if ord < 1 || ord > cs.MaxRd || ird < 1 || ird > cs.MaxRd {
		return nil, refuse(off, cs.CmdWhyBadRD, "ORD %d, IRD %d (1..%d)", ord, ird, cs.MaxRd)
	}
	rev0 := s.mpa>>cs.QPMPARev0Shift&1 != 0
	crc := s.mpa>>cs.QPMPACRCShift&1 != 0
	q := &qp{c: c, n: s.num, pd: s.pd, state: cs.QPStateRts,
		sqBase: s.base[0], rqBase: s.base[1], txsBase: s.base[2], rxsBase: s.base[3],
		sqSize: uint16(1 << sqLog), rqSize: uint16(1 << rqLog), sqMask: 1<<sqLog - 1, rqMask: 1<<rqLog - 1,
		txsSize: 1 << txsLog, rxsSize: 1 << rxsLog,
		sendCQ: scq, recvCQ: rcq, mulpdu: mulpdu, ord: ord, ird: ird,
		markersRX: s.mpa>>cs.QPMPAMarkersRXShift&1 != 0,
		dv:        ddp.Version1, rv: rdmap.Version1,
		framer: mpa.Framer{Markers: s.mpa>>cs.QPMPAMarkersTXShift&1 != 0, CRC: crc},
		dirty:  true,
	}
	rev := mpa.Rev1
	if rev0 {
		q.dv, q.rv, rev = ddp.VersionRDMAC, 0, mpa.Rev0
	}
	q.defr = mpa.NewDeframer(mpa.DeframerConfig{Markers: q.markersRX, CRC: crc, Rev: rev})
	for i := range q.txMSN {
		q.txMSN[i], q.rxMSN[i] = 1, 1
	}
	return q, nil
}

// blocks is the number of blocks from a to b on a ring (16-bit counters).
func blocks(a, b uint16) uint16 { return b - a }

func (q *qp) sqDoorbell(pi uint16) {
	if q.ringMoved(pi, q.sqCI, q.sqFetch, q.sqPI, q.sqSize) {
		q.sqPI = pi
	}
}

func (q *qp) rqDoorbell(pi uint16) {
	if q.ringMoved(pi, q.rqCI, q.rqFetch, q.rqPI, q.rqSize) {
		q.rqPI = pi
	}
}

// ringMoved checks a new producer index: it may not move more than the
// ring's size past the consumer index, nor fall behind what the card has
// taken. A bad one puts the QP in error (BAD_DOORBELL).
func (q *qp) ringMoved(pi, ci, fetch, old, size uint16) bool {
	if blocks(ci, pi) > size || blocks(ci, pi) < blocks(ci, fetch) {
		q.toError(cs.QPErrBadDoorbell, nil)
		return false
	}
	return true
}

// pushBlock posts a block that came whole through the push window as
// SQ_PI + 1.
func (q *qp) pushBlock(w *[cs.BB / 4]uint32) {
	var b [cs.BB]byte
	for i, v := range w {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	if q.pushedBlk == nil {
		q.pushedBlk = make(map[uint16]*[cs.BB]byte)
	}
	at := q.sqPI
	q.pushedBlk[at] = &b
	q.sqDoorbell(at + 1)
	if q.sqPI != at+1 {
		delete(q.pushedBlk, at)
	}
}

func (q *qp) stream(v uint32) {
	if v>>cs.QPDBStreamRXFinShift&1 != 0 {
		q.rxFin = true
	}
	if v>>cs.QPDBStreamArmTXShift&1 != 0 {
		q.armTX = true
	}
	if v>>cs.QPDBStreamArmRXShift&1 != 0 {
		q.armRX = true
	}
	if v>>cs.QPDBStreamRXLostShift&1 != 0 {
		q.toError(cs.QPErrLLPLost, nil)
	}
}

// toError puts the QP in error: every outstanding WQE is flushed (by the
// following steps, which write their completions), the transmit stream
// ends after the FPDU being written and, if term is not nil, a Terminate.
// reason, if not 0, is reported as a QP_ERROR event.
func (q *qp) toError(reason cs.QPErr, term *rdmap.Terminate) {
	if q.state == cs.QPStateError {
		return
	}
	if reason != 0 {
		q.c.qpEvent(cs.EQETypeQPError, q, uint32(reason), 0)
	}
	q.fail(term, 0)
}

// fail is toError's common part; blame is the status of the oldest WQE
// the card took and did not finish (a Terminate from the peer), or 0.
func (q *qp) fail(term *rdmap.Terminate, cause rdmap.Cause) {
	if q.state == cs.QPStateError {
		return
	}
	if q.state == cs.QPStateClosed || q.txClosed {
		term = nil // the transmit stream is closed
	}
	q.state, q.dirty = cs.QPStateError, true
	if term != nil {
		// The headers it copies may be the receive ring's own bytes
		// (Viewer), which the host reuses once RXS_CI is past them: the
		// Terminate, sent later, keeps its own.
		t := *term
		t.DDPHeader, t.RDMAHeader = bytes.Clone(t.DDPHeader), bytes.Clone(t.RDMAHeader)
		term = &t
	}
	q.term = term
	q.c.wake(q)
	blame := cause != 0
	for i, w := range q.sq {
		if w.done {
			continue
		}
		w.done, w.status = true, cs.WCStatusWRFlushErr
		if blame && i < q.next || blame && w.started {
			w.status, w.cause = remoteStatus(cause), cause
			blame = false
		}
	}
	q.next = len(q.sq)
	q.orq, q.irq, q.txDone = nil, nil, nil
}

// remoteStatus is the completion status of the WQE a peer's Terminate
// blames.
func remoteStatus(c rdmap.Cause) cs.WCStatus {
	switch c.Type() {
	case rdmap.TypeRDMAPRemoteProtection, rdmap.TypeDDPTaggedBuffer:
		return cs.WCStatusRemAccessErr
	case rdmap.TypeRDMAPRemoteOperation, rdmap.TypeDDPUntaggedBuffer:
		return cs.WCStatusRemOpErr
	}
	return cs.WCStatusFatalErr
}

// terminate sends a Terminate for an error the card found: TERM_SENT, and
// the QP in error.
func (q *qp) terminate(t *rdmap.Terminate) {
	if q.state == cs.QPStateError {
		return
	}
	q.c.qpEvent(cs.EQETypeTermSent, q, 0, t.Cause)
	q.fail(t, 0)
}

// localError ends the QP for a local error of WQE w: its completion
// status, and a Terminate with no headers (RFC 5040 §7.1), as the
// reference endpoint sends.
func (q *qp) localError(w *wqe, st cs.WCStatus) {
	w.done, w.status = true, st
	q.terminate(localCatastrophic())
}

// dmaFailed reports a faulted DMA of the QP: DMA_FAULT, then the QP in
// error.
func (q *qp) dmaFailed(addr uint64) {
	q.c.event(cs.EQETypeDMAFault, q.n, uint32(addr), 0)
	q.toError(cs.QPErrDMA, localCatastrophic())
}

// localCatastrophic is the Terminate of a local resource failure (a DMA
// fault, a CQ overrun): RDMAP Local Catastrophic, no headers (digest §3.7).
func localCatastrophic() *rdmap.Terminate {
	return &rdmap.Terminate{Cause: rdmap.RDMAPLocalCatastrophic}
}

// writeStatus writes the QP's status record if it changed: one DMA write
// of 32 bytes. A fault stops the card.
func (q *qp) writeStatus() bool {
	if !q.dirty || q.c.fatal {
		return false
	}
	q.dirty = false
	b := &q.c.statRec // a record escapes into the Host: one buffer, not one per write
	*b = [cs.QPStatSize]byte{}
	r := cs.QPStat(b[:])
	r.SetTXSPI(q.txsPI)
	r.SetRXSCI(q.rxsCI)
	r.SetSQCI(q.sqCI)
	r.SetRQCI(q.rqCI)
	r.SetState(q.state)
	r.SetTXClosed(q.txClosed)
	if err := q.c.dmaWrite(WriteStatus, q.n, q.c.qpstatBase+uint64(q.n)*cs.QPStatSize, b[:]); err != nil {
		q.c.event(cs.EQETypeDMAFault, 0, uint32(q.c.faultAddr), 0)
		q.c.fatal = true
	}
	return true
}

// step does one unit of the QP's work.
func (q *qp) step() bool {
	work := false
	if q.txOff < len(q.txBuf) {
		work = q.drain()
	}
	if q.state == cs.QPStateError {
		work = q.errorStep() || work
	} else {
		if q.rxStep() {
			work = true
		} else if q.txOff == len(q.txBuf) && q.state != cs.QPStateError && q.state != cs.QPStateClosed {
			work = q.txStep() || work
		}
		if q.state == cs.QPStateClosing && q.drained() {
			q.txClosed, q.state, q.dirty = true, cs.QPStateClosed, true
			q.writeStatus()
			q.c.qpEvent(cs.EQETypeQPClosed, q, 0, 0)
			work = true
		}
	}
	if q.writeStatus() {
		work = true
	}
	if q.armTX && q.txsPI != q.txsCI {
		q.armTX = false
		q.c.qpEvent(cs.EQETypeTXData, q, 0, 0)
		work = true
	}
	return work
}

// drained reports whether a closing QP has finished its posted work.
func (q *qp) drained() bool {
	return len(q.sq) == 0 && q.sqFetch == q.sqPI && len(q.irq) == 0 && q.txOff == len(q.txBuf)
}

// errorStep is the work of a QP in error: end the transmit stream (after
// a Terminate if one is due), then flush the queues one WQE at a time.
func (q *qp) errorStep() bool {
	work := false
	if q.txOff == len(q.txBuf) && !q.txClosed {
		if q.term != nil {
			q.ulp = q.term.AppendMessage(q.ulpHead(), q.rv, q.dv, q.txMSN[rdmap.QNTerminate])
			q.term = nil
			q.frame(nil)
			q.drain()
		} else {
			q.txClosed, q.dirty = true, true
		}
		work = true
	}
	switch {
	case len(q.sq) > 0:
		q.retire()
		work = true
	case q.sqFetch != q.sqPI:
		if w := q.fetchSQ(); w != nil {
			w.done, w.status = true, cs.WCStatusWRFlushErr
			q.sq = append(q.sq, w)
		}
		q.retire()
		work = true
	case len(q.rq) > 0:
		r := q.rq[0]
		st := r.status
		if st == cs.WCStatusSuccess {
			st = cs.WCStatusWRFlushErr
		}
		q.popRQ()
		if !r.silent {
			q.c.complete(q.recvCQ, q, completion{wrID: r.wrID, op: cs.WCOpcodeRecv, status: st})
		}
		work = true
	case q.rqFetch != q.rqPI:
		if r := q.fetchRQ(); r != nil {
			r.status = cs.WCStatusWRFlushErr
			q.rq = append(q.rq, r)
		}
		work = true
	}
	return work
}

// txSpace is the room left in the transmit ring.
func (q *qp) txSpace() uint32 {
	used := q.txsPI - q.txsCI
	if used > q.txsSize {
		return 0
	}
	return q.txsSize - used
}

// drain writes the FPDU in txBuf to the transmit ring once the ring has
// room for all of it, as the card does (an FPDU goes onto the ring
// whole, so TXS_PI never stops inside one): one DMA write per chunk
// (split at the ring's end and at 4 KiB boundaries).
func (q *qp) drain() bool {
	if used := q.txsPI - q.txsCI; used > q.txsSize {
		q.toError(cs.QPErrBadDoorbell, nil) // TXS_CI ran past TXS_PI
		q.txBuf, q.txOff = q.txBuf[:0], 0
		return true
	}
	work := false
	if q.txSpace() < uint32(len(q.txBuf)-q.txOff) {
		return false
	}
	// TXS_PI moves once every piece of the FPDU is written: a piece
	// refused after the first (the FPDU wraps round the ring) leaves it
	// at the FPDU's start, as a card that publishes whole FPDUs does.
	pi := q.txsPI
	for q.txOff < len(q.txBuf) {
		pos := pi & (q.txsSize - 1)
		k := min(uint32(len(q.txBuf)-q.txOff), q.txsSize-pos)
		if err := q.c.dmaWrite(WriteStream, q.n, q.txsBase+uint64(pos), q.txBuf[q.txOff:q.txOff+int(k)]); err != nil {
			// The transmit ring cannot be written: the stream ends here,
			// without a Terminate.
			q.txBuf, q.txOff = q.txBuf[:0], 0
			q.txClosed, q.dirty = true, true
			q.dmaFailed(q.c.faultAddr)
			return true
		}
		q.txOff += int(k)
		pi += k
		work = true
	}
	q.txsPI, q.dirty = pi, q.dirty || work
	if q.txOff == len(q.txBuf) {
		q.txBuf, q.txOff = q.txBuf[:0], 0
		if w := q.txDone; w != nil {
			q.txDone = nil
			w.done = true
			q.retire()
		}
	}
	return work
}

// frame frames q.ulp as the next FPDU of the transmit stream; done, if
// not nil, completes once the FPDU is on the ring.
func (q *qp) frame(done *wqe) {
	f, err := q.framer.FrameInPlace(q.ulp, 0)
	if err != nil {
		panic("cardmodel: framing a ULPDU the card built: " + err.Error()) // sizes are bounded by MULPDU
	}
	// The FPDU is framed where the ULPDU was built (no copy); the old
	// FPDU's buffer, drained, holds the next ULPDU.
	q.txBuf, q.ulp = f, q.txBuf[:0]
	q.txOff, q.txDone = 0, done
}

// ulpHead starts the next ULPDU in q.ulp after a slot for its MPA header
// (ULPDU_Length), which frame fills in place.
func (q *qp) ulpHead() []byte {
	return append(q.ulp[:0], 0, 0)
}

// retire writes the completions of the finished WQEs at the head of the
// send queue, in posting order, and frees their blocks.
func (q *qp) retire() {
	for len(q.sq) > 0 && q.sq[0].done {
		w := q.sq[0]
		q.sq = popFront(q.sq)
		if q.next > 0 {
			q.next--
		}
		q.sqCI += w.bbs
		q.dirty = true
		if !w.silent && (w.status != cs.WCStatusSuccess || w.signaled) {
			cw := completion{wrID: w.wrID, op: wcOpcode(w.op), status: w.status, cause: w.cause}
			if w.status == cs.WCStatusSuccess {
				cw.byteLen = uint32(w.total)
			}
			q.c.complete(q.sendCQ, q, cw)
		}
	}
}

func wcOpcode(op cs.WQEOpcode) cs.WCOpcode {
	switch op {
	case cs.WQEOpcodeRDMAWrite:
		return cs.WCOpcodeRDMAWrite
	case cs.WQEOpcodeRDMARead:
		return cs.WCOpcodeRDMARead
	case cs.WQEOpcodeLocalInv:
		return cs.WCOpcodeLocalInv
	case cs.WQEOpcodeBindMW:
		return cs.WCOpcodeBindMW
	}
	return cs.WCOpcodeSend
}

func (q *qp) popRQ() {
	r := q.rq[0]
	q.rq = popFront(q.rq)
	q.rqCI += r.bbs
	q.dirty = true
}
