package driver

import (
	"context"
	"errors"
	"net"

	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
)

// Sentinel errors (match with errors.Is).
var (
	// ErrUnknownCard: no backend is registered under the name given to Open.
	ErrUnknownCard = errors.New("driver: unknown card")
	// ErrClosed: the card or object was closed.
	ErrClosed = errors.New("driver: closed")
	// ErrInvalid: an argument is out of range or names a foreign object.
	ErrInvalid = errors.New("driver: invalid argument")
)

// Card is one RNIC. Every method is safe for concurrent use. After Close
// every method returns an error wrapping ErrClosed (Regs and DMA may then
// fail their accesses the same way).
type Card interface {
	// Info describes the card.
	Info() Info

	// Regs is the card's MMIO register space (BAR0 on a board).
	Regs() Regs
	// DMA allocates memory the card can reach by DMA.
	DMA() DMA
	// Events delivers asynchronous events (a QP whose stream ended). The channel is buffered; events that find it full are
	// counted in Info().DroppedEvents rather than blocking the card.
	Events() <-chan Event

	// AllocPD creates a protection domain in the card's STag table.
	AllocPD() (*mem.PD, error)
	// RegisterMR registers buf in pd's table with tagged offset addr for
	// buf[0] (VA-based regions pass the buffer's address). qp, if not 0,
	// scopes the STag to that stream. The MR's STag is both lkey and rkey.
	RegisterMR(pd *mem.PD, buf []byte, addr uint64, access mem.Access, qp uint32) (*mem.MR, error)
	// DeregisterMR removes the region: once it returns, no placement can
	// touch buf again.
	DeregisterMR(mr *mem.MR) error

	// CreateCQ creates a completion queue of depth entries.
	CreateCQ(depth int) (CQ, error)
	// Attach creates a queue pair on the connection conn, on which the MPA
	// startup exchange p has just completed: the QP's stream port is
	// bridged to conn and the card owns conn from then on (it closes it).
	Attach(conn net.Conn, p mpa.Params, cfg QPConfig) (QP, error)

	// Close releases the card. QPs still attached are closed (their work
	// flushes) first.
	Close() error
}

// Info describes a card.
type Info struct {
	Name   string // the registry name it was opened with ("model", "sim", "vfio:...")
	Kind   string // the backend ("model", "sim", "vfio")
	Detail string // one line for humans: what runs where
	// MaxMR and MaxQP bound the objects the card can hold (0: no limit).
	MaxMR, MaxQP int
	// MaxCQE is the deepest CQ; MaxQPWR the deepest send or receive queue.
	MaxCQE, MaxQPWR int
	// MaxSGE is the most scatter/gather elements per work request.
	MaxSGE int
	// MaxInline is the most bytes of inline data per Send or Write.
	MaxInline int
	// MaxORD and MaxIRD bound the Read limits a QP may ask for.
	MaxORD, MaxIRD int
	// DroppedEvents counts events lost to a full Events channel.
	DroppedEvents uint64
	// CheckedCycles counts the RTL cycles the card ran with its DMA writes
	// checked against the card model (the sim card; 0 elsewhere).
	CheckedCycles uint64
	// CheckedWrites counts the card's DMA writes found equal to those of
	// the card's transaction-level model running beside it (the sim card;
	// 0 elsewhere).
	CheckedWrites uint64
}

// Regs is 32- and 64-bit MMIO access to the card's register space. The
// offsets are those of the register map (host/driver/regs); an access
// outside the space or misaligned returns an error wrapping ErrInvalid.
type Regs interface {
	Read32(off uint32) (uint32, error)
	Write32(off uint32, v uint32) error
	Read64(off uint32) (uint64, error)
	Write64(off uint32, v uint64) error
}

// DMA hands out memory the card can reach.
type DMA interface {
	// Alloc returns n bytes of DMA-able memory and the IOVA the card uses
	// for its first byte.
	Alloc(n int) (*Buffer, error)
	// Free returns a buffer; the card must no longer use its IOVA.
	Free(b *Buffer) error
}

