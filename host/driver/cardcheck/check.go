package cardcheck

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/openiwarp/openiwarp/host/driver/cardmodel"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// ErrMismatch is wrapped by every *MismatchError: the card (RTL) did
// something its transaction-level model did not, or left undone something
// the model did.
var ErrMismatch = errors.New("cardcheck: the card disagrees with its model")

// MismatchError names the transaction on which the RTL card and the card
// model disagreed.
type MismatchError struct {
	QPN  uint32 // the QP it served (0: the card's own, or unknown)
	Kind string // "CQE", "EQE", "QPSTAT", "payload", "stream", "register"
	Addr uint64 // where it was written (0 for a register)
	Want []byte // what the model wrote (nil: nothing)
	Got  []byte // what the RTL wrote (nil: nothing)
	What string // the disagreement, for humans
}

func (e *MismatchError) Error() string {
	who := "the card"
	if e.QPN != 0 {
		who = fmt.Sprintf("QP %d", e.QPN)
	}
	s := fmt.Sprintf("cardcheck: %s write at %#x for %s: %s", e.Kind, e.Addr, who, e.What)
	if e.Addr == 0 {
		s = fmt.Sprintf("cardcheck: %s write for %s: %s", e.Kind, who, e.What)
	}
	if e.Kind == "register" {
		s = fmt.Sprintf("cardcheck: register access for %s: %s", who, e.What)
	}
	if e.Want != nil {
		s += fmt.Sprintf("; model: %s", hexShort(e.Want))
	}
	if e.Got != nil {
		s += fmt.Sprintf("; RTL: %s", hexShort(e.Got))
	}
	return s
}

// Is makes errors.Is(err, ErrMismatch) true.
func (e *MismatchError) Is(target error) bool { return target == ErrMismatch }

func hexShort(b []byte) string {
	if len(b) <= 32 {
		return fmt.Sprintf("%x (%d bytes)", b, len(b))
	}
	return fmt.Sprintf("%x... (%d bytes)", b[:32], len(b))
}

// Counts are the transactions a checker compared.
type Counts struct {
	// Checked counts the RTL's DMA writes found equal to the model's, by
	// kind ("CQE", "EQE", "QPSTAT", "data": stream and payload pieces).
	Checked map[string]uint64
	// Bytes is the payload and stream bytes compared.
	Bytes uint64
	// Loose counts the RTL's writes accepted without a model counterpart
	// because their timing decides them (CQ_NOTIFY, TX_DATA and RX_SPACE
	// events; status records between two of the model's; WR_FLUSH_ERR
	// completions on a CQ that overran, which the model lost; what the
	// RTL wrote between the model's stop on a fatal DMA fault and its
	// own, a write-response latency later).
	Loose uint64
	// Mismatches counts the disagreements (the first per QP is reported).
	Mismatches uint64
	// Unchecked counts the RTL's writes for QPs already found wrong,
	// which are no longer compared (their records let the driver end
	// them).
	Unchecked uint64
}

// region is a ring the checker recognises by address.
type region struct {
	base, end uint64
	num       uint32 // CQN, or the QPN of a transmit ring
	entries   uint32 // ring entries (CQ, EQ)
	count     uint64 // RTL records written to it
}

// pending is a piece of a model write the RTL has not written yet.
type pending struct {
	seq  uint64
	kind cardmodel.WriteKind
	qpn  uint32
	addr uint64
	data []byte
}

// statHist is the status records of one QP: the model's since the RTL's
// last, and the RTL's last.
type statHist struct {
	model [][cs.QPStatSize]byte
	rtl   [cs.QPStatSize]byte
	seen  bool
}

