package rdmap

import "fmt"

// Layer is the Terminate Layer field (RFC 5040 Fig. 9): which layer found
// the error.
type Layer uint8

// Terminate layers.
const (
	LayerRDMAP Layer = 0x0
	LayerDDP   Layer = 0x1
	LayerLLP   Layer = 0x2 // MPA over TCP
)

func (l Layer) String() string {
	switch l {
	case LayerRDMAP:
		return "RDMAP"
	case LayerDDP:
		return "DDP"
	case LayerLLP:
		return "LLP"
	}
	return fmt.Sprintf("Layer 0x%X", uint8(l))
}

// ErrorType is the first octet of the Terminate Control field: the Layer
// in its high nibble and the layer's Error Type (EType) in the low one.
// The EType means something only together with its layer, so the two are
// one value here.
type ErrorType uint8

// Terminate error types (RFC 5040 Fig. 9, RFC 5041 §7.2, RFC 5044 §8).
const (
	TypeRDMAPLocalCatastrophic ErrorType = 0x00
	TypeRDMAPRemoteProtection  ErrorType = 0x01
	TypeRDMAPRemoteOperation   ErrorType = 0x02
	TypeDDPLocalCatastrophic   ErrorType = 0x10
	TypeDDPTaggedBuffer        ErrorType = 0x11
	TypeDDPUntaggedBuffer      ErrorType = 0x12
	TypeDDPReservedLLP         ErrorType = 0x13 // reserved for use by the LLP
	TypeMPA                    ErrorType = 0x20 // LLP = MPA
)

var typeNames = map[ErrorType]string{
	TypeRDMAPLocalCatastrophic: "Local Catastrophic Error",
	TypeRDMAPRemoteProtection:  "Remote Protection Error",
	TypeRDMAPRemoteOperation:   "Remote Operation Error",
	TypeDDPLocalCatastrophic:   "Local Catastrophic Error",
	TypeDDPTaggedBuffer:        "Tagged Buffer Error",
	TypeDDPUntaggedBuffer:      "Untagged Buffer Error",
	TypeDDPReservedLLP:         "Reserved for the LLP",
	TypeMPA:                    "MPA Error",
}

// Layer returns the layer nibble.
func (t ErrorType) Layer() Layer { return Layer(t >> 4) }

// EType returns the EType nibble.
func (t ErrorType) EType() uint8 { return uint8(t & 0xF) }

// Known reports whether the error type is in the tables.
func (t ErrorType) Known() bool { _, ok := typeNames[t]; return ok }

func (t ErrorType) String() string {
	if n, ok := typeNames[t]; ok {
		return t.Layer().String() + " " + n
	}
	return fmt.Sprintf("%s EType 0x%X", t.Layer(), t.EType())
}

// Cause is the 16-bit error identity a Terminate carries: Layer (4 bits),
// EType (4 bits) and Error Code (8 bits), in the order and bit positions of
// the Terminate Control field. The named values below are every row of
// RFC 5040 Fig. 9, RFC 5041 §7.2 and RFC 5044 §8 / RFC 6581.
type Cause uint16

// The Terminate code tables.
const (
	// Layer RDMAP, EType Local Catastrophic: the code is unused; we send 0xFF as siw does.
	RDMAPLocalCatastrophic Cause = 0x00FF

	// Layer RDMAP, EType Remote Protection.
	RDMAPInvalidSTag           Cause = 0x0100
	RDMAPBaseBounds            Cause = 0x0101
	RDMAPAccessRights          Cause = 0x0102
	RDMAPSTagNotAssociated     Cause = 0x0103
	RDMAPTOWrap                Cause = 0x0104
	RDMAPCannotInvalidate      Cause = 0x0109
	RDMAPProtectionUnspecified Cause = 0x01FF

	// Layer RDMAP, EType Remote Operation.
	RDMAPInvalidVersion            Cause = 0x0205
	RDMAPUnexpectedOpcode          Cause = 0x0206
	RDMAPCatastrophicStream        Cause = 0x0207
	RDMAPCatastrophicGlobal        Cause = 0x0208
	RDMAPOperationCannotInvalidate Cause = 0x0209
	RDMAPOperationUnspecified      Cause = 0x02FF

	// Layer DDP.
	DDPLocalCatastrophic      Cause = 0x1000
	DDPInvalidSTag            Cause = 0x1100
	DDPBaseBounds             Cause = 0x1101
	DDPSTagNotAssociated      Cause = 0x1102
	DDPTOWrap                 Cause = 0x1103
	DDPTaggedInvalidVersion   Cause = 0x1104
	DDPInvalidQN              Cause = 0x1201
	DDPNoBuffer               Cause = 0x1202 // Invalid MSN: no buffer available
	DDPInvalidMSNRange        Cause = 0x1203
	DDPInvalidMO              Cause = 0x1204
	DDPMessageTooLong         Cause = 0x1205
	DDPUntaggedInvalidVersion Cause = 0x1206

	// Layer LLP, EType MPA.
	MPAConnectionLost    Cause = 0x2001
	MPACRC               Cause = 0x2002
	MPAMarker            Cause = 0x2003
	MPAInvalidStartup    Cause = 0x2004
	MPALocalCatastrophic Cause = 0x2005 // RFC 6581
	MPAInsufficientIRD   Cause = 0x2006 // RFC 6581
	MPANoMatchingRTR     Cause = 0x2007 // RFC 6581
)

