package pcapio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// LinkType is a pcap LINKTYPE_ value: the framing of every packet on an
// interface.
type LinkType uint32

// The link types DecodeTCP understands.
const (
	LinkNull     LinkType = 0   // BSD loopback: 4-octet address family in host byte order
	LinkEthernet LinkType = 1   // Ethernet II, optionally with 802.1Q/802.1ad tags
	LinkRaw      LinkType = 101 // raw IPv4 or IPv6, version from the first nibble
	LinkLoop     LinkType = 108 // OpenBSD loopback: address family in network byte order
	LinkSLL      LinkType = 113 // Linux cooked capture v1 (16-octet header)
	LinkIPv4     LinkType = 228
	LinkIPv6     LinkType = 229
	LinkSLL2     LinkType = 276 // Linux cooked capture v2 (20-octet header)
)

func (l LinkType) String() string {
	switch l {
	case LinkNull:
		return "NULL"
	case LinkEthernet:
		return "EN10MB"
	case LinkRaw:
		return "RAW"
	case LinkLoop:
		return "LOOP"
	case LinkSLL:
		return "LINUX_SLL"
	case LinkIPv4:
		return "IPV4"
	case LinkIPv6:
		return "IPV6"
	case LinkSLL2:
		return "LINUX_SLL2"
	}
	return fmt.Sprintf("linktype %d", uint32(l))
}

// TCPFlags are the TCP header flag bits.
type TCPFlags uint8

// TCP flags.
const (
	FlagFIN TCPFlags = 0x01
	FlagSYN TCPFlags = 0x02
	FlagRST TCPFlags = 0x04
	FlagPSH TCPFlags = 0x08
	FlagACK TCPFlags = 0x10
)

func (f TCPFlags) String() string {
	var s []string
	for _, b := range []struct {
		f TCPFlags
		n string
	}{{FlagSYN, "SYN"}, {FlagFIN, "FIN"}, {FlagRST, "RST"}, {FlagPSH, "PSH"}, {FlagACK, "ACK"}} {
		if f&b.f != 0 {
			s = append(s, b.n)
		}
	}
	return strings.Join(s, ",")
}

// Segment is one TCP segment with the addresses it travelled between.
type Segment struct {
	Src, Dst netip.AddrPort
	Seq, Ack uint32
	Flags    TCPFlags
	Window   uint16
	Payload  []byte
}

// Decoding errors. DecodeTCP wraps them in a *DecodeError; match with errors.Is.
var (
	// ErrNotTCP: the packet is valid but carries no TCP (ARP, UDP, ICMP...).
	ErrNotTCP = errors.New("not a TCP packet")
	// ErrFragment: an IPv4 or IPv6 fragment; reassembling IP is out of scope.
	ErrFragment = errors.New("IP fragment")
	// ErrExtHeader: an IPv6 extension header that cannot be walked.
	ErrExtHeader = errors.New("IPv6 extension header not walked")
	// ErrTruncated: the captured bytes end before the packet's own lengths say.
	ErrTruncated = errors.New("packet truncated")
	// ErrMalformed: a header field that cannot be right.
	ErrMalformed = errors.New("malformed packet")
	// ErrLinkType: a link type this package does not decode.
	ErrLinkType = errors.New("unsupported link type")
)

// DecodeError says which layer of a packet could not be decoded and why.
type DecodeError struct {
	Layer string // "link", "IPv4", "IPv6", "TCP"
	Err   error  // one of the Err* sentinels above
	Msg   string
}

func (e *DecodeError) Error() string { return e.Layer + ": " + e.Err.Error() + ": " + e.Msg }
func (e *DecodeError) Unwrap() error { return e.Err }

func decodeErr(layer string, err error, format string, a ...any) error {
	return &DecodeError{Layer: layer, Err: err, Msg: fmt.Sprintf(format, a...)}
}

