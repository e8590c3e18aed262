package ipoibcm

import "fmt"

// SIDMode selects which prefix a Service-ID carries in its top octet.
//
// RFC 4755 §3.5 draws the prefix as the octet 00000001 (the literal reading),
// while Linux/OFED, FreeBSD and Windows OpenFabrics all use 0x10 in the top
// octet (IPOIB_CM_IETF_ID = 0x1000000000000000). A node emits one and accepts
// either.
type SIDMode uint8

const (
	// SIDOFED uses the prefix deployed stacks use: 0x10 in the top octet.
	SIDOFED SIDMode = iota
	// SIDLiteral uses the RFC figure as printed: 0x01 in the top octet.
	SIDLiteral
)

// The two prefixes, already shifted into the top octet.
const (
	SIDPrefixOFED    uint64 = 0x10 << 56
	SIDPrefixLiteral uint64 = 0x01 << 56
)

// Service-ID layout below the prefix octet: Type (8 bits, MUST be 0),
// Reserved (24 bits, MUST be 0), QPN (24 bits).
const (
	sidTypeShift    = 48
	sidTypeMask     = uint64(0xFF) << sidTypeShift
	sidReservedMask = uint64(0xFFFFFF) << 24
	sidQPNMask      = uint64(MaxQPN)
	sidPrefixMask   = uint64(0xFF) << 56
)

func (m SIDMode) String() string {
	switch m {
	case SIDOFED:
		return "ofed"
	case SIDLiteral:
		return "literal-rfc"
	}
	return fmt.Sprintf("SIDMode(%d)", uint8(m))
}

func (m SIDMode) prefix() (uint64, error) {
	switch m {
	case SIDOFED:
		return SIDPrefixOFED, nil
	case SIDLiteral:
		return SIDPrefixLiteral, nil
	}
	return 0, fmt.Errorf("service ID: unknown mode %d: %w", uint8(m), ErrServiceID)
}

// ServiceID returns the Service-ID a node with UD QPN qpn listens on, and
// that a peer names in its REQ (§3.5): prefix, Type 0, Reserved 0, QPN.
func ServiceID(qpn uint32, mode SIDMode) (uint64, error) {
	if qpn > MaxQPN {
		return 0, fmt.Errorf("service ID: QPN %#x: %w", qpn, ErrQPNRange)
	}
	p, err := mode.prefix()
	if err != nil {
		return 0, err
	}
	return p | uint64(qpn), nil
}

// ParseServiceID checks that sid is an IPoIB Service-ID in either mode and
// returns its QPN and mode. A non-zero Type or Reserved field, or any other
// prefix, is an ErrServiceID error.
func ParseServiceID(sid uint64) (qpn uint32, mode SIDMode, err error) {
	switch sid & sidPrefixMask {
	case SIDPrefixOFED:
		mode = SIDOFED
	case SIDPrefixLiteral:
		mode = SIDLiteral
	default:
		return 0, 0, fmt.Errorf("service ID %#016x: prefix %#02x is neither 0x10 (OFED) nor 0x01 (RFC): %w",
			sid, sid>>56, ErrServiceID)
	}
	if t := (sid & sidTypeMask) >> sidTypeShift; t != 0 {
		return 0, 0, fmt.Errorf("service ID %#016x: Type %d, MUST be 0: %w", sid, t, ErrServiceID)
	}
	if sid&sidReservedMask != 0 {
		return 0, 0, fmt.Errorf("service ID %#016x: Reserved field not zero: %w", sid, ErrServiceID)
	}
	return uint32(sid & sidQPNMask), mode, nil
}
