package ipoibcm

import (
	"encoding/binary"
	"fmt"
)

// PrivateDataLen is the length of the RFC 4755 §6 private-data block.
const PrivateDataLen = 8

// PrivateData is the block every connection-setup message and every REJ
// carries (RFC 4755 §3.2, §5.1, §6):
//
//	octet 0: reserved (0 on transmit, ignored on receive)
//	octets 1..3: sender's UD QPN (endpoint ID on iWARP)
//	octets 4..7: Receive MTU, the largest message including the 4-octet
//	             encapsulation header the sender can receive on this connection
type PrivateData struct {
	UDQPN      uint32
	ReceiveMTU uint32
}

// Append appends the 8-octet block with the reserved octet zero.
func (p PrivateData) Append(dst []byte) ([]byte, error) {
	if p.UDQPN > MaxQPN {
		return dst, fmt.Errorf("private data: UD QPN %#x: %w", p.UDQPN, ErrQPNRange)
	}
	dst = binary.BigEndian.AppendUint32(dst, p.UDQPN)
	return binary.BigEndian.AppendUint32(dst, p.ReceiveMTU), nil
}

// ParsePrivateData reads the block from the start of b. The reserved octet and
// anything after the 8 octets are ignored (the IB CM zero-pads private data to
// the message's limit; openiwarp puts its [Extension] there).
func ParsePrivateData(b []byte) (PrivateData, error) {
	if len(b) < PrivateDataLen {
		return PrivateData{}, fmt.Errorf("private data: %d octets, need %d: %w", len(b), PrivateDataLen, ErrShort)
	}
	return PrivateData{
		UDQPN:      binary.BigEndian.Uint32(b) & MaxQPN,
		ReceiveMTU: binary.BigEndian.Uint32(b[4:]),
	}, nil
}

// Extension layout, after the 8-octet RFC block (digest §13 allows data
// beyond it; an IB CM's zero padding reads as "no extension"):
//
//	octet 8: version (1)
//	octet 9: in a reject, why (an IB CM REJ reason, RejectReason*); else 0
//	octets 10..11: receive credits: receives the sender has posted for this
//	               connection before its setup message left
//	octets 12..19: Service-ID: in a request, the one the initiator targets;
//	               in a reply or reject, the one the responder listens on
const (
	ExtensionVersion = 1
	ExtensionLen     = 12
	// HelloLen is the length of a whole openiwarp setup private data.
	HelloLen = PrivateDataLen + ExtensionLen
)

// Extension is openiwarp's addition to the private data for iWARP: what
// IB gets from the CM and RNR NAK, iWARP has to carry itself.
type Extension struct {
	Credits      uint16
	ServiceID    uint64
	RejectReason uint8 // only in a reject: an MPA Reject carries no reason of its own
}

// Append appends the 12-octet extension.
func (e Extension) Append(dst []byte) []byte {
	dst = append(dst, ExtensionVersion, e.RejectReason)
	dst = binary.BigEndian.AppendUint16(dst, e.Credits)
	return binary.BigEndian.AppendUint64(dst, e.ServiceID)
}

// ParseExtension reads the extension that follows the 8-octet block in the
// whole private data pd. Missing octets, or a version other than 1 (zero
// padding included), are an ErrExtension error. The Service-ID is returned as
// received; check it with [ParseServiceID].
func ParseExtension(pd []byte) (Extension, error) {
	if len(pd) < HelloLen {
		return Extension{}, fmt.Errorf("private data: %d octets, the openiwarp extension needs %d: %w", len(pd), HelloLen, ErrExtension)
	}
	x := pd[PrivateDataLen:]
	if x[0] != ExtensionVersion {
		return Extension{}, fmt.Errorf("private data: extension version %d, want %d: %w", x[0], ExtensionVersion, ErrExtension)
	}
	return Extension{
		Credits:      binary.BigEndian.Uint16(x[2:]),
		ServiceID:    binary.BigEndian.Uint64(x[4:]),
		RejectReason: x[1],
	}, nil
}

// Hello is the whole private data openiwarp sends in a setup message: the RFC
// block followed by the extension.
type Hello struct {
	PrivateData
	Extension
}

// Append appends the 20 octets.
func (h Hello) Append(dst []byte) ([]byte, error) {
	dst, err := h.PrivateData.Append(dst)
	if err != nil {
		return dst, err
	}
	return h.Extension.Append(dst), nil
}

// ParseHello parses both parts.
func ParseHello(pd []byte) (Hello, error) {
	p, err := ParsePrivateData(pd)
	if err != nil {
		return Hello{}, err
	}
	x, err := ParseExtension(pd)
	if err != nil {
		return Hello{}, err
	}
	return Hello{p, x}, nil
}
