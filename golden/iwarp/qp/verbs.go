package qp

import "github.com/openiwarp/openiwarp/golden/iwarp/mem"

// WROpcode is the operation of a send work request.
type WROpcode uint8

// Send work request opcodes.
const (
	WRSend            WROpcode = iota // Send (Send with SE if Solicited)
	WRSendInvalidate                  // Send with Invalidate of InvalidateSTag (with SE if Solicited)
	WRWrite                           // RDMA Write to RemoteAddr/RKey
	WRRead                            // RDMA Read from RemoteAddr/RKey into the single SGE
	WRLocalInvalidate                 // invalidate InvalidateSTag (one of ours), in send-queue order
	WRBindMW                          // bind Bind.MW, in send-queue order
)

func (o WROpcode) String() string {
	return [...]string{"SEND", "SEND_WITH_INV", "RDMA_WRITE", "RDMA_READ", "LOCAL_INV", "BIND_MW"}[o]
}

// MWBind describes a memory window bind (WRBindMW): the window gets
// [Addr, Addr+Length) of MR with Access (RemoteRead, RemoteWrite); a type 2
// window is bound to this endpoint's stream. The window's new STag is in
// MW.STag once the WR completes.
type MWBind struct {
	MW     *mem.MW
	MR     *mem.MR
	Addr   uint64
	Length uint64
	Access mem.Access
}

// SGE is a scatter/gather element: Length bytes at tagged offset Addr of
// the memory region whose STag is LKey.
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   mem.STag
}

// SendWR is a send queue work request (ibv_send_wr).
type SendWR struct {
	ID     uint64
	Opcode WROpcode
	SGL    []SGE
	// Inline, if not nil, is the payload (copied at post time) in place of SGL.
	Inline    []byte
	Signaled  bool // generate a completion on success (errors always complete)
	Solicited bool // Send with Solicited Event
	Fence     bool // wait until every earlier RDMA Read has completed
	// InvalidateSTag is the peer's STag to invalidate (WRSendInvalidate),
	// or our own (WRLocalInvalidate).
	InvalidateSTag mem.STag
	// Bind is the window bind of a WRBindMW.
	Bind *MWBind
	// RemoteAddr and RKey name the peer's buffer (Write, Read).
	RemoteAddr uint64
	RKey       mem.STag
}

// RecvWR is a receive queue work request (ibv_recv_wr).
type RecvWR struct {
	ID  uint64
	SGL []SGE
}

// Status is a completion status (ibv_wc_status).
type Status uint8

// Completion statuses.
const (
	WCSuccess      Status = iota
	WCLocLenErr           // inbound Send longer than the receive buffer
	WCLocProtErr          // an SGE failed the local protection check
	WCFlushErr            // flushed: the endpoint went to error or closed
	WCRemAccessErr        // the peer reported a protection error
	WCRemOpErr            // the peer reported an operation error
	WCRemInvReqErr        // the peer reported an invalid request
	WCFatalErr            // local catastrophic error or lost connection
	WCLocQPOpErr          // a malformed work request the card refused (the openiwarp card's LOC_QP_OP_ERR)
	WCMWBindErr           // a memory-window bind refused (region, rights or range)
)

func (s Status) String() string {
	return [...]string{"success", "local length error", "local protection error", "WR flush error",
		"remote access error", "remote operation error", "remote invalid request error", "fatal error",
		"local QP operation error", "memory window bind error"}[s]
}

// WCOpcode is what completed.
type WCOpcode uint8

// Completion opcodes.
const (
	WCSend WCOpcode = iota
	WCWrite
	WCRead
	WCRecv
	WCLocalInv
	WCBindMW
)

func (o WCOpcode) String() string {
	return [...]string{"SEND", "RDMA_WRITE", "RDMA_READ", "RECV", "LOCAL_INV", "BIND_MW"}[o]
}

// Completion is a work completion (ibv_wc).
type Completion struct {
	ID      uint64
	Status  Status
	Opcode  WCOpcode
	ByteLen uint32 // bytes received (WCRecv) or transferred
	QP      uint32
	// Solicited: the Send carried the Solicited Event flag.
	Solicited bool
	// Invalidated: the Send invalidated InvalidatedSTag (remote invalidation).
	Invalidated     bool
	InvalidatedSTag mem.STag
}

// Len is the length of the message wr sends: its inline data or the sum
// of its SGL.
func (wr *SendWR) Len() uint64 {
	if wr.Inline != nil {
		return uint64(len(wr.Inline))
	}
	var n uint64
	for _, s := range wr.SGL {
		n += uint64(s.Length)
	}
	return n
}