const (
	etherHeaderLen = 14
	ipv4HeaderLen  = 20
	ipv6HeaderLen  = 40
	tcpHeaderLen   = 20
	etherTypeIPv4  = 0x0800
	etherTypeIPv6  = 0x86DD
	etherTypeVLAN  = 0x8100
	etherTypeQinQ  = 0x88A8
	protoTCP       = 6
	// MaxSegmentPayload is the most payload AppendFrame puts in one
	// segment: an IPv4 packet must fit its 16-bit total length.
	MaxSegmentPayload = 65000
)

// Locally administered MAC addresses for the two ends of recorded frames.
var (
	macClient = [6]byte{0x02, 0, 0, 0, 0, 0x01}
	macServer = [6]byte{0x02, 0, 0, 0, 0, 0x02}
)

// AppendFrame appends to dst an Ethernet frame carrying s over IPv4 or IPv6
// (by the family of s.Src, which s.Dst must share), with the IP header and
// TCP checksums computed. The source MAC is 02:00:00:00:00:01 when fromClient
// and ...:02 otherwise, so a reader can tell the ends apart at the link layer.
func AppendFrame(dst []byte, s *Segment, fromClient bool) ([]byte, error) {
	src, dstA := s.Src.Addr().Unmap(), s.Dst.Addr().Unmap()
	if !src.IsValid() || !dstA.IsValid() || src.Is4() != dstA.Is4() {
		return dst, fmt.Errorf("pcapio: frame needs two addresses of one family, got %v and %v", s.Src, s.Dst)
	}
	if len(s.Payload) > MaxSegmentPayload {
		return dst, fmt.Errorf("pcapio: %d octets of payload exceed one segment (%d)", len(s.Payload), MaxSegmentPayload)
	}
	smac, dmac := macServer, macClient
	if fromClient {
		smac, dmac = macClient, macServer
	}
	dst = append(dst, dmac[:]...)
	dst = append(dst, smac[:]...)
	tcpLen := tcpHeaderLen + len(s.Payload)
	var pseudo uint32
	if src.Is4() {
		dst = binary.BigEndian.AppendUint16(dst, etherTypeIPv4)
		ip := len(dst)
		s4, d4 := src.As4(), dstA.As4()
		dst = append(dst, 0x45, 0)
		dst = binary.BigEndian.AppendUint16(dst, uint16(ipv4HeaderLen+tcpLen))
		dst = append(dst, 0, 0, 0x40, 0, 64, protoTCP, 0, 0) // ID 0, DF, TTL 64, checksum later
		dst = append(dst, s4[:]...)
		dst = append(dst, d4[:]...)
		binary.BigEndian.PutUint16(dst[ip+10:], ^fold(sum(0, dst[ip:ip+ipv4HeaderLen])))
		pseudo = sum(sum(0, s4[:]), d4[:]) + protoTCP + uint32(tcpLen)
	} else {
		dst = binary.BigEndian.AppendUint16(dst, etherTypeIPv6)
		s16, d16 := src.As16(), dstA.As16()
		dst = append(dst, 0x60, 0, 0, 0)
		dst = binary.BigEndian.AppendUint16(dst, uint16(tcpLen))
		dst = append(dst, protoTCP, 64)
		dst = append(dst, s16[:]...)
		dst = append(dst, d16[:]...)
		pseudo = sum(sum(0, s16[:]), d16[:]) + protoTCP + uint32(tcpLen)
	}
	t := len(dst)
	dst = binary.BigEndian.AppendUint16(dst, s.Src.Port())
	dst = binary.BigEndian.AppendUint16(dst, s.Dst.Port())
	dst = binary.BigEndian.AppendUint32(dst, s.Seq)
	dst = binary.BigEndian.AppendUint32(dst, s.Ack)
	win := s.Window
	if win == 0 {
		win = 0xffff
	}
	dst = append(dst, tcpHeaderLen/4<<4, byte(s.Flags))
	dst = binary.BigEndian.AppendUint16(dst, win)
	dst = append(dst, 0, 0, 0, 0) // checksum, urgent pointer
	dst = append(dst, s.Payload...)
	binary.BigEndian.PutUint16(dst[t+16:], ^fold(sum(pseudo, dst[t:])))
	return dst, nil
}

