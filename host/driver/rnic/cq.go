package rnic

import (
	"context"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/host/driver"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// cq is a completion queue: a ring of CQEs in DMA memory the card writes
// and the driver polls by the owner bit, with the consumer index and
// arming doorbell CQ_DB.
type cq struct {
	c     *Card
	cqn   uint32
	depth int
	r     ring
	n     uint32 // ring entries (a power of two)
	db    uint32 // CQ_DB.CI offset

	mu        sync.Mutex
	ci        uint32 // completions consumed
	scan      uint32 // entries below it were looked at for a notification
	overflow  bool
	err       error // sticky: a corrupted CQE, the card stopped
	destroyed bool
	users     int           // QP attachments (a QP's send and receive CQ count apart) not yet detached
	released  bool          // destroyed on the card (or the card closed)
	gone      bool          // the ring is freed: nothing is read from it any more
	wake      chan struct{} // closed when a notification or an end arrives
	waiters   int           // Waits asleep on wake
	hwArmed   bool          // the card is armed for the next completion
	hwSol     bool          // .. for the next solicited or error one only
	userArmed bool          // Arm was called and has not fired yet
	userSol   bool
	notify    chan struct{}
	// bell wakes a Wait without mu: a card that announces completions
	// (driver.Announcer) rings it from wherever the card ran, whatever
	// locks that goroutine holds. A ring wakes one Wait; a Wait that
	// leaves a completion behind for others asleep wakes them.
	bell chan struct{}
	qpns [cs.MaxQP / 64]uint64 // the QPs that complete here
}

// CreateCQ creates a completion queue of depth entries (its ring holds the
// next power of two).
func (c *Card) CreateCQ(depth int) (driver.CQ, error) {
	if depth < 1 || depth > c.caps.MaxQueue {
		return nil, fmt.Errorf("%w: CQ depth %d (1 to %d)", driver.ErrInvalid, depth, c.caps.MaxQueue)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.liveLocked(); err != nil {
		return nil, err
	}
	cqn := uint32(len(c.cqs))
	for i := range uint32(c.caps.CQs) {
		n := (c.nextCQN + i) % uint32(c.caps.CQs)
		if c.cqs[n].Load() == nil {
			cqn = n
			break
		}
	}
	if cqn == uint32(len(c.cqs)) {
		return nil, fmt.Errorf("%w: all %d CQs of card %s are in use", mem.ErrFull, c.caps.CQs, c.opt.Name)
	}
	log := bits.Len(uint(depth - 1))
	r, err := c.allocRing(cs.CQESize << log)
	if err != nil {
		return nil, err
	}
	q := &cq{c: c, cqn: cqn, depth: depth, r: r, n: 1 << log, db: cs.CQDBBase + cqn*cs.CQDBStride,
		wake: make(chan struct{}), notify: make(chan struct{}, 1), bell: make(chan struct{}, 1)}
	if err := c.cmd([][2]uint32{{cs.CQNum, cqn}, {cs.CQBaseLo, uint32(r.iova)}, {cs.CQBaseHi, uint32(r.iova >> 32)},
		{cs.CQCfg, uint32(log)}, {cs.CQCmd, uint32(cs.CQOpCreate)}}); err != nil {
		c.freeRing(&r)
		return nil, err
	}
	c.cqs[cqn].Store(q)
	c.nextCQN = cqn + 1
	return q, nil
}

// Depth is the number of entries asked for.
func (q *cq) Depth() int { return q.depth }

// Notify delivers one value per armed notification.
func (q *cq) Notify() <-chan struct{} { return q.notify }

// Overflowed reports whether the card lost a completion to a full ring.
func (q *cq) Overflowed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.overflow
}

// attach records that QP qpn completes here.
func (q *cq) attach(qpn uint32) {
	q.mu.Lock()
	q.qpns[qpn/64] |= 1 << (qpn % 64)
	q.users++
	q.mu.Unlock()
}

// detach: a QP that completed here is destroyed on the card. The last one
// to go releases a CQ the user has destroyed.
func (q *cq) detach() {
	q.mu.Lock()
	q.users--
	rel := q.releasableLocked()
	q.mu.Unlock()
	if rel {
		q.release()
	}
}

// releasableLocked reports (once) that the CQ is destroyed and no QP
// completes into it any more: its number and ring can go.
func (q *cq) releasableLocked() bool {
	if !q.destroyed || q.users > 0 || q.released {
		return false
	}
	q.released = true
	return true
}

// release destroys the CQ on the card, dispatches the events the card
// wrote for it before, and frees its number and ring, so that a server
// making a CQ per connection never runs out of them.
func (q *cq) release() {
	c := q.c
	if err := c.cmd([][2]uint32{{cs.CQNum, q.cqn}, {cs.CQCmd, uint32(cs.CQOpDestroy)}}); err != nil {
		return // the card refused (it is closing or stopped): Close frees the ring
	}
	c.syncEvents()
	if c.cqs[q.cqn].CompareAndSwap(q, nil) {
		q.freeRing()
	}
}

// freeRing frees the ring once.
func (q *cq) freeRing() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.gone {
		q.gone = true
		q.c.freeRing(&q.r)
	}
}

