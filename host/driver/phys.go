package driver

import "context"

// Phys is the physical view of a card: what a bus gives a driver, and all
// that a backend supplies to the one driver of the openiwarp card
// (host/driver/rnic). The card's registers are those of
// host/driver/cardspec; the driver keeps its rings in memory from DMA and
// hands user buffers (memory regions) to the card with Map.
//
// Memory ordering, as on a real bus: the driver writes a ring entry, then
// rings its doorbell through Regs, and the card sees the entry. The card
// writes a record's bytes in ascending address order, each aligned 32-bit
// word as one atomic store (sync/atomic), so the driver reads a record's
// flag word (a CQE's or EQE's owner bit, a QP status record's index) with an
// atomic 32-bit load, and once it has seen it, every byte the card wrote
// before it, the record's other words and the payload it placed, is
// visible.
type Phys interface {
	// Regs is BAR0.
	Regs() Regs
	// DMA allocates memory the card reaches by DMA (rings, status records).
	DMA() DMA
	// Map makes buf reachable by the card until Unmap and says where the
	// card sees it. buf stays owned by the caller.
	Map(buf []byte) (Mapping, error)
	// Unmap revokes a Map; once it returns the card can no longer reach
	// the buffer (a DMA to it is refused as a fault).
	Unmap(m Mapping) error
	// Vectors is the number of interrupt vectors.
	Vectors() int
	// WaitInterrupt blocks until vector v fires (or fired since the last
	// call returned) or ctx ends.
	WaitInterrupt(ctx context.Context, v int) error
	// Describe is one line for humans: what runs where.
	Describe() string
	// Close releases the backend (after the driver has quiesced the card).
	Close() error
}

// Mapping is where the card sees a mapped buffer: contiguous from IOVA, or
// page by page (4 KiB pages, Pages[0] holding buf[0] at Offset) when the
// backend cannot give one contiguous range (no IOMMU, physical pages).
type Mapping struct {
	IOVA   uint64   // contiguous: the IOVA of buf[0]; paged: 0
	Pages  []uint64 // paged: page addresses, 4 KiB aligned
	Offset uint64   // paged: offset of buf[0] in Pages[0]
	Len    int      // bytes mapped
	id     any      // the backend's handle
}

// NewMapping is a Mapping carrying the backend's handle (backends only).
func NewMapping(iova uint64, pages []uint64, offset uint64, n int, handle any) Mapping {
	return Mapping{IOVA: iova, Pages: pages, Offset: offset, Len: n, id: handle}
}

// Handle is the backend's handle of m.
func (m Mapping) Handle() any { return m.id }

// Contiguous reports whether the card sees the buffer as one range.
func (m Mapping) Contiguous() bool { return m.Pages == nil }

// Checker is implemented by a Phys that checks the card against a
// reference as it runs (the sim card: the card's transaction-level model
// beside its RTL). The driver calls OnMismatch once, when it has opened
// the card, with the function the backend calls when the card did
// something the reference did not: fail ends QP qpn with err (the QP goes
// to error and its work flushes), or stops the whole card when qpn is 0.
// fail does not block; the backend may call it from the goroutine that
// runs the card.
type Checker interface {
	OnMismatch(fail func(qpn uint32, err error))
}

// Announcer is implemented by a Phys whose card runs in the driver's own
// process (the model card). The driver calls OnCompletions once, when it
// has opened the card, with the function the backend then calls each
// time the card has written completions (CQEs), on the goroutine that ran
// the card, after the records are visible and outside the backend's
// locks. A driver told this way wakes a waiter at once and needs no
// CQ_NOTIFY event (an EQE, an interrupt and the event loop's turn) to
// learn of a completion it waits for; the card's CQ arming stays for
// Arm's notifications. announce does not block.
type Announcer interface {
	OnCompletions(announce func())
}
