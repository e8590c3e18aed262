package ipoibcm

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"net/netip"
)

// LinkAddrLen is the length of an IPoIB link-layer address (RFC 4391 §9.1.1,
// RFC 4755 §3.1); ARP's hlen stays 20 in connected mode.
const LinkAddrLen = 20

// Connected-mode flags, octet 0 of the link-layer address (RFC 4755 §3.1).
// IETF bit 0 is the most significant bit.
const (
	FlagRC            = 0x80 // bit 0: accepts Reliable Connected IPoIB-CM
	FlagUC            = 0x40 // bit 1: accepts Unreliable Connected IPoIB-CM
	FlagsReservedMask = 0x3F // bits 2-7: 0 on transmit, ignored on receive
)

// MaxQPN is the largest 24-bit queue-pair number (or, on iWARP, endpoint ID).
const MaxQPN = 1<<24 - 1

// LinkAddr is the 20-octet link-layer address <Flags>:<QPN>:<GID>.
//
//	octet 0: flags, 1..3: UD QPN (big-endian), 4..19: port GID
//
// On iWARP the QPN is the node's datagram endpoint ID and the GID its underlay
// IP address (IPv4 mapped as ::ffff:a.b.c.d).
type LinkAddr [LinkAddrLen]byte

// NewLinkAddr builds an address to transmit. Reserved flag bits are cleared
// (§3.1: 0 on transmit); a QPN beyond 24 bits is an ErrQPNRange error.
func NewLinkAddr(flags uint8, qpn uint32, gid [16]byte) (LinkAddr, error) {
	var a LinkAddr
	if qpn > MaxQPN {
		return a, fmt.Errorf("link-layer address: QPN %#x: %w", qpn, ErrQPNRange)
	}
	a[0] = flags &^ FlagsReservedMask
	a[1], a[2], a[3] = byte(qpn>>16), byte(qpn>>8), byte(qpn)
	copy(a[4:], gid[:])
	return a, nil
}

// NewUnderlayLinkAddr builds the iWARP form of the address: flags, endpoint ID
// and the underlay IP address in place of the GID.
func NewUnderlayLinkAddr(flags uint8, endpointID uint32, underlay netip.Addr) (LinkAddr, error) {
	if !underlay.IsValid() {
		return LinkAddr{}, fmt.Errorf("link-layer address: invalid underlay address")
	}
	return NewLinkAddr(flags, endpointID, underlay.As16())
}

// ParseLinkAddr reads a link-layer address from the first 20 octets of b.
// The reserved flag bits are kept as received (so the octet can be echoed),
// but every accessor ignores them, as §3.1 requires.
func ParseLinkAddr(b []byte) (LinkAddr, error) {
	var a LinkAddr
	if len(b) < LinkAddrLen {
		return a, fmt.Errorf("link-layer address: %d octets, need %d: %w", len(b), LinkAddrLen, ErrShort)
	}
	copy(a[:], b)
	return a, nil
}

// Flags returns the connected-mode flags with the reserved bits masked off.
func (a LinkAddr) Flags() uint8 { return a[0] &^ FlagsReservedMask }

// HasRC reports whether the owner accepts Reliable Connected IPoIB-CM.
func (a LinkAddr) HasRC() bool { return a[0]&FlagRC != 0 }

// HasUC reports whether the owner accepts Unreliable Connected IPoIB-CM.
func (a LinkAddr) HasUC() bool { return a[0]&FlagUC != 0 }

// QPN returns the 24-bit UD QPN (the endpoint ID on iWARP).
func (a LinkAddr) QPN() uint32 { return uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3]) }

// GID returns the 16-octet port GID (the underlay address on iWARP).
func (a LinkAddr) GID() [16]byte {
	var g [16]byte
	copy(g[:], a[4:])
	return g
}

// Underlay returns the GID as an IP address, unmapping IPv4-mapped addresses.
func (a LinkAddr) Underlay() netip.Addr { return netip.AddrFrom16(a.GID()).Unmap() }

// WithoutFlags returns the address with the whole flags octet zeroed: the
// form RFC 4755 §3.3 compares and the form a UD-only node transmits (§3.1).
func (a LinkAddr) WithoutFlags() LinkAddr {
	a[0] = 0
	return a
}

// Compare orders two addresses as §3.3 does: flags forced to zero in both,
// then unsigned big-endian from octet 0 to 19 (so QPN first, then GID).
// It returns -1, 0 or +1.
func (a LinkAddr) Compare(b LinkAddr) int {
	x, y := a.WithoutFlags(), b.WithoutFlags()
	return bytes.Compare(x[:], y[:])
}

// Append appends the 20 octets to dst.
func (a LinkAddr) Append(dst []byte) []byte { return append(dst, a[:]...) }

// String formats the address as Linux prints an IPoIB hardware address:
// colon-separated hex octets.
func (a LinkAddr) String() string {
	var buf [LinkAddrLen*3 - 1]byte
	for i, b := range a {
		if i > 0 {
			buf[i*3-1] = ':'
		}
		hex.Encode(buf[i*3:i*3+2], []byte{b})
	}
	return string(buf[:])
}
