package verbs

import (
	"errors"

	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
)

// Work requests, completions and memory rights are those of the card
// (host/driver), which are the golden engine's; the aliases give them the
// libibverbs names.
type (
	// SGE is a scatter/gather element (ibv_sge): Length bytes at Addr of
	// the region whose lkey is LKey. MR.SGE builds one.
	SGE = iwarp.SGE
	// SendWR is a send work request (ibv_send_wr). Inline, if not nil,
	// is the payload, copied at post time (IBV_SEND_INLINE).
	SendWR = iwarp.SendWR
	// RecvWR is a receive work request (ibv_recv_wr).
	RecvWR = iwarp.RecvWR
	// WC is a work completion (ibv_wc).
	WC = iwarp.Completion
	// WCStatus is a completion status (ibv_wc_status).
	WCStatus = iwarp.Status
	// WROpcode is a send opcode (ibv_wr_opcode).
	WROpcode = iwarp.WROpcode
	// WCOpcode is what a completion reports (ibv_wc_opcode).
	WCOpcode = iwarp.WCOpcode
	// Access is a set of memory access rights (ibv_access_flags).
	Access = mem.Access
	// STag is an iWARP steering tag: an lkey and rkey in one.
	STag = mem.STag
)

// Send opcodes (IBV_WR_*).
const (
	WRSend        = iwarp.WRSend           // Send; with SendWR.Solicited, Send with Solicited Event
	WRSendWithInv = iwarp.WRSendInvalidate // Send with Invalidate of SendWR.InvalidateSTag
	WRRDMAWrite   = iwarp.WRWrite          // RDMA Write to RemoteAddr/RKey
	WRRDMARead    = iwarp.WRRead           // RDMA Read from RemoteAddr/RKey into one SGE
	// WRLocalInv invalidates one of our STags, SendWR.InvalidateSTag, in
	// send-queue order (IBV_WR_LOCAL_INV).
	WRLocalInv = iwarp.WRLocalInvalidate
	// WRBindMW binds SendWR.Bind.MW to a range of a region, in send-queue
	// order (IBV_WR_BIND_MW); the window's new rkey is Bind.MW.STag.
	WRBindMW = iwarp.WRBindMW
)

// MWBind is the window bind of a WRBindMW (ibv_mw_bind_info).
type MWBind = iwarp.MWBind

// Completion statuses (IBV_WC_*).
const (
	WCSuccess      = iwarp.WCSuccess
	WCLocLenErr    = iwarp.WCLocLenErr
	WCLocProtErr   = iwarp.WCLocProtErr
	WCWRFlushErr   = iwarp.WCFlushErr
	WCRemAccessErr = iwarp.WCRemAccessErr
	WCRemOpErr     = iwarp.WCRemOpErr
	WCRemInvReqErr = iwarp.WCRemInvReqErr
	WCFatalErr     = iwarp.WCFatalErr
	WCLocQPOpErr   = iwarp.WCLocQPOpErr // the card refused a malformed work request
	WCMWBindErr    = iwarp.WCMWBindErr
)

// Completion opcodes (IBV_WC_*).
const (
	WCSend      = iwarp.WCSend
	WCRDMAWrite = iwarp.WCWrite
	WCRDMARead  = iwarp.WCRead
	WCRecv      = iwarp.WCRecv
	WCLocalInv  = iwarp.WCLocalInv
	WCBindMW    = iwarp.WCBindMW
)

// Access rights (IBV_ACCESS_*).
const (
	AccessLocalWrite  = mem.LocalWrite
	AccessRemoteRead  = mem.RemoteRead
	AccessRemoteWrite = mem.RemoteWrite
	AccessMWBind      = mem.Bind
)

// Errors (match with errors.Is). Errors from the card and the protocol
// engine are wrapped as they are: iwarp.ErrInvalidWR (a bad lkey or
// opcode), iwarp.ErrQueueFull, iwarp.ErrCQOverflow, *iwarp.Error (the
// Terminate that ended a stream), mpa errors from the connection manager.
var (
	// ErrClosed: the object (or its device) was closed or destroyed.
	ErrClosed = errors.New("verbs: use of a closed object")
	// ErrNotConnected: the QP has no connection yet (post_send before
	// Dial or Accept, or a second connect).
	ErrNotConnected = errors.New("verbs: QP is not connected")
	// ErrQPError: the QP's stream has ended; Unwrap gives why.
	ErrQPError = errors.New("verbs: QP is in the error state")
	// ErrRejected: the peer rejected the connection; see *RejectError.
	ErrRejected = errors.New("verbs: connection rejected")
	// ErrInvalid: an argument is out of range or belongs to another object.
	ErrInvalid = errors.New("verbs: invalid argument")
	// ErrTooManyStartups: a listener closed a connection at once because
	// ListenConfig.MaxStartups connections were in their MPA startup.
	ErrTooManyStartups = errors.New("verbs: too many connections in their MPA startup")
)

// Errors of the card and the protocol engine, under the names a verbs user
// matches them by (errors.Is), so that no other package is needed.
var (
	// ErrQueueFull: a post found its send or receive queue full.
	ErrQueueFull = iwarp.ErrQueueFull
	// ErrInvalidWR: a work request the card refused (opcode, lkey, SGL).
	ErrInvalidWR = iwarp.ErrInvalidWR
	// ErrCQOverflow: a CQ lost a completion to a full queue.
	ErrCQOverflow = iwarp.ErrCQOverflow
	// ErrStreamClosed: a QP's stream ended gracefully (our close or the peer's).
	ErrStreamClosed = iwarp.ErrClosed
	// ErrConnLost: a QP's connection was lost (reset, error, timeout).
	ErrConnLost = iwarp.ErrConnLost
	// ErrTerminated: a QP's stream ended with a Terminate; errors.As with
	// *TerminateError gives its layer, type and code.
	ErrTerminated = iwarp.ErrTerminated
)

// TerminateError is the Terminate that ended a stream.
type TerminateError = iwarp.Error

// MPARevision is the MPA revision a connection speaks (ConnParam.Rev,
// ListenConfig.MaxRev).
type MPARevision = mpa.Revision

// MPA revisions.
const (
	MPARev0 = mpa.Rev0 // draft-ietf-rddp-mpa-01 (RDMA Consortium)
	MPARev1 = mpa.Rev1 // RFC 5044
	MPARev2 = mpa.Rev2 // RFC 6581 enhanced connection establishment
)

// DefaultStartupTimeout bounds an MPA startup exchange when
// ConnParam.StartupTimeout or ListenConfig.StartupTimeout is zero.
const DefaultStartupTimeout = mpa.DefaultStartupTimeout
