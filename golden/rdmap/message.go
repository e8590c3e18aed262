package rdmap

import (
	"fmt"

	"github.com/openiwarp/openiwarp/golden/ddp"
)

// Message is one parsed DDP segment seen as RDMAP.
type Message struct {
	ddp.Segment
	Control Control
	// ReadRequest is the Read Request header (opcode OpReadRequest).
	ReadRequest ReadRequest
	// Terminate is the decoded Terminate (opcode OpTerminate).
	Terminate *Terminate
	// Payload is the ULP payload: the DDP payload minus any RDMAP header.
	Payload []byte
}

// Opcode returns the RDMAP opcode.
func (m *Message) Opcode() Opcode { return m.Control.Opcode() }

// InvalidateSTag returns the Invalidate STag of an untagged segment
// (meaningful for Send with Invalidate types).
func (m *Message) InvalidateSTag() uint32 {
	if m.Segment.Control.Tagged() {
		return 0
	}
	return m.Untagged().RsvdULP1()
}

// ParseError is a segment that is not a well-formed RDMAP message. Cause is
// the Terminate code a data sink reports for it.
type ParseError struct {
	Cause Cause
	Msg   string
	Err   error
}

func (e *ParseError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("rdmap: %s: %v", e.Msg, e.Err)
	}
	return "rdmap: " + e.Msg
}

func (e *ParseError) Unwrap() error { return e.Err }

// Parse decodes an untrusted ULPDU as an RDMAP message: the DDP header, the
// RDMAP control field and, by opcode, the Read Request or Terminate header.
// It checks structure only: that the opcode is defined and fits the T flag
// and QN (else Unexpected OpCode), and that the RDMAP header is complete. It
// does not check the DDP or RDMAP version (the stream's negotiated version
// decides) nor anything that needs stream state. This is the function a
// dissector calls.
func Parse(ulpdu []byte) (Message, error) {
	seg, err := ddp.Parse(ulpdu)
	if err != nil {
		c := DDPUntaggedInvalidVersion // the header is unusable; nothing better fits
		if len(ulpdu) > 0 && ddp.Control(ulpdu[0]).Tagged() {
			c = DDPTaggedInvalidVersion
		}
		return Message{}, &ParseError{Cause: c, Msg: "segment too short", Err: err}
	}
	m := Message{Segment: seg, Control: Control(seg.RsvdULP0()), Payload: seg.Payload}
	op := m.Control.Opcode()
	var qn uint32
	if !seg.Control.Tagged() {
		qn = seg.Untagged().QN()
	}
	if !op.Fits(seg.Control.Tagged(), qn) {
		return m, &ParseError{Cause: RDMAPUnexpectedOpcode,
			Msg: fmt.Sprintf("%v on a %s segment (QN %d)", op, taggedName(seg.Control.Tagged()), qn)}
	}
	switch op {
	case OpReadRequest:
		if len(seg.Payload) < ReadRequestLen {
			return m, &ParseError{Cause: RDMAPOperationUnspecified,
				Msg: fmt.Sprintf("Read Request header has %d of %d bytes", len(seg.Payload), ReadRequestLen)}
		}
		m.ReadRequest = ReadRequest(seg.Payload[:ReadRequestLen:ReadRequestLen])
		m.Payload = seg.Payload[ReadRequestLen:]
	case OpTerminate:
		t, err := ParseTerminate(seg.Payload)
		if err != nil {
			return m, &ParseError{Cause: RDMAPOperationUnspecified, Msg: "malformed Terminate", Err: err}
		}
		m.Terminate = &t
		m.Payload = nil
	}
	return m, nil
}

func taggedName(t bool) string {
	if t {
		return "tagged"
	}
	return "untagged"
}
