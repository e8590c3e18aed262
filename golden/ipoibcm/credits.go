package ipoibcm

import (
	"encoding/binary"
	"fmt"
)

// iWARP has no receiver-not-ready mechanism: a Send that finds no posted
// receive is a fatal DDP error (digest §13). So each side of a connection
// tells the other how many receives it has posted (the initial credits travel
// in the setup [Extension]) and grants more with credit updates as it reposts
// buffers. A credit update is itself a Send, so it consumes a receive too:
//
//   - data needs two credits, so the last credit is kept for an update;
//   - an update needs one credit and grants everything owed;
//   - a receiver owes a credit for every message it has consumed and
//     reposted; it sends an update once it owes a quarter of its depth and at
//     least one of those messages carried data, or once it owes depth-1
//     whatever they carried.
//
// With depth R, credits(A) + owed(B) + A's messages in flight = R at all
// times. A sender stuck below two credits means the receiver will soon owe
// R-1 and update; two sides cannot both sit at zero credits with nothing in
// flight, since the last update sent would have left its receiver a credit.
// Updates answering only updates return at least two credits for the one
// they use (R >= 3), so update ping-pong dies out once data stops.

// ControlLen is the length of a control message after its encapsulation
// header (EtherTypeCredit):
//
//	octet 0: version (1)
//	octet 1: kind: 1 = credit grant, 2 = ready
//	octets 2..3: reserved, 0 on transmit, ignored on receive
//	octets 4..7: credits granted (receives reposted since the last grant);
//	             0 for ready
//
// Ready is the responder's first message on a connection, standing in for
// the IB CM's RTU. An MPA Responder may not send before it has received an
// FPDU (RFC 5044 §7.1.2 rule 4), so the initiator opens with a zero-length
// RDMA Write, which needs no receive buffer (the idea of RFC 6581's RTR
// messages). The responder answers with ready once its receives are posted,
// and the initiator sends nothing that consumes a receive before ready has
// arrived. Neither side's first Send can then meet a receive queue that is
// not yet filled, whatever the order in which the two ends start their
// endpoints and post their receives. Ready consumes a receive like any Send,
// which the initiator owes back.
const ControlLen = 8

const controlVersion = 1

// ControlKind says what a control message does.
type ControlKind uint8

const (
	ControlGrant ControlKind = 1 // grant credits
	ControlReady ControlKind = 2 // responder's first message (RTU)
)

// MinQueueDepth is the smallest receive depth the scheme works with.
const MinQueueDepth = 3

// Control is a control message on a connection: a credit grant or ready.
type Control struct {
	Kind  ControlKind
	Grant uint32
}

// Append appends the whole message, encapsulation header included.
func (c Control) Append(dst []byte) []byte {
	dst = EncapHeader{EtherType: EtherTypeCredit}.Append(dst)
	dst = append(dst, controlVersion, byte(c.Kind), 0, 0)
	return binary.BigEndian.AppendUint32(dst, c.Grant)
}

// ParseControl reads a control message from the payload after its
// encapsulation header. Extra octets are ignored. A wrong version, an unknown
// kind, a grant of zero or a ready with a grant is an ErrCredits error.
func ParseControl(b []byte) (Control, error) {
	if len(b) < ControlLen {
		return Control{}, fmt.Errorf("control message: %d octets, need %d: %w", len(b), ControlLen, ErrShort)
	}
	if b[0] != controlVersion {
		return Control{}, fmt.Errorf("control message: version %d, want %d: %w", b[0], controlVersion, ErrCredits)
	}
	c := Control{Kind: ControlKind(b[1]), Grant: binary.BigEndian.Uint32(b[4:])}
	switch {
	case c.Kind == ControlGrant && c.Grant == 0:
		return Control{}, fmt.Errorf("control message: grant of 0: %w", ErrCredits)
	case c.Kind == ControlReady && c.Grant != 0:
		return Control{}, fmt.Errorf("control message: ready carries a grant of %d: %w", c.Grant, ErrCredits)
	case c.Kind != ControlGrant && c.Kind != ControlReady:
		return Control{}, fmt.Errorf("control message: unknown kind %d: %w", c.Kind, ErrCredits)
	}
	return c, nil
}

// FlowControl is the credit state of one connection. It is not safe for
// concurrent use.
type FlowControl struct {
	depth     int  // receives we keep posted
	peerDepth int  // receives the peer keeps posted: the most credits we can hold
	credits   int  // Sends we may still post
	owed      int  // receives consumed and reposted since our last update
	owedData  bool // one of them carried data
	threshold int
}

// NewFlowControl starts a connection on which we keep localDepth receives
// posted and the peer announced peerCredits.
func NewFlowControl(localDepth, peerCredits int) (*FlowControl, error) {
	if localDepth < MinQueueDepth || peerCredits < MinQueueDepth {
		return nil, fmt.Errorf("flow control: receive depths %d (local) and %d (peer), need at least %d: %w",
			localDepth, peerCredits, MinQueueDepth, ErrCredits)
	}
	return &FlowControl{depth: localDepth, peerDepth: peerCredits, credits: peerCredits, threshold: max(1, localDepth/4)}, nil
}

// Credits returns the Sends we may still post.
func (f *FlowControl) Credits() int { return f.credits }

// Owed returns the credits we owe the peer.
func (f *FlowControl) Owed() int { return f.owed }

// TrySendData takes a credit for a data Send if one can be spared (the last
// one is kept for an update) and reports whether it did.
func (f *FlowControl) TrySendData() bool {
	if f.credits < 2 {
		return false
	}
	f.credits--
	return true
}

// Received records that a Send from the peer consumed a receive and that the
// buffer has been posted again; data is false for a credit update. More
// messages than our depth means the peer ignored its credits: an ErrCredits
// error.
func (f *FlowControl) Received(data bool) error {
	if f.owed >= f.depth {
		return fmt.Errorf("flow control: peer sent beyond the %d receives it was granted: %w", f.depth, ErrCredits)
	}
	f.owed++
	f.owedData = f.owedData || data
	return nil
}

// TakeReady takes the credit for the responder's ready message.
func (f *FlowControl) TakeReady() (Control, error) {
	if f.credits < 1 {
		return Control{}, fmt.Errorf("flow control: no credit for ready: %w", ErrCredits)
	}
	f.credits--
	return Control{Kind: ControlReady}, nil
}

// UpdateDue reports whether [FlowControl.TakeUpdate] would return an update now.
func (f *FlowControl) UpdateDue() bool {
	return f.credits >= 1 && ((f.owedData && f.owed >= f.threshold) || f.owed >= f.depth-1)
}

// TakeUpdate returns the grant to send now, taking the credit the update
// uses, or ok=false if no update is due or none can be sent yet.
func (f *FlowControl) TakeUpdate() (u Control, ok bool) {
	if !f.UpdateDue() {
		return Control{}, false
	}
	u.Kind, u.Grant = ControlGrant, uint32(f.owed)
	f.owed, f.owedData = 0, false
	f.credits--
	return u, true
}

// Granted adds the peer's grant. Holding more credits than the peer's depth
// means the peer granted receives it does not have: an ErrCredits error.
func (f *FlowControl) Granted(u Control) error {
	if u.Kind != ControlGrant || u.Grant == 0 || int64(f.credits)+int64(u.Grant) > int64(f.peerDepth) {
		return fmt.Errorf("flow control: grant of %d on top of %d credits exceeds the peer's depth %d: %w",
			u.Grant, f.credits, f.peerDepth, ErrCredits)
	}
	f.credits += int(u.Grant)
	return nil
}