// checker compares the RTL card's DMA writes with the card model's, fed
// the same register writes in the same order. The model runs to idle at
// every register write, so it is ahead of the RTL; its writes are kept as
// expectations and each RTL write must match one (by address for stream
// and payload bytes, by content and order per QP for CQEs and events, as
// a step between the model's records for status records) before it
// reaches host memory. Not safe for concurrent use: the card's goroutine
// owns it.
type checker struct {
	reach func(addr uint64, n int) error // nil if the card's DMA may write there
	fail  func(qpn uint32, err error)

	seq    uint64
	pages  map[uint64][]*pending // by 4 KiB page, in model order
	npend  int
	cqes   map[[2]uint32][][cs.CQESize]byte // (CQN, QPN) -> model CQEs, in order
	eqes   map[uint32][][cs.EQESize]byte    // OBJ -> model events (those whose order is checked), in order
	stats  map[uint32]*statHist
	failed map[uint32]bool
	// looseModel and looseRTL count the timing-decided events.
	looseModel, looseRTL map[looseKey]uint64
	// overran: CQs the model reported a CQ_OVERRUN for (since their
	// CREATE). The flushes of the QPs that overrun put in error complete
	// when they reach the CQ: the model, ahead of the RTL, finds it still
	// full and loses them, the RTL may find it freed by then.
	overran map[uint32]bool
	// stopped: the model stopped (STATUS.FATAL: a faulted status record
	// or EQE). It stops at the faulted write, the RTL a write response
	// later, and the two may have ordered their last writes differently:
	// from then on an RTL write the model has no counterpart for is
	// loose, and a model write the RTL never made is not missing, but
	// for the DMA_FAULT event that reports the stop.
	stopped bool
	// faulted: QPs the model reported a DMA fault of (DMA_FAULT, OBJ the
	// QP), since their CREATE. The model reads a segment's payload before
	// it frames it and sends nothing of the faulted one; the RTL streams,
	// and has framed and written FPDUs past the fault by the time the
	// read's error comes back: it aborts them (never published) and
	// writes the Terminate over them. A transmit stream write of such a QP
	// that does not match the model's bytes is loose.
	faulted map[uint32]bool
	// wfaulted: QPs a payload write of the model's was refused for (its
	// DMA_FAULT), since their CREATE. The model stops at that write; the
	// RTL hears of the refusal a write response later and may by then
	// have placed more of that QP's segments (what its IOMMU let through)
	// and consumed their FPDUs: a payload write the model has no
	// counterpart for is loose while such a QP exists, and that QP's
	// RXS_CI may run ahead of the model's.
	wfaulted map[uint32]bool
	// cqLost: CQs the model put in error (CQ_ERROR: a CQE's write
	// faulted), since their CREATE, with the number of the lost record
	// in the ring's count. The RTL issued that CQE and hears of the fault
	// a write response later: by then it may have written more CQEs to
	// the CQ (the slots past the lost one, which the driver never reads)
	// and done more work on the QPs on it (sent WQEs the model flushed,
	// completed them on their other CQ, the Terminate later in the
	// stream). From the lost record on, the RTL's CQEs on such a CQ are
	// loose; so are what the QPs on it (cqDead) write that the model did
	// not, and what the model wrote for them that the RTL never does.
	cqLost map[uint32]uint64
	cqDead map[uint32]bool
	qpCQs  map[uint32][2]uint32 // QPN -> its send and receive CQ, from CREATE

	// Snooped from register writes: where the rings are.
	stage    map[uint32]uint32 // staging registers by offset
	cqs      map[uint32]*region
	eq       *region
	qpstat   uint64
	txs      map[uint32]*region // QPN -> transmit stream ring
	txsCI    map[uint32]uint32  // QPN -> the host's last TXS_CI doorbell
	counts   Counts
	reported []*MismatchError // the first maxReported
	// modelEQ counts the model's events. The driver's EQ consumer index
	// counts the RTL's, and the two differ by the timing-decided events
	// (looseEvent): the model is given its own count instead, as a host
	// that consumes every event at once, so that its EQ never looks full
	// or behind.
	modelEQ uint32
}

const maxReported = 64

func newChecker(reach func(addr uint64, n int) error) *checker {
	c := &checker{reach: reach, counts: Counts{Checked: map[string]uint64{}}}
	c.reset()
	return c
}

// reset forgets everything (the card was reset).
func (c *checker) reset() {
	c.pages = map[uint64][]*pending{}
	c.npend = 0
	c.cqes = map[[2]uint32][][cs.CQESize]byte{}
	c.eqes = map[uint32][][cs.EQESize]byte{}
	c.stats = map[uint32]*statHist{}
	c.failed = map[uint32]bool{}
	c.looseModel, c.looseRTL = map[looseKey]uint64{}, map[looseKey]uint64{}
	c.overran = map[uint32]bool{}
	c.stopped = false
	c.faulted = map[uint32]bool{}
	c.wfaulted = map[uint32]bool{}
	c.cqLost, c.cqDead, c.qpCQs = map[uint32]uint64{}, map[uint32]bool{}, map[uint32][2]uint32{}
	c.stage = map[uint32]uint32{}
	c.cqs = map[uint32]*region{}
	c.txs = map[uint32]*region{}
	c.txsCI = map[uint32]uint32{}
	c.eq, c.qpstat, c.modelEQ = nil, 0, 0
}