// entry is the CQE at free-running index i, if the card has written it.
func (q *cq) entry(i uint32) (cs.CQE, bool) {
	off := int(i%q.n) * cs.CQESize
	w := atomic.LoadUint32(word(q.r.b, off+28))
	if w>>31 != 1^(i/q.n)&1 {
		return nil, false
	}
	return cs.CQE(q.r.b[off : off+cs.CQESize]), true
}

// holds reports whether a send completion of QP qpn is written and not
// polled yet.
func (q *cq) holds(qpn uint32) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i := q.ci; !q.gone && i-q.ci < q.n; i++ {
		e, ok := q.entry(i)
		if !ok {
			return false
		}
		if uint32(e.QPN()) == qpn && e.Opcode() != cs.WCOpcodeRecv {
			return true
		}
	}
	return false
}

// completion checks a CQE and converts it.
func (q *cq) completion(e cs.CQE, idx uint32) (iwarp.Completion, error) {
	qpn := uint32(e.QPN())
	bad := func(msg string, a ...any) error {
		return &RecordError{Record: "CQE", Index: idx, Obj: q.cqn, Msg: fmt.Sprintf(msg, a...)}
	}
	switch {
	case e.Status() > cs.WCStatusMWBindErr:
		return iwarp.Completion{}, bad("status %d", e.Status())
	case e.Opcode() > cs.WCOpcodeBindMW:
		return iwarp.Completion{}, bad("opcode %d", e.Opcode())
	case qpn >= cs.MaxQP || q.qpns[qpn/64]&(1<<(qpn%64)) == 0:
		return iwarp.Completion{}, bad("QP %d, which does not complete on this CQ", qpn)
	}
	wc := iwarp.Completion{ID: e.WRID(), Status: iwarp.Status(e.Status()), Opcode: iwarp.WCOpcode(e.Opcode()),
		ByteLen: e.ByteLen(), QP: qpn, Solicited: e.Solicited(), Invalidated: e.Invalidated()}
	if wc.Invalidated {
		wc.InvalidatedSTag = mem.STag(e.InvSTag())
		if p := q.c.qp(qpn); p != nil {
			// The card applied the peer's invalidation to its table; the
			// mirror follows, so that later posts see the STag dead.
			q.c.tab.RemoteInvalidate(wc.InvalidatedSTag, p.pd.ID, qpn)
		}
	}
	return wc, nil
}

// pollLocked moves up to len(wc) completions into wc. A corrupted CQE
// makes the CQ's error sticky; the QPs it may belong to are ended (by the
// caller, without mu: see failed).
func (q *cq) pollLocked(wc []iwarp.Completion) (int, error) {
	k := 0
	var err error
	for k < len(wc) && !q.gone {
		e, ok := q.entry(q.ci)
		if !ok {
			break
		}
		if wc[k], err = q.completion(e, q.ci); err != nil {
			q.ci++ // the record is dropped; the CQ is in error
			if q.err == nil {
				q.err = err
			}
			break
		}
		if wc[k].Opcode != iwarp.WCRecv {
			if p := q.c.qp(wc[k].QP); p != nil && p.scq == q {
				p.paid(wc[k].ID)
			}
		}
		if q.userArmed && (!q.userSol || wc[k].Solicited || wc[k].Status != iwarp.WCSuccess) {
			q.fireLocked()
		}
		q.ci++
		k++
	}
	if k > 0 || err != nil {
		q.scan = max(q.scan, q.ci)
		if werr := q.c.write(q.db, q.ci&cs.CQDBCICIMask); werr != nil && q.err == nil {
			q.err = werr
		}
	}
	return k, err
}

