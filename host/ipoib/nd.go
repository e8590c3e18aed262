package ipoib

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/openiwarp/openiwarp/golden/ipoibcm"
)

// IPv6 neighbour discovery over the datagram channel (RFC 4861 with the
// IPoIB link-layer option of RFC 4391 §9.1.2: type, length 3 (24 octets), two
// octets of padding, the 20-octet address). The TUN device has no link layer,
// so the daemon resolves IPv6 neighbours itself, as it does ARP for IPv4.

const (
	ndSolicit   = 135
	ndAdvert    = 136
	ndOptSrcLL  = 1
	ndOptTgtLL  = 2
	ndOptLen    = 24
	ndOptUnits  = 3
	ndMsgLen    = 24 // type, code, checksum, reserved/flags, target
	ndAdvSolic  = 0x40
	ndAdvOverri = 0x20
)

// solicitedNode is the solicited-node multicast address of a (RFC 4291 §2.7.1).
func solicitedNode(a netip.Addr) netip.Addr {
	b := a.As16()
	return netip.AddrFrom16([16]byte{0xff, 0x02, 11: 1, 12: 0xff, 13: b[13], 14: b[14], 15: b[15]})
}

func ndOption(typ byte, la ipoibcm.LinkAddr) []byte {
	o := make([]byte, 4, ndOptLen)
	o[0], o[1] = typ, ndOptUnits
	return append(o, la[:]...)
}

// buildNS builds a neighbour solicitation for target from src.
func buildNS(src, target netip.Addr, me ipoibcm.LinkAddr) []byte {
	body := make([]byte, 8, ndMsgLen+ndOptLen)
	body[0] = ndSolicit
	t := target.As16()
	body = append(append(body, t[:]...), ndOption(ndOptSrcLL, me)...)
	return icmpv6(src, solicitedNode(target), 255, body)
}

// buildNA builds a solicited advertisement for target, sent to dst.
func buildNA(target, dst netip.Addr, me ipoibcm.LinkAddr) []byte {
	body := make([]byte, 8, ndMsgLen+ndOptLen)
	body[0], body[4] = ndAdvert, ndAdvSolic|ndAdvOverri
	t := target.As16()
	body = append(append(body, t[:]...), ndOption(ndOptTgtLL, me)...)
	return icmpv6(target, dst, 255, body)
}

// ndMsg is a parsed NS or NA.
type ndMsg struct {
	typ    byte
	src    netip.Addr // IPv6 source
	target netip.Addr
	ll     ipoibcm.LinkAddr // source (NS) or target (NA) link-layer option
	hasLL  bool
}

// parseND recognises an NS or NA in an IPv6 packet. ok is false for any
// other packet; err reports a malformed NS/NA (hop limit, checksum, option).
func parseND(p []byte) (m ndMsg, ok bool, err error) {
	if len(p) < 40+ndMsgLen || p[0]>>4 != 6 || p[6] != 58 || (p[40] != ndSolicit && p[40] != ndAdvert) {
		return m, false, nil
	}
	plen := int(binary.BigEndian.Uint16(p[4:]))
	if 40+plen > len(p) || plen < ndMsgLen {
		return m, true, fmt.Errorf("neighbour discovery: payload length %d in %d octets", plen, len(p))
	}
	body := p[40 : 40+plen]
	src, dst := netip.AddrFrom16([16]byte(p[8:24])), netip.AddrFrom16([16]byte(p[24:40]))
	if p[7] != 255 || body[1] != 0 {
		return m, true, fmt.Errorf("neighbour discovery: hop limit %d code %d, want 255/0", p[7], body[1])
	}
	if checksum(pseudoSum6(src, dst, len(body), 58), body) != 0 {
		return m, true, fmt.Errorf("neighbour discovery: bad ICMPv6 checksum")
	}
	m = ndMsg{typ: body[0], src: src, target: netip.AddrFrom16([16]byte(body[8:24]))}
	for o := body[ndMsgLen:]; len(o) > 0; {
		if len(o) < 2 || o[1] == 0 || int(o[1])*8 > len(o) {
			return m, true, fmt.Errorf("neighbour discovery: truncated option")
		}
		n := int(o[1]) * 8
		if (o[0] == ndOptSrcLL || o[0] == ndOptTgtLL) && n == ndOptLen {
			m.ll, m.hasLL = ipoibcm.LinkAddr(o[4:24]), true
		}
		o = o[n:]
	}
	return m, true, nil
}