// mismatch reports e once per QP (the card: once) and counts it.
func (c *checker) mismatch(e *MismatchError) {
	c.counts.Mismatches++
	if traceOn {
		trace("%p MISMATCH %v", c, e)
	}
	if c.failed[e.QPN] {
		return
	}
	c.failed[e.QPN] = true
	c.forget(e.QPN)
	if len(c.reported) < maxReported {
		c.reported = append(c.reported, e)
	}
	if c.fail != nil {
		c.fail(e.QPN, e)
	}
}

// forget drops what the model wrote for QP qpn and the RTL has not.
func (c *checker) forget(qpn uint32) {
	if qpn == 0 {
		return
	}
	c.keepPending(func(p *pending) bool { return p.qpn != qpn })
	for key := range c.cqes {
		if key[1] == qpn {
			delete(c.cqes, key)
		}
	}
	delete(c.eqes, qpn)
	delete(c.stats, qpn)
}

// keepPending drops the pending model writes keep refuses.
func (c *checker) keepPending(keep func(*pending) bool) {
	for pg, l := range c.pages {
		k := l[:0]
		for _, p := range l {
			if keep(p) {
				k = append(k, p)
			}
		}
		c.npend -= len(l) - len(k)
		if len(k) == 0 {
			delete(c.pages, pg)
		} else {
			c.pages[pg] = k
		}
	}
}

// snoop follows a register write to learn where the rings are; a command
// the model refused changes none.
func (c *checker) snoop(off, v uint32, refused bool) {
	if refused {
		c.stage[off] = v
		return
	}
	switch off {
	case cs.Reset:
		if v&1 != 0 {
			c.reset()
		}
		return
	case cs.QpstatBaseLo:
		c.qpstat = c.qpstat&^0xffffffff | uint64(v)
	case cs.QpstatBaseHi:
		c.qpstat = c.qpstat&0xffffffff | uint64(v)<<32
	case cs.EQCfg:
		if v>>cs.EQCfgEnableShift&1 != 0 {
			n := uint32(1) << (v >> cs.EQCfgLogSizeShift & cs.EQCfgLogSizeMask)
			base := uint64(c.stage[cs.EQBaseHi])<<32 | uint64(c.stage[cs.EQBaseLo])
			c.eq = &region{base: base, end: base + uint64(n)*cs.EQESize, entries: n}
		}
	case cs.CQCmd:
		cqn := c.stage[cs.CQNum] & cs.CQNumCQNMask
		switch cs.CQOp(v >> cs.CQCmdOpShift & cs.CQCmdOpMask) {
		case cs.CQOpCreate:
			n := uint32(1) << (c.stage[cs.CQCfg] >> cs.CQCfgLogSizeShift & cs.CQCfgLogSizeMask)
			base := uint64(c.stage[cs.CQBaseHi])<<32 | uint64(c.stage[cs.CQBaseLo])
			c.cqs[cqn] = &region{base: base, end: base + uint64(n)*cs.CQESize, num: cqn, entries: n}
			delete(c.overran, cqn)
			delete(c.cqLost, cqn)
		case cs.CQOpDestroy:
			delete(c.cqs, cqn)
		}
	case cs.QPCmd:
		qpn := c.stage[cs.QPNum] & cs.QPNumQPNMask
		if cs.QPOp(v>>cs.QPCmdOpShift&cs.QPCmdOpMask) == cs.QPOpCreate {
			n := uint64(1) << (c.stage[cs.QPSizes] >> cs.QPSizesTXSLogShift & cs.QPSizesTXSLogMask)
			base := uint64(c.stage[cs.QPTXSBaseHi])<<32 | uint64(c.stage[cs.QPTXSBaseLo])
			c.txs[qpn] = &region{base: base, end: base + n, num: qpn}
			delete(c.txsCI, qpn)
			delete(c.stats, qpn)
			delete(c.failed, qpn)
			delete(c.faulted, qpn)
			delete(c.wfaulted, qpn)
			delete(c.cqDead, qpn)
			v := c.stage[cs.QPCqs]
			c.qpCQs[qpn] = [2]uint32{v & cs.QPCqsSendCQMask, v >> cs.QPCqsRecvCQShift & cs.QPCqsRecvCQMask}
		}
	}
	if off >= cs.QPDBBase && (off-cs.QPDBBase)%cs.QPDBStride == cs.QPDBTXSCI {
		c.txsCI[(off-cs.QPDBBase)/cs.QPDBStride] = v
	}
	c.stage[off] = v
}

