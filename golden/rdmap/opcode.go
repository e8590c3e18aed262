package rdmap

import "fmt"

// Control is the RDMAP control field: the first RsvdULP octet of the DDP
// header (RFC 5040 §4.1, Fig. 3):
//
//	bit 7..6  5..4  3..0
//	    RV    Rsv   OpCode
type Control uint8

// Control field layout.
const (
	ControlVersion Control = 0xC0 // RV
	ControlRsvd    Control = 0x30 // zero on transmit, ignored on receive
	ControlOpcode  Control = 0x0F
)

// Version is the 2-bit RDMAP version (RV).
type Version uint8

// RDMAP versions.
const (
	VersionRDMAC Version = 0 // RDMA Consortium (MPA revision 0)
	Version1     Version = 1 // RFC 5040 (MPA revisions 1 and 2)
)

// NewControl builds a control field; the reserved bits are zero.
func NewControl(v Version, op Opcode) Control {
	return Control(v&3)<<6 | Control(op)&ControlOpcode
}

// Version returns RV.
func (c Control) Version() Version { return Version(c >> 6) }

// Opcode returns the OpCode.
func (c Control) Opcode() Opcode { return Opcode(c & ControlOpcode) }

func (c Control) String() string { return fmt.Sprintf("RV=%d %s", c.Version(), c.Opcode()) }

// Opcode is the 4-bit RDMAP OpCode (RFC 5040 Fig. 4).
type Opcode uint8

// RDMAP opcodes. 0x8 to 0xF are reserved in RFC 5040.
const (
	OpWrite             Opcode = 0x0
	OpReadRequest       Opcode = 0x1
	OpReadResponse      Opcode = 0x2
	OpSend              Opcode = 0x3
	OpSendInvalidate    Opcode = 0x4
	OpSendSE            Opcode = 0x5
	OpSendSEInvalidate  Opcode = 0x6
	OpTerminate         Opcode = 0x7
	NumOpcodes                 = 8 // opcodes defined by RFC 5040
	OpcodeReservedFirst Opcode = 0x8
	opcodeMax                  = 0xF
	queueNone                  = ^uint32(0)
)

// RDMAP queue numbers on untagged DDP queues (RFC 5040 §3.1).
const (
	QNSend        uint32 = 0 // Send family, consumes a posted receive
	QNReadRequest uint32 = 1 // Read Requests, consumes an IRD slot
	QNTerminate   uint32 = 2 // the single Terminate
	NumQueues            = 3
)

// OpInfo is one row of the opcode table (RFC 5040 Fig. 4 and 5).
type OpInfo struct {
	Name       string
	Tagged     bool   // T flag of every segment
	QN         uint32 // untagged queue (only if !Tagged)
	HeaderLen  int    // RDMAP header after the DDP header (Read Request: 28; Terminate: variable, minimum 4)
	Payload    bool   // carries ULP payload
	Invalidate bool   // carries an Invalidate STag in RsvdULP octets 1-4
	Solicited  bool   // Solicited Event
	Send       bool   // one of the four Send types
}

var opTable = [NumOpcodes]OpInfo{
	OpWrite:            {Name: "RDMA Write", Tagged: true, QN: queueNone, Payload: true},
	OpReadRequest:      {Name: "RDMA Read Request", QN: QNReadRequest, HeaderLen: ReadRequestLen},
	OpReadResponse:     {Name: "RDMA Read Response", Tagged: true, QN: queueNone, Payload: true},
	OpSend:             {Name: "Send", QN: QNSend, Payload: true, Send: true},
	OpSendInvalidate:   {Name: "Send with Invalidate", QN: QNSend, Payload: true, Invalidate: true, Send: true},
	OpSendSE:           {Name: "Send with Solicited Event", QN: QNSend, Payload: true, Solicited: true, Send: true},
	OpSendSEInvalidate: {Name: "Send with Solicited Event and Invalidate", QN: QNSend, Payload: true, Invalidate: true, Solicited: true, Send: true},
	OpTerminate:        {Name: "Terminate", QN: QNTerminate, HeaderLen: TerminateMinLen},
}

// Valid reports whether op is defined by RFC 5040.
func (op Opcode) Valid() bool { return op < NumOpcodes }

// Info returns the opcode's table row; ok is false for a reserved opcode.
func (op Opcode) Info() (info OpInfo, ok bool) {
	if !op.Valid() {
		return OpInfo{}, false
	}
	return opTable[op], true
}

// Fits reports whether a segment with this opcode may have the given T
// flag and (if untagged) QN. A reserved opcode fits nothing: the receiver
// reports either case as Unexpected OpCode (0/2/0x06).
func (op Opcode) Fits(tagged bool, qn uint32) bool {
	info, ok := op.Info()
	if !ok || info.Tagged != tagged {
		return false
	}
	return tagged || info.QN == qn
}

func (op Opcode) String() string {
	if info, ok := op.Info(); ok {
		return info.Name
	}
	return fmt.Sprintf("Reserved opcode 0x%X", uint8(op))
}
