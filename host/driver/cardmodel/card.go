// Package cardmodel is the openiwarp card's transaction-level golden
// model: the card of docs/card.md in Go, deterministic, single-threaded
// and sans-I/O. A driver writes and reads its BAR0 with Write32 and Read32;
// the card reaches host memory only through the Host it is given (DMA
// reads and writes) and raises interrupts through it; Step does one unit
// of work and Run works until the card is idle. There are no goroutines,
// no locks and no clocks inside.
//
// The protocol is built from the RFCs' golden models, never from the RTL:
// golden/mpa frames and deframes the stream rings (markers, CRC),
// golden/ddp and golden/rdmap build and parse the headers, mem.Check
// decides every STag access, and golden/iwarp's pure receive checks
// (CheckHeaders, CheckSend, ...) pick the Terminate of every row of the
// receive-side error matrix, so the model answers a hostile peer exactly
// as the reference endpoint does.
//
// Every effect of the card on the host is a DMA write, in a documented
// sequence (docs/card-model.md): one write per CQE, per EQE, per QP status
// record update, per placed piece of a DDP segment and per transmit stream
// chunk, none crossing a 4 KiB boundary. Config.Observe sees each of them
// before it reaches the Host: the co-simulation of the RTL card compares
// these transactions one by one.
package cardmodel