// waitsOnHost reports whether the RTL's QP qpn has published transmit
// stream bytes the host has not given back yet (its last status record's
// TXS_PI is not the host's last TXS_CI). Such a QP may be quiet only
// because its ring is full: the RTL holds up to a quarter of the ring
// written and unpublished (card_tx's progress records), the model
// publishes every byte it writes and, run to idle at each register write,
// is ahead. Its missing writes are not missing until the host has taken
// what it was given.
func (c *checker) waitsOnHost(qpn uint32) bool {
	h := c.stats[qpn]
	if h == nil || !h.seen || c.txs[qpn] == nil {
		return false
	}
	return cs.QPStat(h.rtl[:]).TXSPI() != c.txsCI[qpn]
}

// expect takes one DMA write of the model.
func (c *checker) expect(w cardmodel.DMAWrite) {
	if traceOn {
		trace("%p model %v write QP %d %#x %d bytes %x", c, w.Kind, w.QPN, w.Addr, len(w.Data), w.Data[:min(len(w.Data), 32)])
	}
	if err := c.reach(w.Addr, len(w.Data)); err != nil {
		if w.Kind == cardmodel.WritePayload && w.QPN != 0 {
			c.wfaulted[w.QPN] = true
		}
		return // the IOMMU refuses it: the model reports a DMA fault, and so must the RTL
	}
	if w.QPN != 0 && c.failed[w.QPN] {
		if w.Kind == cardmodel.WriteEQE {
			c.modelEQ++
		}
		return // a QP found wrong is no longer compared: its error is reported
	}
	switch w.Kind {
	case cardmodel.WriteCQE:
		var r [cs.CQESize]byte
		copy(r[:], w.Data)
		k := [2]uint32{c.cqAt(w.Addr), w.QPN}
		c.cqes[k] = append(c.cqes[k], r)
	case cardmodel.WriteEQE:
		c.modelEQ++
		if qp := eventQP(cs.EQE(w.Data)); qp != 0 && c.failed[qp] {
			return // an event of a QP found wrong (the model writes events with QPN 0)
		}
		switch e := cs.EQE(w.Data); e.Type() {
		case cs.EQETypeCQOverrun:
			c.overran[e.Obj()] = true
		case cs.EQETypeDMAFault:
			if e.Obj() != 0 {
				c.faulted[e.Obj()] = true
			}
		case cs.EQETypeCQError:
			c.cqError(e.Obj())
		}
		if t := cs.EQE(w.Data).Type(); looseEvent(t) {
			c.looseModel[looseKey{t, cs.EQE(w.Data).Obj()}]++
			return
		}
		var r [cs.EQESize]byte
		copy(r[:], w.Data)
		obj := cs.EQE(w.Data).Obj()
		c.eqes[obj] = append(c.eqes[obj], r)
	case cardmodel.WriteStatus:
		h := c.stat(w.QPN)
		var r [cs.QPStatSize]byte
		copy(r[:], w.Data)
		h.model = append(h.model, r)
	default:
		c.seq++
		p := &pending{seq: c.seq, kind: w.Kind, qpn: w.QPN, addr: w.Addr, data: bytes.Clone(w.Data)}
		pg := w.Addr >> 12
		c.pages[pg] = append(c.pages[pg], p)
		c.npend++
	}
}

// cqError takes the model's CQ_ERROR of CQ n: the record it lost is the
// one after the RTL's records so far and the model's it has not written.
func (c *checker) cqError(n uint32) {
	r := c.cqs[n]
	if r == nil {
		return
	}
	lost := r.count
	for k, q := range c.cqes {
		if k[0] == n {
			lost += uint64(len(q))
		}
	}
	c.cqLost[n] = lost
	for qpn, cqs := range c.qpCQs {
		if cqs[0] == n || cqs[1] == n {
			c.cqDead[qpn] = true
		}
	}
}

// eventQP is the QP an event is about, 0 for the CQ events (CQ_NOTIFY,
// CQ_OVERRUN, CQ_ERROR: OBJ is a CQ) and the card's own (DMA_FAULT with
// OBJ 0).
func eventQP(e cs.EQE) uint32 {
	switch e.Type() {
	case cs.EQETypeCQNotify, cs.EQETypeCQOverrun, cs.EQETypeCQError:
		return 0
	}
	return e.Obj()
}

// looseEvent: events whose existence depends on when the host armed
// something relative to the card's progress, which the model, running
// ahead of the RTL, cannot reproduce one for one (an arm the model
// answers at once may find the RTL's work already consumed by the time it
// gets there, or merge with an earlier one). The check is coarse: a
// (type, object) the model gave events for and the RTL never did, once
// the RTL is idle, is missing (a notification the RTL does not give).
type looseKey struct {
	t   cs.EQEType
	obj uint32
}