// sum adds b as big-endian 16-bit words to acc (RFC 1071).
func sum(acc uint32, b []byte) uint32 {
	for len(b) >= 2 {
		acc += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint32(b[0]) << 8
	}
	return acc
}

func fold(acc uint32) uint16 {
	for acc > 0xffff {
		acc = acc>>16 + acc&0xffff
	}
	return uint16(acc)
}

// DecodeTCP decodes a frame of link type lt down to its TCP segment. The
// payload aliases data. It fails with a *DecodeError wrapping ErrNotTCP for
// packets that carry something else, and ErrFragment, ErrExtHeader,
// ErrTruncated, ErrMalformed or ErrLinkType for packets it cannot follow.
func DecodeTCP(lt LinkType, data []byte) (Segment, error) {
	ip, err := linkPayload(lt, data)
	if err != nil {
		return Segment{}, err
	}
	return decodeIP(ip)
}

// linkPayload strips the link-layer header. A payload it cannot identify
// as IP is ErrNotTCP.
func linkPayload(lt LinkType, b []byte) ([]byte, error) {
	switch lt {
	case LinkEthernet:
		if len(b) < etherHeaderLen {
			return nil, decodeErr("link", ErrTruncated, "Ethernet header needs %d octets, have %d", etherHeaderLen, len(b))
		}
		et, off := binary.BigEndian.Uint16(b[12:]), etherHeaderLen
		for et == etherTypeVLAN || et == etherTypeQinQ {
			if len(b) < off+4 {
				return nil, decodeErr("link", ErrTruncated, "802.1Q tag cut short")
			}
			et, off = binary.BigEndian.Uint16(b[off+2:]), off+4
		}
		return etherPayload(et, b[off:])
	case LinkSLL:
		if len(b) < 16 {
			return nil, decodeErr("link", ErrTruncated, "Linux cooked header needs 16 octets, have %d", len(b))
		}
		return etherPayload(binary.BigEndian.Uint16(b[14:]), b[16:])
	case LinkSLL2:
		if len(b) < 20 {
			return nil, decodeErr("link", ErrTruncated, "Linux cooked v2 header needs 20 octets, have %d", len(b))
		}
		return etherPayload(binary.BigEndian.Uint16(b[0:]), b[20:])
	case LinkRaw, LinkIPv4, LinkIPv6:
		return b, nil
	case LinkNull, LinkLoop:
		if len(b) < 4 {
			return nil, decodeErr("link", ErrTruncated, "loopback header needs 4 octets, have %d", len(b))
		}
		fam := binary.BigEndian.Uint32(b)
		if lt == LinkNull && fam > 0xffff {
			fam = binary.LittleEndian.Uint32(b) // written in the capturing host's byte order
		}
		switch fam {
		case 2: // AF_INET everywhere
		case 10, 24, 28, 30: // AF_INET6 on Linux, NetBSD/OpenBSD, FreeBSD, macOS
		default:
			return nil, decodeErr("link", ErrNotTCP, "loopback address family %d", fam)
		}
		return b[4:], nil
	}
	return nil, decodeErr("link", ErrLinkType, "%v", lt)
}

func etherPayload(et uint16, b []byte) ([]byte, error) {
	if et != etherTypeIPv4 && et != etherTypeIPv6 {
		return nil, decodeErr("link", ErrNotTCP, "EtherType %#04x", et)
	}
	return b, nil
}

func decodeIP(b []byte) (Segment, error) {
	if len(b) == 0 {
		return Segment{}, decodeErr("IP", ErrTruncated, "no IP header")
	}
	switch b[0] >> 4 {
	case 4:
		return decodeIPv4(b)
	case 6:
		return decodeIPv6(b)
	}
	return Segment{}, decodeErr("IP", ErrMalformed, "IP version %d", b[0]>>4)
}

