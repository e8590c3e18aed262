package ipoibcm

import (
	"encoding/binary"
	"fmt"
)

// HeaderLen is the length of the encapsulation header (RFC 4391 §6, RFC 4755 §4).
const HeaderLen = 4

// EtherTypes this link carries.
const (
	EtherTypeIPv4 uint16 = 0x0800
	EtherTypeARP  uint16 = 0x0806 // only on the datagram channel (RFC 4755 §7)
	EtherTypeIPv6 uint16 = 0x86DD
	// EtherTypeCredit frames openiwarp's credit updates on a connection. It is
	// IEEE 802's Local Experimental EtherType 1, so the RFC 4391 reserved bits
	// stay zero and no IANA number is taken (digest §13).
	EtherTypeCredit uint16 = 0x88B5
)

// EncapHeader is the 4-octet header in front of every packet:
//
//	octets 0..1: Type, the EtherType of the payload
//	octets 2..3: Reserved, MUST be 0
type EncapHeader struct {
	EtherType uint16
}

// Append appends the header with Reserved zero.
func (h EncapHeader) Append(dst []byte) []byte {
	return append(binary.BigEndian.AppendUint16(dst, h.EtherType), 0, 0)
}

// Put writes the header into b[0:4]; b must hold at least HeaderLen octets.
func (h EncapHeader) Put(b []byte) {
	binary.BigEndian.PutUint16(b, h.EtherType)
	b[2], b[3] = 0, 0
}

// ParseEncap reads the header at the start of b and returns it with the
// payload that follows. With strict set a non-zero Reserved field is an
// ErrReserved error; otherwise it is ignored. The EtherType is returned as
// received: [CheckEtherType] says whether a channel may carry it.
func ParseEncap(b []byte, strict bool) (EncapHeader, []byte, error) {
	if len(b) < HeaderLen {
		return EncapHeader{}, nil, fmt.Errorf("encapsulation header: %d octets, need %d: %w", len(b), HeaderLen, ErrShort)
	}
	h := EncapHeader{EtherType: binary.BigEndian.Uint16(b)}
	if r := binary.BigEndian.Uint16(b[2:]); strict && r != 0 {
		return h, nil, fmt.Errorf("encapsulation header: Reserved %#04x, MUST be 0: %w", r, ErrReserved)
	}
	return h, b[HeaderLen:], nil
}

// Channel names where a packet travels: a connection, or the datagram
// channel that stands in for the UD QP.
type Channel uint8

const (
	ChannelConnected Channel = iota // RC connection (an iWARP QP)
	ChannelDatagram                 // UD QP (the underlay side channel)
)

// CheckEtherType reports whether a packet of EtherType t may travel on ch:
// IPv4 and IPv6 on both (§7: unicast IP is accepted on every mode), ARP only on
// the datagram channel (§7: address-resolution answers always go over UD), and
// credit updates only on a connection.
func CheckEtherType(t uint16, ch Channel) error {
	switch t {
	case EtherTypeIPv4, EtherTypeIPv6:
		return nil
	case EtherTypeARP:
		if ch == ChannelDatagram {
			return nil
		}
	case EtherTypeCredit:
		if ch == ChannelConnected {
			return nil
		}
	}
	where := "connection"
	if ch == ChannelDatagram {
		where = "datagram channel"
	}
	return fmt.Errorf("EtherType %#04x not carried on the %s: %w", t, where, ErrEtherType)
}