// looseEvent reports whether events of type t are compared by count
// (looseKey).
func looseEvent(t cs.EQEType) bool {
	return t == cs.EQETypeCQNotify || t == cs.EQETypeTXData || t == cs.EQETypeRXSpace
}

func (c *checker) stat(qpn uint32) *statHist {
	h := c.stats[qpn]
	if h == nil {
		h = &statHist{}
		c.stats[qpn] = h
	}
	return h
}

func (c *checker) cqAt(addr uint64) uint32 {
	for n, r := range c.cqs {
		if addr >= r.base && addr < r.end {
			return n
		}
	}
	return ^uint32(0)
}

// write checks one RTL DMA write; it returns the bytes to commit to host
// memory (b, or a corrected copy), or nil to drop it.
func (c *checker) write(addr uint64, b []byte) []byte {
	if c.eq != nil && addr >= c.eq.base && addr < c.eq.end {
		return c.eqe(addr, b)
	}
	for _, r := range c.cqs {
		if addr >= r.base && addr < r.end {
			return c.cqe(r, addr, b)
		}
	}
	if c.qpstat != 0 && addr >= c.qpstat && addr < c.qpstat+cs.MaxQP*cs.QPStatSize {
		return c.status(uint32((addr-c.qpstat)/cs.QPStatSize), addr, b)
	}
	return c.data(addr, b)
}

// record checks that a record write is one whole aligned record and that
// the RTL's k-th record of the ring r is at slot k with the owner bit of
// its pass, reporting a mismatch if not.
func (c *checker) record(r *region, kind string, size int, addr uint64, b []byte) bool {
	if len(b) != size || (addr-r.base)%uint64(size) != 0 {
		c.mismatch(&MismatchError{Kind: kind, Addr: addr, Got: b, What: fmt.Sprintf("the RTL wrote %d bytes, not one aligned %d-byte record", len(b), size)})
		return false
	}
	slot := uint64(r.count % uint64(r.entries))
	owner := uint32(1 ^ r.count/uint64(r.entries)&1)
	if want := r.base + slot*uint64(size); addr != want {
		c.mismatch(&MismatchError{Kind: kind, Addr: addr, Got: b, What: fmt.Sprintf("record %d of the ring at %#x belongs at %#x", r.count, r.base, want)})
		return false
	}
	if got := binary.LittleEndian.Uint32(b[size-4:]) >> 31; got != owner {
		c.mismatch(&MismatchError{Kind: kind, Addr: addr, Got: b, What: fmt.Sprintf("owner bit %d on pass %d of the ring (want %d)", got, r.count/uint64(r.entries), owner)})
		return false
	}
	r.count++
	return true
}

func (c *checker) cqe(r *region, addr uint64, b []byte) []byte {
	if lost, ok := c.cqLost[r.num]; ok && r.count >= lost {
		c.counts.Loose++ // past the record the model lost: the driver stops there
		return b
	}
	if !c.record(r, "CQE", cs.CQESize, addr, b) {
		return fatalCQE(b)
	}
	qpn := cs.CQE(b).QPN()
	if c.failed[uint32(qpn)] {
		c.counts.Unchecked++
		return b
	}
	k := [2]uint32{r.num, uint32(qpn)}
	q := c.cqes[k]
	if c.overran[r.num] && cs.CQE(b).Status() == cs.WCStatusWRFlushErr && (len(q) == 0 || !sameRecord(q[0][:], b)) {
		c.counts.Loose++ // a flush the model lost on the full CQ (overran)
		return b
	}
	if len(q) == 0 && c.stopped {
		c.counts.Loose++
		return b
	}
	if c.cqDead[uint32(qpn)] && (len(q) == 0 || !sameRecord(q[0][:], b)) {
		// Work the RTL finished before it heard of its CQ's fault, which
		// the model flushed: the same WQE, another status.
		if len(q) > 0 && cs.CQE(q[0][:]).WRID() == cs.CQE(b).WRID() {
			c.cqes[k] = q[1:]
		}
		c.counts.Loose++
		return b
	}
	if len(q) == 0 {
		c.mismatch(&MismatchError{QPN: uint32(qpn), Kind: "CQE", Addr: addr, Got: b,
			What: fmt.Sprintf("the RTL wrote a completion of CQ %d the model did not", r.num)})
		return fatalCQE(b)
	}
	want := q[0]
	c.cqes[k] = q[1:]
	if !sameRecord(want[:], b) {
		c.mismatch(&MismatchError{QPN: uint32(qpn), Kind: "CQE", Addr: addr, Want: want[:], Got: b,
			What: fmt.Sprintf("completion of CQ %d differs", r.num)})
		return fatalCQE(b)
	}
	c.counts.Checked["CQE"]++
	return b
}

