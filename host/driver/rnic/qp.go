package rnic

import (
	"errors"
	"fmt"
	"math/bits"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/host/driver"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// wq is a send or receive queue: a ring of 64-byte basic blocks.
type wq struct {
	r     ring
	n     uint32 // basic blocks (a power of two)
	pi    uint32 // blocks posted (free running; the card sees it modulo 2^16)
	depth int    // most WRs outstanding
	ends  []uint16
	head  int // ends[head..head+count) are the end indices of outstanding WRs
	count int
}

// reclaim forgets the WRs the card is done with (consumer index ci).
func (w *wq) reclaim(ci uint16) {
	for w.count > 0 && int16(ci-w.ends[w.head]) >= 0 {
		w.head = (w.head + 1) % len(w.ends)
		w.count--
	}
}

// room reports whether k more WRs of bbs blocks in all fit.
func (w *wq) room(ci uint16, k, bbs int) bool {
	used := uint16(uint16(w.pi) - ci)
	return w.count+k <= w.depth && int(used)+bbs <= int(w.n)
}

// put copies a WQE of len(b)/64 blocks at the producer index (wrapping)
// and records its end.
func (w *wq) put(b []byte) {
	for i := 0; i < len(b); i += cs.BB {
		at := int(w.pi%w.n) * cs.BB
		copy(w.r.b[at:at+cs.BB], b[i:i+cs.BB])
		w.pi++
	}
	w.ends[(w.head+w.count)%len(w.ends)] = uint16(w.pi)
	w.count++
}

// QP states of the driver.
const (
	qpLive    = iota // posting works
	qpClosing        // Close asked: receives may still be posted
	qpEnded          // the card is done with the QP
)

// qp is a queue pair: its SQ and RQ, its stream rings and bridge.
type qp struct {
	c      *Card
	qpn    uint32
	pd     *mem.PD
	conn   net.Conn
	scq    *cq
	rcq    *cq
	mulpdu int
	db     uint32 // QP_DB element
	stat   []byte // the QP's status record
	txs    ring
	rxs    ring
	tx, rx bridgeSide
	raw    syscall.RawConn // conn's descriptor, for the posting goroutine's writes (nil: none)

	txMu     sync.Mutex // the transmit ring's consumer side
	txCI     uint32     // TXS_CI: what went to the socket
	txGone   bool       // the rings are freed (reap): nothing may read them
	txPieces [2][]byte
	wvIn     [][]byte              // tryWritev's pieces
	wvOut    int                   // .. and what the socket took
	wvFn     func(fd uintptr) bool // writevOnce

	rvIn  [][]byte              // rxRead's pieces (the receive goroutine's)
	rvOut int                   // .. what readv read
	rvErr error                 // .. and its error
	rvFn  func(fd uintptr) bool // readvOnce

	mu      sync.Mutex // posting, state
	sq, rq  wq
	scratch [cs.MaxWQEBBs * cs.BB]byte
	state   int
	reason  error         // why the QP ends (the first reason wins)
	failed  bool          // QP_CMD ERROR was written
	dropped bool          // the backend found the card wrong for this QP: nothing more is awaited from it
	term    chan struct{} // closed when the card is done with the QP
	termOne sync.Once
	grace   bool // it ended by QP_CLOSED
	done    chan struct{}
	err     atomic.Pointer[error] // Err, once done
	ready   bool                  // attached: Card.Close closes it (under Card.mu)

	// progress watchdog (the watchdog goroutine's)
	lastCI   uint16
	lastTXS  uint32
	lastDone uint32
	lastMove time.Time

	owedMu sync.Mutex
	owed   []owedWR // signaled send WRs posted whose completion was not polled, oldest first
	readSE bool     // an unsignaled Read was posted after the last signaled WR
	sentWC atomic.Uint32
}

// owedWR is a signaled send WR the card owes a completion for, as the
// watchdog sees it: once the card has taken it from the SQ (SQ_CI past
// end), its completion depends on the card alone unless a Read is before
// it (the peer's Read Response then comes first).
type owedWR struct {
	id       uint64
	end      uint16 // SQ_CI once the card has taken it
	op       iwarp.WROpcode
	waitPeer bool // a Read: it, or an unsignaled one before it
}

func (q *qp) statWord(off int) uint32 { return atomic.LoadUint32(word(q.stat, off)) }

func (q *qp) sqCI() uint16 { return uint16(q.statWord(8)) }
func (q *qp) rqCI() uint16 { return uint16(q.statWord(8) >> 16) }

// Attach creates a QP on conn: its rings, its context on the card, the
// receives posted before, and its stream bridge.
func (c *Card) Attach(conn net.Conn, p mpa.Params, cfg driver.QPConfig) (driver.QP, error) {
	scq, ok1 := cfg.SendCQ.(*cq)
	rcq, ok2 := cfg.RecvCQ.(*cq)
	if !ok1 || !ok2 || scq.c != c || rcq.c != c {
		return nil, fmt.Errorf("%w: the QP's CQs must be CQs of card %s", driver.ErrInvalid, c.opt.Name)
	}
	if err := c.ownPD(cfg.PD); err != nil {
		return nil, err
	}
	def := func(v, d int) int {
		if v == 0 {
			return d
		}
		return v
	}
	sqd, rqd := def(cfg.SQDepth, 256), def(cfg.RQDepth, 256)
	ord, ird := def(cfg.ORD, 16), def(cfg.IRD, 16)
	maxWR := c.caps.MaxQueue / c.caps.MaxWQEBBs
	for _, v := range []struct {
		what   string
		n, max int
	}{{"send queue depth", sqd, maxWR}, {"receive queue depth", rqd, maxWR}, {"ORD", ord, c.caps.MaxRd}, {"IRD", ird, c.caps.MaxRd}} {
		if v.n < 1 || v.n > v.max {
			return nil, fmt.Errorf("%w: %s %d (1 to %d)", driver.ErrInvalid, v.what, v.n, v.max)
		}
	}
	if p.Rev == mpa.Rev2 && p.PeerIRD > 0 {
		ord = min(ord, int(p.PeerIRD))
	}
	mulpdu := cfg.MULPDU
	if mulpdu <= 0 {
		mulpdu = mpa.MULPDU(emss(conn), p.TxMarkers)
	}
	// An FPDU goes onto the transmit ring whole: the card publishes the
	// ring a quarter at a time while a message is written, so an FPDU of
	// a quarter of the ring always finds room (docs/card.md, transmit
	// stream ring). The default 1 MiB ring never limits it.
	mulpdu = min(max(mulpdu, mpa.MinMULPDU), mpa.MaxULPDULength, 1<<c.opt.StreamLog/4)

	c.mu.Lock()
	if err := c.liveLocked(); err != nil {
		c.mu.Unlock()
		return nil, err
	}
	qpn := uint32(0)
	for i := range uint32(c.caps.QPs - 1) {
		n := 1 + (c.nextQPN-1+i)%uint32(c.caps.QPs-1)
		if c.qps[n].Load() == nil {
			qpn = n
			break
		}
	}
	if qpn == 0 {
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: all %d QPs of card %s are in use", mem.ErrFull, c.caps.QPs-1, c.opt.Name)
	}
	q := &qp{c: c, qpn: qpn, pd: cfg.PD, conn: conn, scq: scq, rcq: rcq, mulpdu: mulpdu,
		db: cs.QPDBBase + qpn*cs.QPDBStride, stat: c.qpstat.b[qpn*cs.QPStatSize : (qpn+1)*cs.QPStatSize],
		term: make(chan struct{}), done: make(chan struct{})}
	// The bridge's channels exist before the QP can be found: the card may
	// report TX_DATA or RX_SPACE for it as soon as it is created.
	if sc, ok := conn.(syscall.Conn); ok {
		q.raw, _ = sc.SyscallConn()
		q.wvFn = q.writevOnce
		q.rvFn = q.readvOnce
	}
	q.tx.init()
	q.rx.init()
	c.qps[qpn].Store(q) // reserved; events for it find it
	c.nextQPN = qpn + 1
	c.live.Add(1)
	c.mu.Unlock()

	clear(q.stat)
	if err := q.setup(p, sqd, rqd, ord, ird, cfg.Recv); err != nil {
		q.release()
		c.qps[qpn].Store(nil)
		c.live.Done()
		return nil, fmt.Errorf("rnic: attaching QP %d: %w", qpn, err)
	}
	scq.attach(qpn)
	rcq.attach(qpn)
	go q.txLoop()
	go q.rxLoop()
	go q.reap()
	c.mu.Lock()
	closed := c.closed // Close ran while the QP was being made: it did not see it
	q.ready = !closed
	c.mu.Unlock()
	if closed {
		q.Close()
		return nil, fmt.Errorf("%w: card %s closed while a QP was attached", driver.ErrClosed, c.opt.Name)
	}
	return q, nil
}

// setup allocates the rings and creates the QP on the card.
func (q *qp) setup(p mpa.Params, sqd, rqd, ord, ird int, recv []iwarp.RecvWR) error {
	c := q.c
	mk := func(w *wq, depth int) error {
		bbs := min(1<<bits.Len(uint(depth*c.caps.MaxWQEBBs-1)), c.caps.MaxQueue)
		r, err := c.allocRing(bbs * cs.BB)
		w.r, w.n, w.depth, w.ends = r, uint32(bbs), depth, make([]uint16, depth)
		return err
	}
	if err := mk(&q.sq, sqd); err != nil {
		return err
	}
	if err := mk(&q.rq, rqd); err != nil {
		return err
	}
	var err error
	if q.txs, err = c.allocRing(1 << c.opt.StreamLog); err != nil {
		return err
	}
	if q.rxs, err = c.allocRing(1 << c.opt.StreamLog); err != nil {
		return err
	}
	for i := range recv {
		if err := q.validRecv(&recv[i]); err != nil {
			return fmt.Errorf("receives posted before the stream started: %w", err)
		}
	}
	if len(recv) > q.rq.depth {
		return fmt.Errorf("%w: %d receives posted before the stream started, the queue holds %d", iwarp.ErrQueueFull, len(recv), q.rq.depth)
	}
	for i := range recv {
		q.putRecv(&recv[i])
	}
	mpaf := uint32(q.mulpdu)
	for _, f := range []struct {
		on    bool
		shift int
	}{{p.TxMarkers, cs.QPMPAMarkersTXShift}, {p.RxMarkers, cs.QPMPAMarkersRXShift}, {p.CRC, cs.QPMPACRCShift}, {p.Rev == mpa.Rev0, cs.QPMPARev0Shift}} {
		if f.on {
			mpaf |= 1 << f.shift
		}
	}
	log := func(n uint32) uint32 { return uint32(bits.Len32(n) - 1) }
	if err := c.cmd([][2]uint32{
		{cs.QPNum, q.qpn}, {cs.QPPD, q.pd.ID},
		{cs.QPSQBaseLo, uint32(q.sq.r.iova)}, {cs.QPSQBaseHi, uint32(q.sq.r.iova >> 32)},
		{cs.QPRQBaseLo, uint32(q.rq.r.iova)}, {cs.QPRQBaseHi, uint32(q.rq.r.iova >> 32)},
		{cs.QPTXSBaseLo, uint32(q.txs.iova)}, {cs.QPTXSBaseHi, uint32(q.txs.iova >> 32)},
		{cs.QPRXSBaseLo, uint32(q.rxs.iova)}, {cs.QPRXSBaseHi, uint32(q.rxs.iova >> 32)},
		{cs.QPSizes, log(q.sq.n) | log(q.rq.n)<<cs.QPSizesRQLogShift | uint32(c.opt.StreamLog)<<cs.QPSizesTXSLogShift | uint32(c.opt.StreamLog)<<cs.QPSizesRXSLogShift},
		{cs.QPCqs, q.scq.cqn | q.rcq.cqn<<cs.QPCqsRecvCQShift},
		{cs.QPMPA, mpaf},
		{cs.QPRD, uint32(ord) | uint32(ird)<<cs.QPRDIRDShift},
		{cs.QPCmd, uint32(cs.QPOpCreate)},
	}); err != nil {
		return err
	}
	if q.rq.pi != 0 {
		if err := c.write(q.db+cs.QPDBRQPI, q.rq.pi&cs.QPDBRQPIPIMask); err != nil {
			return err
		}
	}
	if p.Initiator && p.RTR != 0 {
		// RFC 6581 peer-to-peer: the Initiator's first FPDU is the agreed
		// RTR message, a zero-length Write (STag 1, as siw does), Read or Send.
		wr := iwarp.SendWR{Opcode: iwarp.WRSend}
		switch {
		case p.RTR&mpa.RTRWrite != 0:
			wr = iwarp.SendWR{Opcode: iwarp.WRWrite, RKey: 1}
		case p.RTR&mpa.RTRRead != 0:
			wr = iwarp.SendWR{Opcode: iwarp.WRRead, RKey: 1, SGL: []iwarp.SGE{{}}}
		}
		q.mu.Lock()
		q.putSend(&wr, 1, 0)
		pi := q.sq.pi
		q.mu.Unlock()
		return c.write(q.db+cs.QPDBSQPI, pi&cs.QPDBSQPIPIMask)
	}
	return nil
}

// release frees the QP's rings.
func (q *qp) release() {
	for _, r := range []*ring{&q.sq.r, &q.rq.r, &q.txs, &q.rxs} {
		q.c.freeRing(r)
	}
}

// putSend writes a send WQE at the SQ's producer index. Called with mu held.
func (q *qp) putSend(wr *iwarp.SendWR, bbs int, bind mem.STag) []byte {
	b := q.scratch[:bbs*cs.BB]
	clear(b)
	encodeSend(b, wr, bbs, bind)
	q.sq.put(b)
	return b
}

// putRecv writes a receive WQE. Called with mu held (or before the QP runs).
func (q *qp) putRecv(wr *iwarp.RecvWR) {
	bbs := recvBBs(wr)
	b := q.scratch[:bbs*cs.BB]
	clear(b)
	encodeRecv(b, wr, bbs)
	q.rq.put(b)
}

// QPN is the QP number.
func (q *qp) QPN() uint32 { return q.qpn }

// MULPDU is the largest DDP segment the QP sends.
func (q *qp) MULPDU() int { return q.mulpdu }

// Done is closed once the card is done with the QP and the connection is closed.
func (q *qp) Done() <-chan struct{} { return q.done }

// Err is why the stream ended: nil while it runs, the reason as soon as
// the card or the driver has ended it (before the flushed completions
// are polled, as golden/iwarp's endpoint does: the events the card wrote
// before them are dispatched first).
func (q *qp) Err() error {
	if err := q.errNow(); err != nil {
		return err
	}
	q.c.syncEvents()
	return q.errNow()
}

func (q *qp) errNow() error {
	if e := q.err.Load(); e != nil {
		return *e
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.state == qpEnded || q.failed {
		return q.reason
	}
	return nil
}

// stateErrLocked is what a post on a QP that is not live returns.
func (q *qp) stateErrLocked() error {
	if q.reason != nil {
		return q.reason
	}
	return iwarp.ErrClosed
}

// PostSend writes the WRs into the SQ and rings SQ_PI once, or pushes a
// lone one-block inline WQE through the push window.
func (q *qp) PostSend(wrs ...iwarp.SendWR) error {
	bbs := 0
	for i := range wrs {
		if err := q.validSend(&wrs[i]); err != nil {
			return err
		}
		bbs += sendBBs(&wrs[i])
	}
	q.mu.Lock()
	if q.state != qpLive {
		defer q.mu.Unlock()
		return q.stateErrLocked()
	}
	ci := q.sqCI()
	q.sq.reclaim(ci)
	if !q.sq.room(ci, len(wrs), bbs) {
		defer q.mu.Unlock()
		return fmt.Errorf("%w: send queue holds %d of %d WRs (%d blocks of %d in use)", iwarp.ErrQueueFull, q.sq.count, q.sq.depth, uint16(uint16(q.sq.pi)-ci), q.sq.n)
	}
	for i := range wrs {
		wr := &wrs[i]
		var bind mem.STag
		switch wr.Opcode {
		case iwarp.WRLocalInvalidate:
			// The mirror takes it now: later posts with the STag fail.
			q.c.tab.Invalidate(wr.InvalidateSTag, q.pd.ID)
		case iwarp.WRBindMW:
			b := wr.Bind
			st, err := b.MW.Bind(b.MR, b.Addr, b.Length, b.Access, q.qpn)
			if err != nil {
				st = b.MW.STag // the card refuses it too: MW_BIND_ERR
			}
			bind = st
		}
		n := sendBBs(wr)
		blk := q.putSend(wr, n, bind)
		q.owe(wr)
		if len(wrs) == 1 && n == 1 && wr.Inline != nil && len(wr.Inline) <= q.c.caps.PushInline {
			err := q.push(blk)
			q.mu.Unlock()
			q.posted()
			return err
		}
	}
	pi := q.sq.pi
	q.mu.Unlock()
	if err := q.c.write(q.db+cs.QPDBSQPI, pi&cs.QPDBSQPIPIMask); err != nil {
		return err
	}
	q.posted()
	return nil
}

// owe notes a posted WR for the completion watchdog. Called with mu held,
// after the WR is in the SQ.
func (q *qp) owe(wr *iwarp.SendWR) {
	read := wr.Opcode == iwarp.WRRead
	q.owedMu.Lock()
	defer q.owedMu.Unlock()
	if !wr.Signaled {
		q.readSE = q.readSE || read
		return
	}
	q.owed = append(q.owed, owedWR{id: wr.ID, end: uint16(q.sq.pi), op: wr.Opcode, waitPeer: read || q.readSE})
	q.readSE = false
}

// paid takes the completion of the oldest owed WR off the list (a send
// CQE of this QP polled; an error completion of an unsignaled WR, which
// ends the QP, names no owed WR and is ignored).
func (q *qp) paid(id uint64) {
	q.sentWC.Add(1)
	q.owedMu.Lock()
	if len(q.owed) > 0 && q.owed[0].id == id {
		q.owed = q.owed[1:]
		if len(q.owed) == 0 {
			q.owed = nil // let the array go
		}
	}
	q.owedMu.Unlock()
}

// oldestOwed is the oldest signaled WR without a polled completion.
func (q *qp) oldestOwed() (owedWR, bool) {
	q.owedMu.Lock()
	defer q.owedMu.Unlock()
	if len(q.owed) == 0 {
		return owedWR{}, false
	}
	return q.owed[0], true
}

// posted follows a send doorbell: what the card's first steps put on the
// transmit ring goes out from this goroutine, and a waiter on the send
// CQ learns of a completion they wrote without the event goroutine.
func (q *qp) posted() {
	q.txPush()
	q.scq.poke()
}

// push writes one basic block through the QP's push window: its last word
// posts it as SQ_PI + 1.
func (q *qp) push(b []byte) error {
	base := q.db + cs.QPDBPush
	for i := 0; i < cs.BB; i += 4 {
		v := uint32(b[i]) | uint32(b[i+1])<<8 | uint32(b[i+2])<<16 | uint32(b[i+3])<<24
		if err := q.c.write(base+uint32(i), v); err != nil {
			return err
		}
	}
	return nil
}

// PostRecv writes the WRs into the RQ and rings RQ_PI once.
func (q *qp) PostRecv(wrs ...iwarp.RecvWR) error {
	bbs := 0
	for i := range wrs {
		if err := q.validRecv(&wrs[i]); err != nil {
			return err
		}
		bbs += recvBBs(&wrs[i])
	}
	q.mu.Lock()
	if q.state == qpEnded || q.failed {
		defer q.mu.Unlock()
		return q.stateErrLocked()
	}
	ci := q.rqCI()
	q.rq.reclaim(ci)
	if !q.rq.room(ci, len(wrs), bbs) {
		defer q.mu.Unlock()
		return fmt.Errorf("%w: receive queue holds %d of %d WRs", iwarp.ErrQueueFull, q.rq.count, q.rq.depth)
	}
	for i := range wrs {
		q.putRecv(&wrs[i])
	}
	pi := q.rq.pi
	q.mu.Unlock()
	return q.c.write(q.db+cs.QPDBRQPI, pi&cs.QPDBRQPIPIMask)
}

// setReason records why the QP ends, if nothing did before.
func (q *qp) setReason(err error) {
	q.mu.Lock()
	if q.reason == nil {
		q.reason = err
	}
	q.mu.Unlock()
}

// ended: the card is done with the QP (QP_CLOSED, a Terminate, QP_ERROR).
func (q *qp) ended(reason error, graceful bool) {
	q.mu.Lock()
	if q.reason == nil {
		q.reason = reason
	}
	q.state = qpEnded
	q.mu.Unlock()
	q.termOne.Do(func() {
		q.grace = graceful
		close(q.term)
	})
}

// fail puts the QP in error with err (unless it ended already): the card
// flushes its work and reports QP_ERROR; if it does not within the
// watchdog bound, the reaper ends the QP without it.
func (q *qp) fail(err error) {
	q.mu.Lock()
	if q.reason == nil {
		q.reason = err
	}
	if q.failed || q.state == qpEnded {
		q.mu.Unlock()
		return
	}
	q.failed = true
	q.mu.Unlock()
	// A refused command means the card has put the QP in error or closed
	// it already: its event is on the way (waitTerm bounds the wait).
	q.c.qpCmd(q.qpn, cs.QPOpError)
	q.waitTerm()
}

// abandon ends the QP with err without waiting for the card: the
// backend that checks the card found it wrong for this QP (a
// driver.Checker mismatch), so neither its QP_ERROR event nor its flush
// is awaited, and the QP's CQs fail with err once drained. The card is
// still told (QP_CMD ERROR, then DESTROY at the reap).
func (q *qp) abandon(err error) {
	q.mu.Lock()
	if q.reason == nil {
		q.reason = err
	}
	q.dropped = true
	first := !q.failed && q.state != qpEnded
	q.failed = true
	q.mu.Unlock()
	if first {
		q.c.qpCmd(q.qpn, cs.QPOpError)
	}
	q.ended(err, false)
	// The card is not trusted to complete or flush the QP's work: a
	// Wait on its CQs returns what is there, then err, rather than wait
	// for completions that may never come.
	q.scq.setErr(err)
	q.rcq.setErr(err)
}

// Close ends the stream gracefully: the card finishes the posted work and
// closes the transmit stream; Close returns once the QP is done.
func (q *qp) Close() error {
	q.mu.Lock()
	first := q.state == qpLive && !q.failed
	if first {
		q.state = qpClosing
	}
	q.mu.Unlock()
	if first && q.c.qpCmd(q.qpn, cs.QPOpClose) != nil {
		// Refused: the card ended the QP already; its event says why.
		q.waitTerm()
	}
	if first {
		// The posted work gets Linger to finish (a peer that stopped
		// reading holds it back); what is left then is flushed, as
		// golden/iwarp's Close does.
		t := time.NewTimer(q.c.opt.Linger)
		select {
		case <-q.term:
		case <-t.C:
			q.fail(iwarp.ErrClosed)
		}
		t.Stop()
	}
	<-q.done
	return nil
}

// checkProgress is the watchdog's look at the QP. The card owes it
// progress when posted send work waits in the SQ (SQ_CI must move), or
// when it has taken a signaled WR whose completion depends on it alone
// (not on the peer's Read Response): a completion, or at least transmit
// stream bytes, must come. Nothing of the kind within the bound ends the
// QP with a StuckError naming what was owed. A transmit ring the bridge
// has not drained is TCP holding the card back (a peer that does not
// read), not the card being stuck.
func (q *qp) checkProgress(now time.Time) {
	q.mu.Lock()
	pi, state := uint16(q.sq.pi), q.state
	q.mu.Unlock()
	ci, txs, done := q.sqCI(), q.statWord(0), q.sentWC.Load()
	owed, hasOwed := q.oldestOwed()
	waitSQ := pi != ci
	waitWC := hasOwed && !owed.waitPeer && int16(ci-owed.end) >= 0
	backpressure := txs != q.tx.sent.Load()
	moved := ci != q.lastCI || txs != q.lastTXS || done != q.lastDone
	if moved || !(waitSQ || waitWC) || state == qpEnded || backpressure || q.lastMove.IsZero() {
		q.lastCI, q.lastTXS, q.lastDone, q.lastMove = ci, txs, done, now
		return
	}
	if now.Sub(q.lastMove) <= q.c.opt.Watchdog {
		return
	}
	q.lastMove = now
	if waitSQ {
		q.fail(&StuckError{What: fmt.Sprintf("SQ_CI of QP %d (at %d, posted up to %d)", q.qpn, ci, pi), After: q.c.opt.Watchdog.String()})
		return
	}
	if q.scq.holds(q.qpn) {
		return // written, not polled yet: the card did its part
	}
	q.fail(&StuckError{What: fmt.Sprintf("the completion of QP %d's %v WR %#x (the card took it from the SQ, SQ_CI %d)", q.qpn, owed.op, owed.id, ci),
		After: q.c.opt.Watchdog.String()})
}

// reap waits until the card is done with the QP, lets the bridge finish
// (what the card wrote last, a Terminate or the last FPDUs, goes out,
// then our FIN; the peer gets Linger to end its stream, and after an
// error what it still sends is read and dropped), closes the connection,
// destroys the QP on the card and reports the end.
func (q *qp) reap() {
	c := q.c
	defer c.live.Done()
	select {
	case <-q.term:
	case <-q.rx.done:
		// The connection is gone: the card is told (RX_FIN or RX_LOST)
		// and ends the QP; wait for it below.
		<-q.waitTerm()
	}
	if !q.grace {
		// In error the card takes nothing more from the receive ring.
		q.rx.discard.Store(true)
		q.rx.wake()
	}
	q.tx.finish()
	linger := time.NewTimer(c.opt.Linger)
	expired := false
	select {
	case <-q.tx.done:
	case <-linger.C:
		expired = true
	}
	if !expired {
		// Our FIN is out (after what the card wrote last, a Terminate):
		// the peer gets the rest of Linger to end its stream too, as RFC
		// 5040 §6.2.1 asks, so that the connection is not reset under
		// the Terminate.
		select {
		case <-q.rx.done:
		case <-linger.C:
		}
	}
	linger.Stop()
	q.rx.closing.Store(true)
	q.tx.closing.Store(true)
	q.conn.Close()
	q.rx.finish()
	<-q.tx.done
	<-q.rx.done
	q.mu.Lock()
	err, dropped := q.reason, q.dropped
	q.mu.Unlock()
	if q.grace {
		// CLOSED leaves the receives posted: ERROR flushes them.
		c.qpCmd(q.qpn, cs.QPOpError)
	}
	// The card flushes the WQEs after it reports the error: wait until it
	// is done with every block posted (unless it was found wrong for this
	// QP: nothing more is awaited from it), then free the QP number.
	if !dropped {
		if derr := c.poll(c.opt.Watchdog, fmt.Sprintf("the flush of QP %d", q.qpn), func() (bool, error) {
			q.mu.Lock()
			defer q.mu.Unlock()
			return q.sqCI() == uint16(q.sq.pi) && q.rqCI() == uint16(q.rq.pi), nil
		}); derr != nil && err == nil {
			err = derr
		}
	}
	c.qpCmd(q.qpn, cs.QPOpDestroy)
	q.scq.detach()
	q.rcq.detach()
	if err == nil {
		err = iwarp.ErrClosed
	}
	q.err.Store(&err)
	c.qps[q.qpn].Store(nil)
	q.txMu.Lock() // a post's txPush may still be on its way to the ring
	q.txGone = true
	q.txMu.Unlock()
	q.release()
	close(q.done)
	ev := driver.Event{Type: driver.EventQPClosed, QPN: q.qpn, Err: err}
	if !errors.Is(err, iwarp.ErrClosed) {
		ev.Type = driver.EventQPFatal
	}
	c.post(ev)
}

// waitTerm returns q.term, which the watchdog closes if the card has not
// ended the QP within its bound (the QP then ends with a *StuckError,
// unless it had a reason already).
func (q *qp) waitTerm() <-chan struct{} {
	t := time.NewTimer(q.c.opt.Watchdog)
	go func() {
		defer t.Stop()
		select {
		case <-q.term:
		case <-t.C:
			q.ended(&StuckError{What: fmt.Sprintf("QP_ERROR or QP_CLOSED for QP %d", q.qpn), After: q.c.opt.Watchdog.String()}, false)
		}
	}()
	return q.term
}

// emss is the TCP MSS of conn, or 1460 when it cannot be read.
func emss(conn net.Conn) int {
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		return 1460
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return 1460
	}
	mss := 1460
	rc.Control(func(fd uintptr) {
		if v, err := syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG); err == nil && v > 0 {
			mss = v
		}
	})
	return mss
}