// Buffer is DMA memory: Bytes as the host sees it, IOVA as the card does.
type Buffer struct {
	Bytes []byte
	IOVA  uint64
}

// QPConfig is what a queue pair is created with (ibv_qp_init_attr plus
// the Read limits of rdma_conn_param).
type QPConfig struct {
	PD             *mem.PD
	SendCQ, RecvCQ CQ
	SQDepth        int // 0: 256
	RQDepth        int // 0: 256
	ORD, IRD       int // outstanding Reads out and in (0: 16)
	MULPDU         int // largest DDP segment (0: from the TCP MSS)
	// Recv are receives posted before the QP was connected; the card queues
	// them before it reads the stream, so the peer's first Send finds them.
	Recv []iwarp.RecvWR
}

// QP is a queue pair attached to a stream (an RC QP in RTS).
type QP interface {
	// QPN is the QP number: the stream a stream-scoped STag is bound to.
	QPN() uint32
	// MULPDU is the largest DDP segment the QP sends.
	MULPDU() int
	// PostSend queues send work requests (ibv_post_send).
	PostSend(wrs ...iwarp.SendWR) error
	// PostRecv queues receive work requests (ibv_post_recv).
	PostRecv(wrs ...iwarp.RecvWR) error
	// Close ends the stream gracefully, flushes what is left, and returns
	// once the card has let go of the connection.
	Close() error
	// Done is closed when the stream has ended (either way).
	Done() <-chan struct{}
	// Err is why the stream ended: nil while it runs, iwarp.ErrClosed
	// after a graceful close, iwarp.ErrConnLost, or an *iwarp.Error
	// carrying the Terminate cause.
	Err() error
}

// CQ is a completion queue.
type CQ interface {
	// Poll moves up to len(wc) completions into wc (ibv_poll_cq).
	Poll(wc []iwarp.Completion) int
	// Wait returns the next completion, blocking until one arrives or ctx
	// ends; it fails with iwarp.ErrCQOverflow once the queue has lost one.
	Wait(ctx context.Context) (iwarp.Completion, error)
	// Arm asks for one notification on Notify for the next completion, or
	// for the next solicited or error one (ibv_req_notify_cq).
	Arm(solicitedOnly bool)
	// Notify delivers one value per armed notification (the completion
	// channel of libibverbs).
	Notify() <-chan struct{}
	// Overflowed reports whether a completion was lost to a full queue.
	Overflowed() bool
	// Depth is the number of entries.
	Depth() int
}

// EventType is the kind of an asynchronous event (ibv_event_type).
type EventType uint8

// Asynchronous events.
const (
	EventQPFatal  EventType = iota + 1 // a QP's stream ended abortively (Terminate sent or received, TCP lost)
	EventQPClosed                      // a QP's stream ended gracefully (our close or the peer's)
)

func (t EventType) String() string {
	switch t {
	case EventQPFatal:
		return "QP fatal"
	case EventQPClosed:
		return "QP closed"
	}
	return "unknown event"
}

// Event is one asynchronous event.
type Event struct {
	Type EventType
	QPN  uint32 // EventQP*
	Err  error  // why (EventQPFatal)
}

// Regs32 is the 32-bit half of Regs.
type Regs32 interface {
	Read32(off uint32) (uint32, error)
	Write32(off uint32, v uint32) error
}

// Split64 makes Regs of a Regs32: a 64-bit access is two 32-bit ones,
// the low word first.
type Split64 struct{ Regs32 }

// Read64 reads the low word, then the high word.
func (s Split64) Read64(off uint32) (uint64, error) {
	lo, err := s.Read32(off)
	if err != nil {
		return 0, err
	}
	hi, err := s.Read32(off + 4)
	return uint64(hi)<<32 | uint64(lo), err
}

// Write64 writes the low word, then the high word.
func (s Split64) Write64(off uint32, v uint64) error {
	if err := s.Write32(off, uint32(v)); err != nil {
		return err
	}
	return s.Write32(off+4, uint32(v>>32))
}