// fatalCQE is b with STATUS FATAL_ERR: a completion the checker disagreed
// with never reaches the user as a success.
func fatalCQE(b []byte) []byte {
	if len(b) != cs.CQESize {
		return nil
	}
	f := bytes.Clone(b)
	f[15] = byte(cs.WCStatusFatalErr)
	return f
}

// sameRecord compares two records but for the owner bit (the top bit of
// the last word), which the ring's pass decides.
func sameRecord(want, got []byte) bool {
	n := len(want)
	return len(got) == n && bytes.Equal(want[:n-1], got[:n-1]) && want[n-1]&0x7f == got[n-1]&0x7f
}

func (c *checker) eqe(addr uint64, b []byte) []byte {
	if !c.record(c.eq, "EQE", cs.EQESize, addr, b) {
		return b
	}
	e := cs.EQE(b)
	if looseEvent(e.Type()) {
		c.looseRTL[looseKey{e.Type(), e.Obj()}]++
		c.counts.Loose++
		return b
	}
	obj := e.Obj()
	q := c.eqes[obj]
	qpn := eventQP(e)
	if qpn != 0 && c.failed[qpn] {
		c.counts.Unchecked++
		return b
	}
	if len(q) == 0 && c.stopped {
		c.counts.Loose++
		return b
	}
	if len(q) == 0 {
		c.mismatch(&MismatchError{QPN: qpn, Kind: "EQE", Addr: addr, Got: b, What: fmt.Sprintf("the RTL wrote a %v event the model did not", e.Type())})
		return b
	}
	want := q[0]
	c.eqes[obj] = q[1:]
	if !sameRecord(want[:], b) {
		c.mismatch(&MismatchError{QPN: qpn, Kind: "EQE", Addr: addr, Want: want[:], Got: b,
			What: fmt.Sprintf("event differs (model: %v, RTL: %v)", cs.EQE(want[:]).Type(), e.Type())})
		return b
	}
	c.counts.Checked["EQE"]++
	return b
}

// status checks a QP status record: equal to one of the model's since the
// RTL's last, or between the RTL's last and the model's latest in every
// index, in a state the model passed through.
func (c *checker) status(qpn uint32, addr uint64, b []byte) []byte {
	if len(b) != cs.QPStatSize || addr%cs.QPStatSize != 0 {
		c.mismatch(&MismatchError{QPN: qpn, Kind: "QPSTAT", Addr: addr, Got: b, What: "not one whole aligned record"})
		return b
	}
	if c.failed[qpn] {
		c.counts.Unchecked++
		return b
	}
	h := c.stat(qpn)
	for i := len(h.model) - 1; i >= 0; i-- {
		if bytes.Equal(h.model[i][:], b) {
			h.model = h.model[i:]
			copy(h.rtl[:], b)
			h.seen = true
			c.counts.Checked["QPSTAT"]++
			return b
		}
	}
	if c.stopped || c.cqDead[qpn] {
		copy(h.rtl[:], b)
		h.seen = true
		c.counts.Loose++
		return b
	}
	if len(h.model) == 0 {
		c.mismatch(&MismatchError{QPN: qpn, Kind: "QPSTAT", Addr: addr, Got: b, What: "the RTL wrote a status record the model did not"})
		return b
	}
	latest := cs.QPStat(h.model[len(h.model)-1][:])
	prev := cs.QPStat(h.rtl[:])
	got := cs.QPStat(b)
	between := func(p, g, l uint32, bits uint) bool {
		m := uint32(1)<<bits - 1
		if bits == 32 {
			m = ^uint32(0)
		}
		return (g-p)&m <= (l-p)&m
	}
	stateSeen := false
	for _, r := range h.model {
		if cs.QPStat(r[:]).State() == got.State() {
			stateSeen = true
		}
	}
	rxsOK := between(prev.RXSCI(), got.RXSCI(), latest.RXSCI(), 32) || c.wfaulted[qpn] && int32(got.RXSCI()-prev.RXSCI()) >= 0
	if !between(prev.TXSPI(), got.TXSPI(), latest.TXSPI(), 32) || !rxsOK ||
		!between(uint32(prev.SQCI()), uint32(got.SQCI()), uint32(latest.SQCI()), 16) ||
		!between(uint32(prev.RQCI()), uint32(got.RQCI()), uint32(latest.RQCI()), 16) || !stateSeen ||
		(got.TXClosed() && !latest.TXClosed()) {
		c.mismatch(&MismatchError{QPN: qpn, Kind: "QPSTAT", Addr: addr, Want: latest, Got: b,
			What: "an index or state the model never published (ahead of the model's latest, or behind the RTL's last)"})
		return b
	}
	copy(h.rtl[:], b)
	h.seen = true
	c.counts.Loose++
	return b
}

