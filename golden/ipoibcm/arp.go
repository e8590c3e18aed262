package ipoibcm

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// ARP over IPoIB (RFC 4391 §9.1, RFC 826): hardware type 32 (InfiniBand),
// hlen 20. The connected-mode flags travel inside the hardware addresses
// (RFC 4755 §3.1). On openiwarp ARP only ever uses the datagram channel.
const (
	ARPHardwareInfiniBand = 32
	ARPRequest            = 1
	ARPReply              = 2
	// ARPLen is the length of an IPv4-over-IPoIB ARP packet.
	ARPLen = 8 + 2*(LinkAddrLen+4)
)

// ARP is an IPv4 ARP packet with IPoIB hardware addresses.
type ARP struct {
	Op       uint16
	SenderHW LinkAddr
	SenderIP netip.Addr
	TargetHW LinkAddr // zero in a request
	TargetIP netip.Addr
}

// Append appends the 56-octet packet. Both IPs must be IPv4.
func (a ARP) Append(dst []byte) ([]byte, error) {
	if !a.SenderIP.Is4() || !a.TargetIP.Is4() {
		return dst, fmt.Errorf("ARP: sender %v / target %v must be IPv4: %w", a.SenderIP, a.TargetIP, ErrEtherType)
	}
	dst = binary.BigEndian.AppendUint16(dst, ARPHardwareInfiniBand)
	dst = binary.BigEndian.AppendUint16(dst, EtherTypeIPv4)
	dst = append(dst, LinkAddrLen, 4)
	dst = binary.BigEndian.AppendUint16(dst, a.Op)
	dst = append(dst, a.SenderHW[:]...)
	dst = append(dst, a.SenderIP.AsSlice()...)
	dst = append(dst, a.TargetHW[:]...)
	return append(dst, a.TargetIP.AsSlice()...), nil
}

// ParseARP reads an IPoIB ARP packet. A hardware type other than 32, a
// protocol other than IPv4, lengths other than 20/4 or an operation other
// than request/reply are ErrEtherType errors naming the field.
func ParseARP(b []byte) (ARP, error) {
	if len(b) < ARPLen {
		return ARP{}, fmt.Errorf("ARP: %d octets, need %d: %w", len(b), ARPLen, ErrShort)
	}
	ht, pt := binary.BigEndian.Uint16(b), binary.BigEndian.Uint16(b[2:])
	switch {
	case ht != ARPHardwareInfiniBand:
		return ARP{}, fmt.Errorf("ARP: hardware type %d, want %d (InfiniBand): %w", ht, ARPHardwareInfiniBand, ErrEtherType)
	case pt != EtherTypeIPv4:
		return ARP{}, fmt.Errorf("ARP: protocol type %#04x, want IPv4: %w", pt, ErrEtherType)
	case b[4] != LinkAddrLen || b[5] != 4:
		return ARP{}, fmt.Errorf("ARP: hlen %d plen %d, want 20/4: %w", b[4], b[5], ErrEtherType)
	}
	a := ARP{Op: binary.BigEndian.Uint16(b[6:])}
	if a.Op != ARPRequest && a.Op != ARPReply {
		return ARP{}, fmt.Errorf("ARP: operation %d: %w", a.Op, ErrEtherType)
	}
	p := b[8:]
	copy(a.SenderHW[:], p)
	a.SenderIP = netip.AddrFrom4([4]byte(p[20:24]))
	copy(a.TargetHW[:], p[24:])
	a.TargetIP = netip.AddrFrom4([4]byte(p[44:48]))
	return a, nil
}
