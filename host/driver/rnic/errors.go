package rnic

import (
	"errors"
	"fmt"

	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// Sentinel errors (match with errors.Is). The errors the driver returns
// wrap one of them, or one of driver's and golden/iwarp's, with the
// register, record or object that was wrong.
var (
	// ErrNotCard: the ID register does not hold the openiwarp card's
	// vendor and device IDs (see *IdentError).
	ErrNotCard = errors.New("rnic: not an openiwarp card")
	// ErrVersion: the card's host interface has a major version this
	// driver does not know (see *IdentError).
	ErrVersion = errors.New("rnic: unknown host interface version")
	// ErrStuck: the card made no progress within the watchdog bound (see
	// *StuckError).
	ErrStuck = errors.New("rnic: card not answering")
	// ErrCorrupt: the card wrote a record that cannot be right: a CQE or
	// EQE with a field out of range or naming an object that does not
	// exist (see *RecordError).
	ErrCorrupt = errors.New("rnic: corrupted record from the card")
	// ErrDMAFault: a DMA of the card got an error response (see
	// *DMAFaultError).
	ErrDMAFault = errors.New("rnic: DMA fault")
	// ErrCardFatal: the card reported STATUS.FATAL and stopped.
	ErrCardFatal = errors.New("rnic: card stopped (STATUS.FATAL)")
	// ErrRefused: the card refused a command (see *CommandError).
	ErrRefused = errors.New("rnic: command refused by the card")
)

// CommandError is a command the card refused, as its CMD_STATUS register
// said: the write itself is posted and cannot fail on a board.
type CommandError struct {
	Reg uint32          // QP_CMD, CQ_CMD or EQ_CFG
	Obj uint32          // the QP or CQ number staged (0 for EQ_CFG)
	Val uint32          // the value written (its OP)
	Why cardspec.CmdWhy // CMD_STATUS.WHY
}

func (e *CommandError) Error() string {
	var what string
	switch e.Reg {
	case cardspec.QPCmd:
		what = fmt.Sprintf("QP_CMD %v of QP %d", cardspec.QPOp(e.Val&cardspec.QPCmdOpMask), e.Obj)
	case cardspec.CQCmd:
		what = fmt.Sprintf("CQ_CMD %v of CQ %d", cardspec.CQOp(e.Val&cardspec.CQCmdOpMask), e.Obj)
	case cardspec.EQCfg:
		what = fmt.Sprintf("EQ_CFG %#x", e.Val)
	default:
		what = fmt.Sprintf("the command at %#x", e.Reg)
	}
	return fmt.Sprintf("rnic: the card refused %s: %v", what, e.Why)
}

// Is makes errors.Is(err, ErrRefused) and errors.Is(err, driver.ErrInvalid)
// true: a refused command is a request the card found invalid.
func (e *CommandError) Is(target error) bool {
	return target == ErrRefused || target == driver.ErrInvalid
}

// IdentError is a card whose identification registers this driver refuses.
type IdentError struct {
	ID, Version uint32 // the ID and VERSION registers as read
	Kind        error  // ErrNotCard or ErrVersion
}

func (e *IdentError) Error() string {
	if e.Kind == ErrVersion {
		return fmt.Sprintf("rnic: card host interface version %d.%d, this driver needs %d.%d or a later minor version",
			e.Version>>cardspec.VersionMajorShift&cardspec.VersionMajorMask, e.Version&cardspec.VersionMinorMask,
			cardspec.InterfaceVersion>>cardspec.VersionMajorShift, cardspec.InterfaceVersion&cardspec.VersionMinorMask)
	}
	return fmt.Sprintf("rnic: ID register %#08x is vendor %#04x device %#04x, not the openiwarp card (%#04x:%#04x)",
		e.ID, e.ID&cardspec.IDVendorMask, e.ID>>cardspec.IDDeviceShift, cardspec.VendorID, cardspec.DeviceID)
}

// Is makes errors.Is match the Kind.
func (e *IdentError) Is(target error) bool { return target == e.Kind }

// StuckError is a watchdog that fired: What the driver waited for, and
// how long.
type StuckError struct {
	What  string // "STATUS.INIT_DONE after RESET", "SQ_CI of QP 3 (posted up to 12)"
	After string // the bound, for humans
}

func (e *StuckError) Error() string {
	return fmt.Sprintf("rnic: card not answering: no progress on %s within %s", e.What, e.After)
}

// Is makes errors.Is(err, ErrStuck) true.
func (e *StuckError) Is(target error) bool { return target == ErrStuck }

// RecordError is a record from the card that the driver refused.
type RecordError struct {
	Record string // "CQE", "EQE"
	Index  uint32 // its consumer index
	Obj    uint32 // the CQ (of a CQE) or 0
	Msg    string // what was wrong
}

func (e *RecordError) Error() string {
	where := ""
	if e.Record == "CQE" {
		where = fmt.Sprintf(" of CQ %d", e.Obj)
	}
	return fmt.Sprintf("rnic: corrupted %s %d%s: %s", e.Record, e.Index, where, e.Msg)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *RecordError) Is(target error) bool { return target == ErrCorrupt }

// DMAFaultError is a DMA of the card that got an error response, from the
// DMA_FAULT_* registers.
type DMAFaultError struct {
	Addr  uint64 // DMA_FAULT_ADDR
	QPN   uint32 // the QP it served, 0 for the card's own queues (or unknown: Low32)
	Resp  uint8  // AXI response (2 SLVERR, 3 DECERR; 0 unknown: Low32)
	Write bool
	Count uint8 // faults seen (saturating)
	// Low32: only Addr's bits 31:0 (an event's INFO) and the direction
	// are known; DMA_FAULT_* held a later fault when the event was read.
	Low32 bool
}

func (e *DMAFaultError) Error() string {
	dir := "read"
	if e.Write {
		dir = "write"
	}
	if e.Low32 {
		return fmt.Sprintf("rnic: DMA fault: %s of an address whose bits 31:0 are %#08x got an error response (DMA_FAULT_* held a later fault)", dir, uint32(e.Addr))
	}
	who := "the card's own queues"
	if e.QPN != 0 {
		who = fmt.Sprintf("QP %d", e.QPN)
	}
	return fmt.Sprintf("rnic: DMA fault: %s of %#x for %s got response %d (%d faults so far)", dir, e.Addr, who, e.Resp, e.Count)
}

// Is makes errors.Is(err, ErrDMAFault) true.
func (e *DMAFaultError) Is(target error) bool { return target == ErrDMAFault }

// CQError is a CQ the card put in error (its CQ_ERROR event): the write
// of one of its CQEs faulted, so that slot never holds a completion and
// the card writes none to the CQ again. Polling returns the completions
// before the lost slot, then this error; every QP on the CQ is in error
// too. errors.Is(err, ErrDMAFault) holds.
type CQError struct {
	CQN   uint32
	Fault *DMAFaultError // the CQE's write
}

func (e *CQError) Error() string {
	return fmt.Sprintf("rnic: CQ %d is in error (destroy it), a CQE was not written: %v", e.CQN, e.Fault)
}

func (e *CQError) Unwrap() error { return e.Fault }