// data checks stream and payload bytes against the model's pending
// writes, piece by piece: each byte must be the earliest pending model
// byte at its address.
func (c *checker) data(addr uint64, b []byte) []byte {
	qpn := c.txsOwner(addr)
	if qpn != 0 && (c.faulted[qpn] || c.cqDead[qpn]) && !c.pendingAll(addr, b) {
		c.counts.Loose++ // an FPDU the RTL aborted after the model's DMA fault, or sent before it heard of its CQ's
		return b
	}
	if qpn == 0 && (len(c.wfaulted) > 0 || len(c.cqDead) > 0) && !c.pendingAll(addr, b) {
		c.counts.Loose++ // placed behind a payload write the model found refused, or before the RTL heard of a CQ's fault
		return b
	}
	pos, rest := addr, b
	for len(rest) > 0 {
		p, i := c.find(pos)
		if p == nil {
			qpn := c.txsOwner(pos)
			if qpn != 0 && c.failed[qpn] {
				c.counts.Unchecked++
				return b // the transmit ring of a QP found wrong: its stream ends in error
			}
			if c.stopped {
				c.counts.Loose++
				return b
			}
			kind := "payload"
			if qpn != 0 {
				kind = "stream"
			}
			c.mismatch(&MismatchError{QPN: qpn, Kind: kind, Addr: pos, Got: rest, What: "the RTL wrote bytes the model did not write"})
			return nil
		}
		off := int(pos - p.addr)
		n := min(len(rest), len(p.data)-off)
		if !bytes.Equal(p.data[off:off+n], rest[:n]) {
			k := 0
			for k < n && p.data[off+k] == rest[k] {
				k++
			}
			c.mismatch(&MismatchError{QPN: p.qpn, Kind: p.kind.String(), Addr: pos + uint64(k), Want: p.data[off+k : off+n], Got: rest[k:n],
				What: fmt.Sprintf("byte %d of the model's %d-byte write at %#x differs", off+k, len(p.data), p.addr)})
			return nil
		}
		c.consume(p, i, off, n)
		c.counts.Bytes += uint64(n)
		pos += uint64(n)
		rest = rest[n:]
	}
	c.counts.Checked["data"]++
	return b
}

// pendingAll reports whether every byte of b at addr is the earliest
// pending model byte at its address (data would take it all).
func (c *checker) pendingAll(addr uint64, b []byte) bool {
	for pos, rest := addr, b; len(rest) > 0; {
		p, _ := c.find(pos)
		if p == nil {
			return false
		}
		off := int(pos - p.addr)
		n := min(len(rest), len(p.data)-off)
		if !bytes.Equal(p.data[off:off+n], rest[:n]) {
			return false
		}
		pos += uint64(n)
		rest = rest[n:]
	}
	return true
}

// find is the earliest pending model write holding addr, and its index
// in its page's list.
func (c *checker) find(addr uint64) (*pending, int) {
	for i, p := range c.pages[addr>>12] {
		if addr >= p.addr && addr < p.addr+uint64(len(p.data)) {
			return p, i
		}
	}
	return nil, -1
}

// consume removes [off, off+n) from p (at index i of its page's list),
// leaving what is before and after it pending.
func (c *checker) consume(p *pending, i, off, n int) {
	pg := p.addr >> 12
	l := c.pages[pg]
	var keep []*pending
	if off > 0 {
		keep = append(keep, &pending{seq: p.seq, kind: p.kind, qpn: p.qpn, addr: p.addr, data: p.data[:off]})
	}
	if off+n < len(p.data) {
		keep = append(keep, &pending{seq: p.seq, kind: p.kind, qpn: p.qpn, addr: p.addr + uint64(off+n), data: p.data[off+n:]})
	}
	l = append(l[:i], append(keep, l[i+1:]...)...)
	c.npend += len(keep) - 1
	if len(l) == 0 {
		delete(c.pages, pg)
	} else {
		c.pages[pg] = l
	}
}

func (c *checker) txsOwner(addr uint64) uint32 {
	for n, r := range c.txs {
		if addr >= r.base && addr < r.end {
			return n
		}
	}
	return 0
}