var causeNames = map[Cause]string{
	RDMAPLocalCatastrophic:         "Local Catastrophic Error",
	RDMAPInvalidSTag:               "Invalid STag",
	RDMAPBaseBounds:                "Base or bounds violation",
	RDMAPAccessRights:              "Access rights violation",
	RDMAPSTagNotAssociated:         "STag not associated with RDMAP Stream",
	RDMAPTOWrap:                    "TO wrap",
	RDMAPCannotInvalidate:          "STag cannot be Invalidated",
	RDMAPProtectionUnspecified:     "Unspecified Error",
	RDMAPInvalidVersion:            "Invalid RDMAP version",
	RDMAPUnexpectedOpcode:          "Unexpected OpCode",
	RDMAPCatastrophicStream:        "Catastrophic error, localized to RDMAP Stream",
	RDMAPCatastrophicGlobal:        "Catastrophic error, global",
	RDMAPOperationCannotInvalidate: "STag cannot be Invalidated",
	RDMAPOperationUnspecified:      "Unspecified Error",
	DDPLocalCatastrophic:           "Local Catastrophic Error",
	DDPInvalidSTag:                 "Invalid STag",
	DDPBaseBounds:                  "Base or bounds violation",
	DDPSTagNotAssociated:           "STag not associated with DDP Stream",
	DDPTOWrap:                      "TO wrap",
	DDPTaggedInvalidVersion:        "Invalid DDP version",
	DDPInvalidQN:                   "Invalid QN",
	DDPNoBuffer:                    "Invalid MSN - no buffer available",
	DDPInvalidMSNRange:             "Invalid MSN - MSN range is not valid",
	DDPInvalidMO:                   "Invalid MO",
	DDPMessageTooLong:              "DDP Message too long for available buffer",
	DDPUntaggedInvalidVersion:      "Invalid DDP version",
	MPAConnectionLost:              "TCP connection closed, terminated or lost",
	MPACRC:                         "MPA CRC error",
	MPAMarker:                      "MPA Marker and ULPDU Length field mismatch",
	MPAInvalidStartup:              "Invalid MPA Request or Reply frame",
	MPALocalCatastrophic:           "Local catastrophic error",
	MPAInsufficientIRD:             "Insufficient IRD resources",
	MPANoMatchingRTR:               "No matching RTR option",
}

// NewCause builds a Cause from its three fields.
func NewCause(l Layer, etype uint8, code uint8) Cause {
	return Cause(l&0xF)<<12 | Cause(etype&0xF)<<8 | Cause(code)
}

// Causes returns every named Cause in ascending order: the table generators
// (RTL, register map, documentation) iterate over it.
func Causes() []Cause {
	out := make([]Cause, 0, len(causeNames))
	for c := Cause(0); ; c++ {
		if _, ok := causeNames[c]; ok {
			out = append(out, c)
		}
		if c == 0xFFFF {
			return out
		}
	}
}

// Layer returns the Layer field.
func (c Cause) Layer() Layer { return Layer(c >> 12) }

// Type returns the Layer and EType as one value.
func (c Cause) Type() ErrorType { return ErrorType(c >> 8) }

// EType returns the EType field.
func (c Cause) EType() uint8 { return uint8(c>>8) & 0xF }

// Code returns the Error Code field.
func (c Cause) Code() uint8 { return uint8(c) }

// Known reports whether the Cause is in the tables. Any code with the RDMAP
// Local Catastrophic type is known: RFC 5040 leaves that code unused.
func (c Cause) Known() bool {
	if c.Type() == TypeRDMAPLocalCatastrophic {
		return true
	}
	_, ok := causeNames[c]
	return ok
}

// Name is the table's name for the error code, or "" if unknown.
func (c Cause) Name() string {
	if c.Type() == TypeRDMAPLocalCatastrophic {
		return causeNames[RDMAPLocalCatastrophic]
	}
	return causeNames[c]
}

// String renders "DDP Untagged Buffer Error: Invalid QN (1/2/0x01)".
func (c Cause) String() string {
	n := c.Name()
	if n == "" {
		n = "unknown code"
	}
	return fmt.Sprintf("%s: %s (%d/%d/0x%02X)", c.Type(), n, c.Layer(), c.EType(), c.Code())
}

// Headers is Fig. 10 of RFC 5040: which headers a Terminate for this cause
// should carry: the DDP segment length and header (M, D) and the RDMA
// header (R). caused is the opcode of the offending message; R applies only
// to Read Requests (and, following siw, to Send with Invalidate).
// Version and opcode errors carry no header, as siw does: the layout of the
// offending header is unknown.
func (c Cause) Headers(caused Opcode) (m, d, r bool) {
	switch c.Type() {
	case TypeRDMAPLocalCatastrophic, TypeDDPLocalCatastrophic, TypeMPA:
		return false, false, false
	}
	switch c {
	case DDPTaggedInvalidVersion, DDPUntaggedInvalidVersion, RDMAPInvalidVersion, RDMAPUnexpectedOpcode:
		return false, false, false
	}
	if c.Type() == TypeRDMAPRemoteProtection {
		info, _ := caused.Info()
		return true, true, caused == OpReadRequest || info.Invalidate
	}
	return true, true, false
}
