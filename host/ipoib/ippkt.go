package ipoib

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/openiwarp/openiwarp/golden/ipoibcm"
)

// What the link needs to know about an IP packet read from the TUN device.

var errNotIP = errors.New("not an IPv4 or IPv6 packet")

// ipInfo is the parsed outline of a packet.
type ipInfo struct {
	etherType uint16
	src, dst  netip.Addr
	df        bool // IPv4 Don't Fragment
}

func parseIP(p []byte) (ipInfo, error) {
	if len(p) < 1 {
		return ipInfo{}, fmt.Errorf("empty packet: %w", errNotIP)
	}
	switch p[0] >> 4 {
	case 4:
		if len(p) < 20 || int(p[0]&0xf)*4 < 20 || int(p[0]&0xf)*4 > len(p) {
			return ipInfo{}, fmt.Errorf("IPv4 header of %d octets: %w", len(p), errNotIP)
		}
		return ipInfo{
			etherType: ipoibcm.EtherTypeIPv4,
			src:       netip.AddrFrom4([4]byte(p[12:16])),
			dst:       netip.AddrFrom4([4]byte(p[16:20])),
			df:        p[6]&0x40 != 0,
		}, nil
	case 6:
		if len(p) < 40 {
			return ipInfo{}, fmt.Errorf("IPv6 header of %d octets: %w", len(p), errNotIP)
		}
		return ipInfo{
			etherType: ipoibcm.EtherTypeIPv6,
			src:       netip.AddrFrom16([16]byte(p[8:24])),
			dst:       netip.AddrFrom16([16]byte(p[24:40])),
		}, nil
	}
	return ipInfo{}, fmt.Errorf("IP version %d: %w", p[0]>>4, errNotIP)
}

// checksum is the Internet checksum (RFC 1071) of b folded onto sum.
func checksum(sum uint32, b []byte) uint16 {
	for len(b) >= 2 {
		sum += uint32(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// pseudoSum6 is the IPv6 pseudo-header sum for an upper-layer packet.
func pseudoSum6(src, dst netip.Addr, length int, next byte) uint32 {
	var sum uint32
	s, d := src.As16(), dst.As16()
	for i := 0; i < 16; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(s[i:])) + uint32(binary.BigEndian.Uint16(d[i:]))
	}
	return sum + uint32(length) + uint32(next)
}

// appendIPv4 appends an IPv4 header (no options) and payload.
func appendIPv4(dst []byte, src, to netip.Addr, proto byte, payload []byte) []byte {
	h := make([]byte, 20)
	h[0], h[8], h[9] = 0x45, 64, proto
	binary.BigEndian.PutUint16(h[2:], uint16(20+len(payload)))
	s, d := src.As4(), to.As4()
	copy(h[12:], s[:])
	copy(h[16:], d[:])
	binary.BigEndian.PutUint16(h[10:], checksum(0, h))
	return append(append(dst, h...), payload...)
}

// appendIPv6 appends an IPv6 header and payload.
func appendIPv6(dst []byte, src, to netip.Addr, next, hops byte, payload []byte) []byte {
	h := make([]byte, 40)
	h[0], h[6], h[7] = 0x60, next, hops
	binary.BigEndian.PutUint16(h[4:], uint16(len(payload)))
	s, d := src.As16(), to.As16()
	copy(h[8:], s[:])
	copy(h[24:], d[:])
	return append(append(dst, h...), payload...)
}

// icmpv6 appends an ICMPv6 message with its checksum filled in.
func icmpv6(src, to netip.Addr, hops byte, body []byte) []byte {
	binary.BigEndian.PutUint16(body[2:], 0)
	binary.BigEndian.PutUint16(body[2:], checksum(pseudoSum6(src, to, len(body), 58), body))
	return appendIPv6(nil, src, to, 58, hops, body)
}

// tooBig builds the ICMP error that tells the local stack a packet exceeded
// the MTU toward its destination (RFC 1191 "fragmentation needed and DF set",
// RFC 8201 "packet too big"), so that it keeps a per-destination MTU as RFC
// 4755 §7.2 suggests. from is our own address of the packet's family.
func tooBig(pkt []byte, info ipInfo, from netip.Addr, mtu int) ([]byte, error) {
	switch info.etherType {
	case ipoibcm.EtherTypeIPv4:
		quote := pkt[:min(len(pkt), int(pkt[0]&0xf)*4+8)]
		body := make([]byte, 8, 8+len(quote))
		body[0], body[1] = 3, 4 // destination unreachable, fragmentation needed
		binary.BigEndian.PutUint16(body[6:], uint16(mtu))
		body = append(body, quote...)
		binary.BigEndian.PutUint16(body[2:], checksum(0, body))
		return appendIPv4(nil, from, info.src, 1, body), nil
	case ipoibcm.EtherTypeIPv6:
		quote := pkt[:min(len(pkt), ipoibcm.MinMTUIPv6-40-8)]
		body := make([]byte, 8, 8+len(quote))
		body[0] = 2 // packet too big
		binary.BigEndian.PutUint32(body[4:], uint32(mtu))
		return icmpv6(from, info.src, 64, append(body, quote...)), nil
	}
	return nil, errNotIP
}

// fragment4 splits an IPv4 packet without DF into fragments of at most mtu
// octets (RFC 791), calling emit for each. Offsets are in 8-octet units, so
// every fragment but the last carries a multiple of 8 octets of data.
func fragment4(pkt []byte, mtu int, emit func([]byte) error) error {
	hl := int(pkt[0]&0xf) * 4
	total := int(binary.BigEndian.Uint16(pkt[2:]))
	if total > len(pkt) || total < hl {
		return fmt.Errorf("IPv4 total length %d with %d octets: %w", total, len(pkt), errNotIP)
	}
	data := pkt[hl:total]
	step := (mtu - hl) &^ 7
	if step <= 0 {
		return fmt.Errorf("MTU %d too small to fragment a %d-octet header", mtu, hl)
	}
	flagsOff := binary.BigEndian.Uint16(pkt[6:])
	baseOff := int(flagsOff&0x1fff) * 8
	moreAfter := flagsOff&0x2000 != 0
	for off := 0; off < len(data); off += step {
		n := min(step, len(data)-off)
		f := make([]byte, hl+n)
		copy(f, pkt[:hl])
		copy(f[hl:], data[off:off+n])
		binary.BigEndian.PutUint16(f[2:], uint16(hl+n))
		fo := uint16((baseOff + off) / 8)
		if off+n < len(data) || moreAfter {
			fo |= 0x2000
		}
		binary.BigEndian.PutUint16(f[6:], fo)
		f[10], f[11] = 0, 0
		binary.BigEndian.PutUint16(f[10:], checksum(0, f[:hl]))
		if err := emit(f); err != nil {
			return err
		}
	}
	return nil
}

// isGroup reports whether a destination is multicast or broadcast for the
// link: such packets always go over the datagram channel (RFC 4755 §2.1).
func isGroup(dst netip.Addr, subnet netip.Prefix) bool {
	if dst.IsMulticast() || dst == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return true
	}
	if dst.Is4() && subnet.IsValid() && subnet.Addr().Is4() && subnet.Bits() < 31 && subnet.Contains(dst) {
		return dst == lastAddr(subnet)
	}
	return false
}

// lastAddr is the subnet's broadcast address.
func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr().As4()
	v := binary.BigEndian.Uint32(a[:]) | (1<<(32-p.Bits()) - 1)
	binary.BigEndian.PutUint32(a[:], v)
	return netip.AddrFrom4(a)
}