func decodeIPv4(b []byte) (Segment, error) {
	if len(b) < ipv4HeaderLen {
		return Segment{}, decodeErr("IPv4", ErrTruncated, "header needs 20 octets, have %d", len(b))
	}
	ihl := int(b[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(b[2:]))
	switch {
	case ihl < ipv4HeaderLen:
		return Segment{}, decodeErr("IPv4", ErrMalformed, "header length %d", ihl)
	case total < ihl:
		return Segment{}, decodeErr("IPv4", ErrMalformed, "total length %d below header length %d", total, ihl)
	case len(b) < total:
		return Segment{}, decodeErr("IPv4", ErrTruncated, "total length %d, captured %d", total, len(b))
	}
	src, dst := netip.AddrFrom4([4]byte(b[12:16])), netip.AddrFrom4([4]byte(b[16:20]))
	if frag := binary.BigEndian.Uint16(b[6:]); frag&0x3fff != 0 {
		return Segment{}, decodeErr("IPv4", ErrFragment, "%v -> %v offset %d", src, dst, (frag&0x1fff)*8)
	}
	if b[9] != protoTCP {
		return Segment{}, decodeErr("IPv4", ErrNotTCP, "protocol %d", b[9])
	}
	return decodeTCP(src, dst, b[ihl:total])
}

func decodeIPv6(b []byte) (Segment, error) {
	if len(b) < ipv6HeaderLen {
		return Segment{}, decodeErr("IPv6", ErrTruncated, "header needs 40 octets, have %d", len(b))
	}
	plen := int(binary.BigEndian.Uint16(b[4:]))
	if plen == 0 {
		return Segment{}, decodeErr("IPv6", ErrExtHeader, "payload length 0 (jumbogram)")
	}
	if len(b) < ipv6HeaderLen+plen {
		return Segment{}, decodeErr("IPv6", ErrTruncated, "payload length %d, captured %d", plen, len(b)-ipv6HeaderLen)
	}
	src, dst := netip.AddrFrom16([16]byte(b[8:24])), netip.AddrFrom16([16]byte(b[24:40]))
	next, p := b[6], b[ipv6HeaderLen:ipv6HeaderLen+plen]
	for {
		switch next {
		case protoTCP:
			return decodeTCP(src, dst, p)
		case 0, 43, 60: // hop-by-hop, routing, destination options: walkable
			if len(p) < 8 || len(p) < (int(p[1])+1)*8 {
				return Segment{}, decodeErr("IPv6", ErrTruncated, "extension header %d cut short", next)
			}
			next, p = p[0], p[(int(p[1])+1)*8:]
		case 44:
			return Segment{}, decodeErr("IPv6", ErrFragment, "%v -> %v", src, dst)
		case 51, 50, 135, 139, 140, 253, 254: // AH, ESP, mobility, HIP, shim6, experiments
			return Segment{}, decodeErr("IPv6", ErrExtHeader, "next header %d from %v", next, src)
		default:
			return Segment{}, decodeErr("IPv6", ErrNotTCP, "next header %d", next)
		}
	}
}

func decodeTCP(src, dst netip.Addr, b []byte) (Segment, error) {
	if len(b) < tcpHeaderLen {
		return Segment{}, decodeErr("TCP", ErrTruncated, "header needs 20 octets, have %d", len(b))
	}
	off := int(b[12]>>4) * 4
	if off < tcpHeaderLen || off > len(b) {
		return Segment{}, decodeErr("TCP", ErrMalformed, "data offset %d in a %d-octet segment", off, len(b))
	}
	return Segment{
		Src:     netip.AddrPortFrom(src, binary.BigEndian.Uint16(b[0:])),
		Dst:     netip.AddrPortFrom(dst, binary.BigEndian.Uint16(b[2:])),
		Seq:     binary.BigEndian.Uint32(b[4:]),
		Ack:     binary.BigEndian.Uint32(b[8:]),
		Flags:   TCPFlags(b[13]),
		Window:  binary.BigEndian.Uint16(b[14:]),
		Payload: b[off:],
	}, nil
}
