package ipoibcm

import "fmt"

// MTU figures (RFC 4755 §5, RFC 791, RFC 8200).
const (
	// DefaultMTU is the default IPoIB-CM MTU: a 2048-octet IPoIB link MTU
	// minus the 4-octet encapsulation header.
	DefaultMTU = 2044
	// DefaultReceiveMTU is the Receive MTU that yields DefaultMTU.
	DefaultReceiveMTU = DefaultMTU + HeaderLen
	// MinMTUIPv4 and MinMTUIPv6 are the protocol minimums a link MUST support.
	MinMTUIPv4 = 68
	MinMTUIPv6 = 1280
	// LinuxReceiveMTU is what Linux IPoIB-CM advertises (IPOIB_CM_BUF_SIZE):
	// 65520 + 4.
	LinuxReceiveMTU = 65524
	// MaxIPv4MTU caps the IP MTU: an IPv4 total length is 16 bits.
	MaxIPv4MTU = 65535
)

// ConnMTU returns the IP MTU of a connection (§5.1): the smaller of the two
// Receive MTUs, minus the encapsulation header, capped at MaxIPv4MTU. Taking
// the minimum also clamps an untrusted peer value to our own buffer size. A
// result below the IPv4 minimum is an ErrMTU error: such a link cannot carry
// IP at all (§5). Use [SupportsIPv6] to learn whether IPv6 fits too.
func ConnMTU(localReceiveMTU, remoteReceiveMTU uint32) (int, error) {
	m := min(localReceiveMTU, remoteReceiveMTU)
	if m < HeaderLen+MinMTUIPv4 {
		return 0, fmt.Errorf("connection MTU: Receive MTUs %d (local) and %d (remote) leave less than %d octets for IP: %w",
			localReceiveMTU, remoteReceiveMTU, MinMTUIPv4, ErrMTU)
	}
	return int(min(m-HeaderLen, MaxIPv4MTU)), nil
}

// SupportsIPv6 reports whether an IP MTU reaches the IPv6 minimum.
func SupportsIPv6(ipMTU int) bool { return ipMTU >= MinMTUIPv6 }

// MinMTU returns the minimum IP MTU of the protocol a packet of EtherType t
// carries, or 0 for anything that is not IP.
func MinMTU(t uint16) int {
	switch t {
	case EtherTypeIPv4:
		return MinMTUIPv4
	case EtherTypeIPv6:
		return MinMTUIPv6
	}
	return 0
}