// failed ends the QPs a corrupted CQE may belong to.
func (q *cq) failed(err error) {
	q.mu.Lock()
	set := q.qpns
	q.mu.Unlock()
	for w, m := range set {
		for m != 0 {
			b := bits.TrailingZeros64(m)
			m &^= 1 << b
			if p := q.c.qp(uint32(w*64 + b)); p != nil {
				p.fail(err)
			}
		}
	}
}

// Poll moves up to len(wc) completions into wc.
func (q *cq) Poll(wc []iwarp.Completion) int {
	q.mu.Lock()
	k, err := q.pollLocked(wc)
	q.mu.Unlock()
	if err != nil {
		q.failed(err)
	}
	return k
}

// armLocked arms the card for the next completion (solicited-only when
// sol). Called with mu held.
func (q *cq) armLocked(sol bool) error {
	if q.released {
		return nil // its number may be another CQ's by now
	}
	if q.hwArmed && (!q.hwSol || sol) {
		return nil
	}
	v := q.ci&cs.CQDBCICIMask | 1<<cs.CQDBCIArmShift
	if sol {
		v |= 1 << cs.CQDBCIArmSolicitedShift
	}
	q.hwArmed, q.hwSol = true, sol
	return q.c.write(q.db, v)
}

// Wait returns the next completion, blocking until one arrives or ctx ends.
func (q *cq) Wait(ctx context.Context) (iwarp.Completion, error) {
	var wc [1]iwarp.Completion
	for {
		q.mu.Lock()
		k, err := q.pollLocked(wc[:])
		switch {
		case k == 1:
			if q.waiters > 0 && !q.gone {
				if _, more := q.entry(q.ci); more {
					q.wakeLocked() // a ring woke this Wait only: the others look too
				}
			}
			q.mu.Unlock()
			return wc[0], nil
		case err != nil:
			q.mu.Unlock()
			q.failed(err)
			return iwarp.Completion{}, err
		case q.overflow:
			q.mu.Unlock()
			return iwarp.Completion{}, fmt.Errorf("rnic: CQ %d: %w", q.cqn, iwarp.ErrCQOverflow)
		case q.err != nil:
			err := q.err
			q.mu.Unlock()
			return iwarp.Completion{}, err
		case q.destroyed:
			q.mu.Unlock()
			return iwarp.Completion{}, iwarp.ErrCQDestroyed
		case ctx.Err() != nil:
			q.mu.Unlock()
			return iwarp.Completion{}, fmt.Errorf("rnic: waiting for a completion: %w", ctx.Err())
		}
		wake := q.wake
		if !q.c.announced {
			if err := q.armLocked(false); err != nil {
				q.mu.Unlock()
				return iwarp.Completion{}, err
			}
		}
		// A completion written before the arm raises no event, nor is one
		// announced before this Wait is counted among the sleepers: count
		// it, then look again.
		q.sleep()
		_, now := q.entry(q.ci)
		if now {
			q.wakeUp()
		}
		q.mu.Unlock()
		if now {
			continue
		}
		select {
		case <-wake:
		case <-q.bell:
		case <-ctx.Done():
		}
		q.mu.Lock()
		q.wakeUp()
		q.mu.Unlock()
	}
}

// sleep counts a Wait about to sleep (with mu held); on a card that
// announces completions, the first one puts the CQ among those its
// announcements wake.
func (q *cq) sleep() {
	q.waiters++
	if q.waiters == 1 && q.c.announced {
		q.c.waitMu.Lock()
		q.c.waiting = append(q.c.waiting, q)
		q.c.waitMu.Unlock()
	}
}

// wakeUp uncounts a Wait that woke (with mu held).
func (q *cq) wakeUp() {
	q.waiters--
	if q.waiters == 0 && q.c.announced {
		q.c.waitMu.Lock()
		if i := slices.Index(q.c.waiting, q); i >= 0 {
			q.c.waiting = slices.Delete(q.c.waiting, i, i+1)
		}
		q.c.waitMu.Unlock()
	}
}

