// Package mem is the memory-protection model of an RNIC: protection
// domains, memory regions, memory windows, the STag table, and the one
// check every inbound tagged placement and every RDMA Read source passes
// before a byte moves (RFC 5040 §8.1.1, RFC 5041 §7 and §8).
//
// The check is a pure function, Check: it takes an STag table entry as the
// hardware stores it (Entry) and the access a segment asks for (Request),
// and returns a Fault that maps to the exact Terminate cause (Fault.Cause).
// The Go engine (golden/iwarp), the RTL placement engine's cycle model and
// the host driver's model card all call it, so there is one definition of
// what is allowed.
//
// Table is an STag table with real memory behind it: Place and Read run
// Check and copy under the table's lock, so no byte is ever written outside
// a valid, rights-checked, in-bounds region of the right protection domain,
// and once Invalidate or Deregister returns no placement can touch the
// buffer again (RFC 5040 §8.1.1 #6).
package mem

import (
	"fmt"

	"github.com/openiwarp/openiwarp/golden/rdmap"
)

// STag is a steering tag: a 24-bit table index and an 8-bit key (verbs
// convention, as in siw). A stale key fails as an invalid STag.
type STag uint32

// MakeSTag joins an index and a key.
func MakeSTag(index uint32, key uint8) STag { return STag(index<<8 | uint32(key)) }

// Index returns the table index.
func (s STag) Index() uint32 { return uint32(s) >> 8 }

// Key returns the consumer key.
func (s STag) Key() uint8 { return uint8(s) }

func (s STag) String() string { return fmt.Sprintf("STag %#08x", uint32(s)) }

// Access is a set of access rights.
type Access uint8

// Access rights (verbs names).
const (
	LocalWrite  Access = 1 << iota // the local side may write (receive buffers, Read sinks)
	RemoteRead                     // a peer may read (RDMA Read source)
	RemoteWrite                    // a peer may write (RDMA Write target)
	Bind                           // memory windows may be bound on this region
)

func (a Access) String() string {
	s := ""
	for i, n := range []string{"LocalWrite", "RemoteRead", "RemoteWrite", "Bind"} {
		if a&(1<<i) != 0 {
			if s != "" {
				s += "|"
			}
			s += n
		}
	}
	if s == "" {
		return "none"
	}
	return s
}

// Kind is what an STag names.
type Kind uint8

// STag kinds.
const (
	KindMR  Kind = iota // memory region: PD-scoped, or stream-scoped if registered with a QP
	KindMW1             // type 1 window: PD-scoped, never remotely invalidated
	KindMW2             // type 2 window: bound to one stream
)

func (k Kind) String() string {
	return [...]string{"MR", "MW type 1", "MW type 2"}[k]
}

// Entry is one STag table entry: exactly what a placement engine needs.
type Entry struct {
	Valid  bool
	Key    uint8
	Kind   Kind
	PD     uint32 // protection domain
	QP     uint32 // stream association: 0 means any stream of the PD
	Base   uint64 // first valid tagged offset
	Length uint64 // bytes from Base
	Access Access
}

// Use is what a segment does with the memory an STag names.
type Use uint8

// Uses, each with the right it needs and its Terminate layer.
const (
	// UseRemoteWrite: an inbound RDMA Write places data (DDP tagged buffer errors).
	UseRemoteWrite Use = iota
	// UseReadResponse: an inbound Read Response places data in our Read
	// sink; it needs LocalWrite (the sink is named by the local Read WR).
	UseReadResponse
	// UseRemoteRead: an inbound Read Request reads the source (RDMAP remote protection errors).
	UseRemoteRead
	// UseLocalRead: a local gather (Send/Write payload, by lkey); MRs only.
	UseLocalRead
	// UseLocalWrite: a local scatter (receive buffer, by lkey); MRs only.
	UseLocalWrite
)

func (u Use) need() Access {
	switch u {
	case UseRemoteWrite:
		return RemoteWrite
	case UseRemoteRead:
		return RemoteRead
	case UseReadResponse, UseLocalWrite:
		return LocalWrite
	}
	return 0
}

// Request is one access to check.
type Request struct {
	STag STag
	PD   uint32 // the stream's protection domain
	QP   uint32 // the stream
	TO   uint64
	Len  uint64
	Use  Use
}

// Fault is the outcome of Check.
type Fault uint8

// Faults, in the order Check tests them.
const (
	OK            Fault = iota
	InvalidSTag         // unknown index, invalidated, or key mismatch
	NotAssociated       // another PD, or a stream-scoped STag of another stream
	AccessRights        // the entry lacks the right the use needs
	TOWrap              // TO + Len overflows 64 bits
	BaseBounds          // [TO, TO+Len) is not inside [Base, Base+Length)
)

func (f Fault) String() string {
	return [...]string{"ok", "invalid STag", "STag not associated with stream", "access rights violation", "TO wrap", "base or bounds violation"}[f]
}

// Error makes a Fault usable as an error.
func (f Fault) Error() string { return "mem: " + f.String() }

// Check decides whether req may touch the memory e describes. e is the
// table entry found at req.STag.Index(), or nil if there is none. A
// zero-length access is never checked (RFC 5041 §5.2, RFC 5040 §5.2.1).
func Check(e *Entry, req Request) Fault {
	if req.Len == 0 && (req.Use == UseRemoteWrite || req.Use == UseReadResponse || req.Use == UseRemoteRead) {
		return OK
	}
	if e == nil || !e.Valid || e.Key != req.STag.Key() {
		return InvalidSTag
	}
	if (req.Use == UseLocalRead || req.Use == UseLocalWrite) && e.Kind != KindMR {
		return InvalidSTag // windows are for remote access only
	}
	if e.PD != req.PD || (e.QP != 0 && e.QP != req.QP) {
		return NotAssociated
	}
	if need := req.Use.need(); e.Access&need != need {
		return AccessRights
	}
	end := req.TO + req.Len
	if end < req.TO {
		return TOWrap
	}
	if req.TO < e.Base || end > e.Base+e.Length || e.Base+e.Length < e.Base {
		return BaseBounds
	}
	return OK
}

// Cause is the Terminate cause that reports f for a given use: DDP tagged
// buffer errors for placements, RDMAP remote protection errors for a Read
// source. DDP has no access-rights code; a placement without the right is
// reported as Invalid STag, as siw does (digest §3.7). Local uses report
// Local Catastrophic: they are the ULP's mistakes, not the peer's.
func (f Fault) Cause(u Use) rdmap.Cause {
	switch u {
	case UseRemoteRead:
		return [...]rdmap.Cause{0, rdmap.RDMAPInvalidSTag, rdmap.RDMAPSTagNotAssociated, rdmap.RDMAPAccessRights, rdmap.RDMAPTOWrap, rdmap.RDMAPBaseBounds}[f]
	case UseRemoteWrite, UseReadResponse:
		return [...]rdmap.Cause{0, rdmap.DDPInvalidSTag, rdmap.DDPSTagNotAssociated, rdmap.DDPInvalidSTag, rdmap.DDPTOWrap, rdmap.DDPBaseBounds}[f]
	}
	return rdmap.RDMAPLocalCatastrophic
}