import (
	"errors"
	"fmt"

	"github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// Host is the card's view of the host: DMA to and from host memory, and
// interrupt delivery. An error from ReadMem or WriteMem is an error
// response on the bus (an IOMMU or the root complex refused the access):
// the card reports it as a DMA fault.
type Host interface {
	ReadMem(addr uint64, p []byte) error
	WriteMem(addr uint64, p []byte) error
	Interrupt(vector int)
}

// Viewer is implemented by a Host whose memory the card may read in
// place (a host simulated in the same process): ViewMem returns host
// memory [addr, addr+n) itself, or an error where ReadMem would refuse
// some of it. The card then takes a received FPDU from the receive ring
// without copying it out first; the reads it stands for, and everything
// the card does with them, are the same. The card reads the bytes only
// until its step ends and never writes them.
type Viewer interface {
	ViewMem(addr uint64, n int) ([]byte, error)
}

// Config configures a card model.
type Config struct {
	// Width is the data path width in bits the card reports in
	// CAPS_DATAPATH (64, 128, 256 or 512; 0 means 64). The model's
	// behaviour does not depend on it.
	Width int
	// Host is required.
	Host Host
	// Observe, if not nil, sees every DMA write before the Host does.
	// w.Data is valid only during the call.
	Observe func(w DMAWrite)
}

// WriteKind is what a DMA write of the card carries.
type WriteKind uint8

// DMA write kinds.
const (
	WriteCQE     WriteKind = iota + 1 // one completion (32 bytes)
	WriteEQE                          // one event (16 bytes)
	WriteStatus                       // one QP status record (32 bytes)
	WritePayload                      // a placed piece of a DDP segment (RDMA Write, Read Response, Send)
	WriteStream                       // a chunk of transmit stream octets
)

func (k WriteKind) String() string {
	switch k {
	case WriteCQE:
		return "CQE"
	case WriteEQE:
		return "EQE"
	case WriteStatus:
		return "QPSTAT"
	case WritePayload:
		return "payload"
	case WriteStream:
		return "stream"
	}
	return fmt.Sprintf("WriteKind(%d)", uint8(k))
}

// DMAWrite is one DMA write of the card: what the co-simulation compares.
type DMAWrite struct {
	Kind WriteKind
	QPN  uint32 // the QP it serves (for a CQE: the completion's QP; 0 for card-wide events)
	Addr uint64
	Data []byte
}

// Errors of BAR0 accesses, matched with errors.Is on a *RegError.
var (
	ErrMisaligned = errors.New("cardmodel: BAR0 access not 32-bit aligned")
	ErrOutOfRange = errors.New("cardmodel: BAR0 offset outside the register map")
	ErrReadOnly   = errors.New("cardmodel: register is read only")
	// ErrRefused: a command the card does not carry out (a bad context,
	// an object in the wrong state). On the bus the write is answered
	// OKAY; CMD_STATUS holds the verdict (RegError.Code).
	ErrRefused = errors.New("cardmodel: command refused")
)

// RegError is a BAR0 access the card refused.
type RegError struct {
	Off   uint32
	Write bool
	Err   error           // one of the Err* sentinels
	Why   string          // detail, for ErrRefused
	Code  cardspec.CmdWhy // CMD_STATUS.WHY, for ErrRefused
}

func (e *RegError) Error() string {
	op := "read"
	if e.Write {
		op = "write"
	}
	if e.Why != "" {
		return fmt.Sprintf("%v (%s of %#x: %s)", e.Err, op, e.Off, e.Why)
	}
	return fmt.Sprintf("%v (%s of %#x)", e.Err, op, e.Off)
}

func (e *RegError) Unwrap() error { return e.Err }

func refuse(off uint32, code cardspec.CmdWhy, format string, args ...any) error {
	return &RegError{Off: off, Write: true, Err: ErrRefused, Code: code, Why: fmt.Sprintf(format, args...)}
}

// Card is one card model. It is not safe for concurrent use: the caller
// serialises Write32, Read32 and Step (a real card's bus does).
type Card struct {
	cfg  Config
	host Host
	view Viewer // host, if it can be read in place

	scratch uint32
	enable  bool

	faultAddr uint64
	faultInfo uint32

	cmdSeq uint16          // CMD_STATUS.SEQ: commands decided
	cmdWhy cardspec.CmdWhy // CMD_STATUS.WHY of the last one

	irqMod     uint32
	qpstatBase uint64
	queues     // CQs, the EQ, the interrupt and the fatal state

	qpStage qpContext
	qps     [cardspec.MaxQP]*qp
	push    push
	live    []uint32 // created QP numbers, in creation order
	ready   []*qp    // QPs that may have work, in Step's round-robin order

	tab stagTable

	buf     []byte                    // scratch for DMA reads
	statRec [cardspec.QPStatSize]byte // scratch: the QP status record being written
}

// New returns a card fresh from reset (CTRL.ENABLE clear).
func New(cfg Config) (*Card, error) {
	switch cfg.Width {
	case 0:
		cfg.Width = 64
	case 64, 128, 256, 512:
	default:
		return nil, fmt.Errorf("cardmodel: data path width %d bits (want 64, 128, 256 or 512)", cfg.Width)
	}
	if cfg.Host == nil {
		return nil, errors.New("cardmodel: Config.Host is nil")
	}
	c := &Card{cfg: cfg, host: cfg.Host}
	c.view, _ = cfg.Host.(Viewer)
	c.reset()
	return c, nil
}

func (c *Card) reset() {
	cfg, host, view, buf := c.cfg, c.host, c.view, c.buf
	*c = Card{cfg: cfg, host: host, view: view, buf: buf}
	c.queues.write = c.dmaWrite
	c.tab.reset()
}

// EventsLost is the number of events the card dropped because the EQ was
// disabled or full.
func (c *Card) EventsLost() uint64 { return c.eqLost }

// Fatal reports whether a DMA fault on the EQ or a status record stopped
// the card (STATUS.FATAL).
func (c *Card) Fatal() bool { return c.fatal }

// Step does one unit of work (delivers a pending interrupt, or moves one
// QP forward by one FPDU, one WQE step, one flushed completion or one
// status record) and reports whether there was any.
func (c *Card) Step() bool {
	if c.irqPending {
		c.irqPending = false
		c.host.Interrupt(c.eq.vector)
		return true
	}
	if !c.enable || c.fatal {
		return false
	}
	// The ready queue holds the QPs that may have work, in round-robin
	// order: a QP leaves it when its step finds nothing to do, and comes
	// back when a doorbell, a command or an error gives it some (wake).
	for len(c.ready) > 0 {
		q := c.ready[0]
		c.ready = popFront(c.ready)
		if c.qps[q.n] != q { // destroyed meanwhile
			continue
		}
		if q.step() {
			c.ready = append(c.ready, q)
			return true
		}
		q.queued = false
	}
	return false
}

// wake puts q on the ready queue.
func (c *Card) wake(q *qp) {
	if !q.queued {
		q.queued = true
		c.ready = append(c.ready, q)
	}
}

// Run steps until the card is idle and returns the number of steps.
func (c *Card) Run() int {
	n := 0
	for c.Step() {
		n++
	}
	return n
}

// dmaRead reads host memory; an error is a DMA fault of qpn. A host
// read in place (Viewer) is looked up once for the whole read rather
// than page by page; where it refuses, the reads page by page find the
// faulting page.
func (c *Card) dmaRead(qpn uint32, addr uint64, p []byte) error {
	if c.view != nil && len(p) > 0 {
		if b, err := c.view.ViewMem(addr, len(p)); err == nil {
			copy(p, b)
			return nil
		}
	}
	for len(p) > 0 {
		k := min(len(p), int(pageSize-addr%pageSize))
		if err := c.host.ReadMem(addr, p[:k]); err != nil {
			c.dmaFault(qpn, addr, false)
			return &dmaError{addr: addr, err: err}
		}
		addr += uint64(k)
		p = p[k:]
	}
	return nil
}

// dmaWrite writes host memory, one Host write per piece that stays inside
// a 4 KiB page.
func (c *Card) dmaWrite(kind WriteKind, qpn uint32, addr uint64, p []byte) error {
	for len(p) > 0 {
		k := min(len(p), int(pageSize-addr%pageSize))
		if c.cfg.Observe != nil {
			c.cfg.Observe(DMAWrite{Kind: kind, QPN: qpn, Addr: addr, Data: p[:k]})
		}
		if err := c.host.WriteMem(addr, p[:k]); err != nil {
			c.dmaFault(qpn, addr, true)
			return &dmaError{addr: addr, err: err}
		}
		addr += uint64(k)
		p = p[k:]
	}
	return nil
}

const pageSize = 4096

type dmaError struct {
	addr uint64
	err  error
}

func (e *dmaError) Error() string { return fmt.Sprintf("DMA at %#x: %v", e.addr, e.err) }

// dmaFault records a faulted DMA in the DMA_FAULT_* registers.
func (c *Card) dmaFault(qpn uint32, addr uint64, write bool) {
	c.faultAddr = addr
	count := c.faultInfo >> cardspec.DMAFaultInfoCountShift & cardspec.DMAFaultInfoCountMask
	if count < cardspec.DMAFaultInfoCountMask {
		count++
	}
	info := qpn&cardspec.DMAFaultInfoQPNMask | 2<<cardspec.DMAFaultInfoRespShift | count<<cardspec.DMAFaultInfoCountShift
	if write {
		info |= 1 << cardspec.DMAFaultInfoWriteShift
	}
	c.faultInfo = info
}

// popFront drops s[0] (cleared, so that nothing stays referenced). A
// queue that empties keeps its backing array from the start, so that a
// queue taking one entry at a time, as most do, never grows a new one.
func popFront[T any](s []T) []T {
	var zero T
	s[0] = zero
	if len(s) == 1 {
		return s[:0]
	}
	return s[1:]
}

func (c *Card) scratchBuf(n int) []byte {
	if cap(c.buf) < n {
		c.buf = make([]byte, n)
	}
	return c.buf[:n]
}