// announce is the backend's word that the card wrote completions
// (driver.Announcer): a Wait asleep on each CQ that has one wakes and
// looks. It takes no CQ's mu (the backend may call it from a register
// write made with one held): waitMu is taken under no other lock.
func (c *Card) announce() {
	c.waitMu.Lock()
	for _, q := range c.waiting {
		select {
		case q.bell <- struct{}{}:
		default:
		}
	}
	c.waitMu.Unlock()
}

// poke wakes the waiters if a completion is there for them: the bridge
// and the posting goroutine call it after a doorbell whose first steps of
// the card may have written one, so that the waiter does not wait for
// the event goroutine's CQ_NOTIFY. A card that announces its completions
// (driver.Announcer) has woken them already.
func (q *cq) poke() {
	if q.c.announced {
		return
	}
	q.mu.Lock()
	if q.waiters > 0 && !q.gone {
		if _, ok := q.entry(q.ci); ok {
			q.wakeLocked()
		}
	}
	q.mu.Unlock()
}

// Arm asks for one notification on Notify for the next completion (or
// the next solicited or error one).
func (q *cq) Arm(solicitedOnly bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.userArmed, q.userSol = true, solicitedOnly
	q.scan = max(q.scan, q.ci)
	if err := q.armLocked(solicitedOnly); err != nil && q.err == nil {
		q.err = err
	}
}

func (q *cq) fireLocked() {
	q.userArmed = false
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

// wakeLocked wakes the Waits asleep on wake. With none asleep there is
// nothing to close: a Wait takes wake and counts itself in waiters under
// mu before it sleeps, so the channel is replaced only when one did.
func (q *cq) wakeLocked() {
	if q.waiters == 0 {
		return
	}
	close(q.wake)
	q.wake = make(chan struct{})
}

// notified handles a CQ_NOTIFY event: the card wrote a completion after
// an arm. Waiters wake; an armed user is notified if one of the new
// completions qualifies, and the card is armed again otherwise.
func (q *cq) notified() {
	q.mu.Lock()
	defer q.mu.Unlock()
	sol := q.hwSol
	q.hwArmed = false
	q.wakeLocked()
	if !q.userArmed {
		return
	}
	if !sol && q.userSol && !q.gone && !q.solicitedSinceScan() {
		if err := q.armLocked(true); err != nil && q.err == nil {
			q.err = err
		}
		// A completion the card wrote between the scan and the arm
		// raises no event: look once more.
		if !q.solicitedSinceScan() {
			return
		}
	}
	q.fireLocked()
}

// solicitedSinceScan reports whether a solicited or failed completion was
// written since the last scan, and moves the scan past what it read.
func (q *cq) solicitedSinceScan() bool {
	for i := max(q.scan, q.ci); ; i++ {
		e, ok := q.entry(i)
		if !ok {
			q.scan = i
			return false
		}
		if e.Solicited() || e.Status() != cs.WCStatusSuccess {
			q.scan = i + 1
			return true
		}
	}
}

// overrun handles CQ_OVERRUN: the card lost a completion.
func (q *cq) overrun() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.overflow = true
	q.wakeLocked()
	if q.userArmed {
		q.fireLocked()
	}
}

// Err is the CQ's sticky error (a corrupted CQE, the CQ or the card in
// error), or nil: Poll returns nothing past it.
func (q *cq) Err() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.err
}

// setErr makes err sticky (a CQ_ERROR, a QP the card is no longer
// trusted with, the card stopped), wakes the waiters and fires an armed
// user's notification: its user then polls and finds the error.
func (q *cq) setErr(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err == nil {
		q.err = err
	}
	q.wakeLocked()
	if q.userArmed {
		q.fireLocked()
	}
}

// Destroy ends every Wait, current or later, with iwarp.ErrCQDestroyed
// (the verbs layer calls it). The card's CQ lives on while QPs may still
// complete into it; the last of them to be destroyed releases it.
func (q *cq) Destroy() {
	q.mu.Lock()
	q.destroyed = true
	q.wakeLocked()
	rel := q.releasableLocked()
	q.mu.Unlock()
	if rel {
		q.release()
	}
}

// destroy ends the waits and frees the ring once the card is reset.
func (q *cq) destroy() {
	q.mu.Lock()
	q.destroyed, q.released = true, true
	q.wakeLocked()
	q.mu.Unlock()
	q.freeRing()
}