// idle is called when the RTL has been quiet for a while: whatever the
// model wrote and the RTL did not is missing. It reports the first
// missing write of each QP that has one and forgets them.
func (c *checker) idle() {
	type miss struct {
		qpn  uint32
		kind string
		addr uint64
		data []byte
		seq  uint64
		cq   uint32
		what string
	}
	var ms []miss
	wait := map[uint32]bool{}
	for qpn := range c.stats {
		if c.waitsOnHost(qpn) {
			wait[qpn] = true
		}
	}
	for _, l := range c.pages {
		for _, p := range l {
			if !wait[p.qpn] {
				ms = append(ms, miss{qpn: p.qpn, kind: p.kind.String(), addr: p.addr, data: p.data, seq: p.seq})
			}
		}
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].seq < ms[j].seq })
	for k, q := range c.cqes {
		if len(q) > 0 && !wait[k[1]] {
			ms = append(ms, miss{qpn: k[1], kind: "CQE", data: q[0][:], cq: k[0]})
		}
	}
	for obj, q := range c.eqes {
		if len(q) > 0 && !wait[obj] {
			ms = append(ms, miss{qpn: eventQP(cs.EQE(q[0][:])), kind: "EQE", data: q[0][:]})
		}
	}
	for k, n := range c.looseModel {
		if r := c.looseRTL[k]; r == 0 && n > 0 {
			qpn := k.obj
			if k.t == cs.EQETypeCQNotify {
				qpn = 0
			}
			var e [cs.EQESize]byte
			cs.EQE(e[:]).SetType(k.t)
			cs.EQE(e[:]).SetObj(k.obj)
			ms = append(ms, miss{qpn: qpn, kind: "EQE", data: e[:], what: fmt.Sprintf("the model wrote %d %v events for object %d, the RTL none, and it is idle", n, k.t, k.obj)})
			c.looseRTL[k] = n
		}
	}
	for qpn, h := range c.stats {
		if len(h.model) > 0 && (!h.seen || h.model[len(h.model)-1] != h.rtl) && !wait[qpn] {
			ms = append(ms, miss{qpn: qpn, kind: "QPSTAT", addr: c.qpstat + uint64(qpn)*cs.QPStatSize, data: h.model[len(h.model)-1][:]})
		}
	}
	for _, m := range ms {
		if c.stopped && !(m.kind == "EQE" && cs.EQE(m.data).Type() == cs.EQETypeDMAFault) {
			continue // the model's last writes before its stop, which the RTL stopped before
		}
		if c.cqDead[m.qpn] && m.kind != "EQE" {
			continue // the model's flushes and Terminate of a QP the RTL ran further (its CQ's fault)
		}
		what := fmt.Sprintf("the model wrote %d bytes the RTL has not written (the RTL is idle)", len(m.data))
		if m.what != "" {
			what = m.what
		} else if m.kind == "CQE" {
			what = fmt.Sprintf("the model completed %v of WR %#x (status %v) on CQ %d; the RTL is idle without it", cs.CQE(m.data).Opcode(), cs.CQE(m.data).WRID(), cs.CQE(m.data).Status(), m.cq)
		}
		c.mismatch(&MismatchError{QPN: m.qpn, Kind: m.kind, Addr: m.addr, Want: m.data, What: what})
	}
	c.keepPending(func(p *pending) bool { return wait[p.qpn] })
	for k := range c.cqes {
		if !wait[k[1]] {
			delete(c.cqes, k)
		}
	}
	for k := range c.eqes {
		if !wait[k] {
			delete(c.eqes, k)
		}
	}
	for qpn, h := range c.stats {
		if len(h.model) > 0 && !wait[qpn] { // reported: from now on the RTL is compared with the model's latest
			last := h.model[len(h.model)-1]
			h.model = h.model[:1]
			h.model[0] = last
			h.rtl, h.seen = last, true
		}
	}
}

// quiet reports whether nothing the model wrote waits for the RTL.
func (c *checker) quiet() bool {
	if c.npend > 0 {
		return false
	}
	for k, n := range c.looseModel {
		if c.looseRTL[k] == 0 && n > 0 {
			return false
		}
	}
	for _, q := range c.cqes {
		if len(q) > 0 {
			return false
		}
	}
	for _, q := range c.eqes {
		if len(q) > 0 {
			return false
		}
	}
	for _, h := range c.stats {
		if len(h.model) > 0 && (!h.seen || h.model[len(h.model)-1] != h.rtl) {
			return false
		}
	}
	return true
}
