package iwarp

import (
	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/iwarp/qp"
	"github.com/openiwarp/openiwarp/golden/rdmap"
)

// The verbs types, errors and receive checks are the protocol core's
// (package qp); the endpoint names them here so that its users need one
// import.

// Work requests and completions (see package qp).
type (
	WROpcode   = qp.WROpcode
	MWBind     = qp.MWBind
	SGE        = qp.SGE
	SendWR     = qp.SendWR
	RecvWR     = qp.RecvWR
	Status     = qp.Status
	WCOpcode   = qp.WCOpcode
	Completion = qp.Completion
	Error      = qp.Error
)

// Send work request opcodes.
const (
	WRSend            = qp.WRSend
	WRSendInvalidate  = qp.WRSendInvalidate
	WRWrite           = qp.WRWrite
	WRRead            = qp.WRRead
	WRLocalInvalidate = qp.WRLocalInvalidate
	WRBindMW          = qp.WRBindMW
)

// Completion statuses.
const (
	WCSuccess      = qp.WCSuccess
	WCLocLenErr    = qp.WCLocLenErr
	WCLocProtErr   = qp.WCLocProtErr
	WCFlushErr     = qp.WCFlushErr
	WCRemAccessErr = qp.WCRemAccessErr
	WCRemOpErr     = qp.WCRemOpErr
	WCRemInvReqErr = qp.WCRemInvReqErr
	WCFatalErr     = qp.WCFatalErr
	WCLocQPOpErr   = qp.WCLocQPOpErr
	WCMWBindErr    = qp.WCMWBindErr
)

// Completion opcodes.
const (
	WCSend     = qp.WCSend
	WCWrite    = qp.WCWrite
	WCRead     = qp.WCRead
	WCRecv     = qp.WCRecv
	WCLocalInv = qp.WCLocalInv
	WCBindMW   = qp.WCBindMW
)

// Sentinel errors (match with errors.Is).
var (
	ErrClosed     = qp.ErrClosed
	ErrConnLost   = qp.ErrConnLost
	ErrTerminated = qp.ErrTerminated
	ErrQueueFull  = qp.ErrQueueFull
	ErrInvalidWR  = qp.ErrInvalidWR
)

// The receive-side error matrix (digest §3.7), shared with the card's
// golden model (host/driver/cardmodel); see package qp.
type (
	Reject    = qp.Reject
	RecvState = qp.RecvState
	ReadSink  = qp.ReadSink
)

// MPATerminate is qp.MPATerminate.
func MPATerminate(err error) (rdmap.Cause, *rdmap.Terminate) { return qp.MPATerminate(err) }

// CheckHeaders is qp.CheckHeaders.
func CheckHeaders(d []byte, dv ddp.Version, rv rdmap.Version) (ddp.Segment, rdmap.Opcode, *Reject) {
	return qp.CheckHeaders(d, dv, rv)
}

// CheckWrite is qp.CheckWrite.
func CheckWrite(seg ddp.Segment, d []byte, f mem.Fault) *Reject { return qp.CheckWrite(seg, d, f) }

// CheckSend is qp.CheckSend.
func CheckSend(seg ddp.Segment, op rdmap.Opcode, d []byte, s RecvState) *Reject {
	return qp.CheckSend(seg, op, d, s)
}

// SendPlacementFailed is qp.SendPlacementFailed.
func SendPlacementFailed(op rdmap.Opcode, d []byte, id uint64, f mem.Fault) *Reject {
	return qp.SendPlacementFailed(op, d, id, f)
}

// CannotInvalidate is qp.CannotInvalidate.
func CannotInvalidate(op rdmap.Opcode, d []byte, stag mem.STag) *Reject {
	return qp.CannotInvalidate(op, d, stag)
}

// CheckReadRequest is qp.CheckReadRequest.
func CheckReadRequest(seg ddp.Segment, d []byte, want uint32, queued, ird int) (rdmap.ReadRequestFields, rdmap.ReadRequest, *Reject) {
	return qp.CheckReadRequest(seg, d, want, queued, ird)
}

// ReadSourceFault is qp.ReadSourceFault.
func ReadSourceFault(d []byte, hdr rdmap.ReadRequest, rr rdmap.ReadRequestFields, f mem.Fault) *Reject {
	return qp.ReadSourceFault(d, hdr, rr, f)
}

// CheckReadResponse is qp.CheckReadResponse.
func CheckReadResponse(seg ddp.Segment, d []byte, s ReadSink) *Reject {
	return qp.CheckReadResponse(seg, d, s)
}

// ReadResponsePlacement is qp.ReadResponsePlacement.
func ReadResponsePlacement(d []byte, f mem.Fault) *Reject { return qp.ReadResponsePlacement(d, f) }

// TerminateReceived is qp.TerminateReceived.
func TerminateReceived(seg ddp.Segment, want uint32) (rdmap.Cause, *rdmap.Terminate, string, error) {
	return qp.TerminateReceived(seg, want)
}

// ReadSourceRevoked is qp.ReadSourceRevoked.
func ReadSourceRevoked(f mem.Fault, rr rdmap.ReadRequestFields, sent uint32, ddpHdr []byte) *rdmap.Terminate {
	return qp.ReadSourceRevoked(f, rr, sent, ddpHdr)
}
