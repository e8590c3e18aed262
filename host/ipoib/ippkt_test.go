package ipoib

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/openiwarp/openiwarp/golden/ipoibcm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	srcA = netip.MustParseAddr("198.19.0.1")
	dstB = netip.MustParseAddr("198.19.0.2")
	v6A  = netip.MustParseAddr("fd00:4755::1")
	v6B  = netip.MustParseAddr("fd00:4755::2")
)

func ipv4(total int, df bool) []byte {
	payload := make([]byte, total-20)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	p := appendIPv4(nil, srcA, dstB, 17, payload)
	if df {
		p[6] |= 0x40
		p[10], p[11] = 0, 0
		binary.BigEndian.PutUint16(p[10:], checksum(0, p[:20]))
	}
	return p
}

func TestParseIP(t *testing.T) {
	info, err := parseIP(ipv4(100, true))
	require.NoError(t, err)
	assert.Equal(t, ipInfo{etherType: ipoibcm.EtherTypeIPv4, src: srcA, dst: dstB, df: true}, info)
	p6 := appendIPv6(nil, v6A, v6B, 17, 64, make([]byte, 8))
	info, err = parseIP(p6)
	require.NoError(t, err)
	assert.Equal(t, ipInfo{etherType: ipoibcm.EtherTypeIPv6, src: v6A, dst: v6B}, info)
	for _, bad := range [][]byte{nil, {0x45}, {0x60, 0}, {0x25, 0, 0, 20}, append([]byte{0x4f}, make([]byte, 30)...)} {
		_, err := parseIP(bad)
		assert.ErrorIs(t, err, errNotIP, "% x", bad)
	}
}

func TestChecksum(t *testing.T) {
	// RFC 1071 §3 example: 0001 f203 f4f5 f6f7 sums to ddf2, complement 220d.
	assert.Equal(t, uint16(0x220d), checksum(0, []byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}))
	p := ipv4(60, false)
	assert.Zero(t, checksum(0, p[:20]), "a header with its checksum sums to zero")
}

// Fragments reassemble to the original payload, respect the MTU, carry
// 8-octet multiples except the last, and keep the header fields.
func TestFragment4(t *testing.T) {
	for _, mtu := range []int{68, 576, 1500, 2044, 9000} {
		pkt := ipv4(20000, false)
		var frags [][]byte
		require.NoError(t, fragment4(pkt, mtu, func(f []byte) error { frags = append(frags, f); return nil }))
		var data []byte
		for i, f := range frags {
			assert.LessOrEqual(t, len(f), mtu)
			assert.Zero(t, checksum(0, f[:20]))
			fo := binary.BigEndian.Uint16(f[6:])
			assert.Equal(t, len(data), int(fo&0x1fff)*8, "fragment %d offset", i)
			assert.Equal(t, i < len(frags)-1, fo&0x2000 != 0, "MF on all but the last")
			if i < len(frags)-1 {
				assert.Zero(t, (len(f)-20)%8)
			}
			assert.Equal(t, pkt[12:20], f[12:20])
			data = append(data, f[20:]...)
		}
		assert.Equal(t, pkt[20:], data, "mtu %d", mtu)
	}
	assert.Error(t, fragment4(ipv4(100, false), 24, func([]byte) error { return nil }))
	bad := ipv4(100, false)
	binary.BigEndian.PutUint16(bad[2:], 200)
	assert.ErrorIs(t, fragment4(bad, 68, func([]byte) error { return nil }), errNotIP)
}

func TestTooBig(t *testing.T) {
	pkt := ipv4(9001, true)
	info, _ := parseIP(pkt)
	icmp, err := tooBig(pkt, info, dstB, 9000)
	require.NoError(t, err)
	ri, err := parseIP(icmp)
	require.NoError(t, err)
	assert.Equal(t, dstB, ri.src)
	assert.Equal(t, srcA, ri.dst)
	body := icmp[20:]
	assert.Equal(t, []byte{3, 4}, body[:2], "destination unreachable, fragmentation needed")
	assert.Equal(t, uint16(9000), binary.BigEndian.Uint16(body[6:]))
	assert.Zero(t, checksum(0, body))
	assert.Equal(t, pkt[:28], body[8:], "quotes the header and 8 octets")

	p6 := appendIPv6(nil, v6A, v6B, 17, 64, make([]byte, 3000))
	info, _ = parseIP(p6)
	icmp, err = tooBig(p6, info, v6B, 2044)
	require.NoError(t, err)
	body = icmp[40:]
	assert.Equal(t, byte(2), body[0], "packet too big")
	assert.Equal(t, uint32(2044), binary.BigEndian.Uint32(body[4:]))
	assert.Zero(t, checksum(pseudoSum6(v6B, v6A, len(body), 58), body))
	assert.LessOrEqual(t, len(icmp), ipoibcm.MinMTUIPv6)
}

func TestIsGroup(t *testing.T) {
	sub := netip.MustParsePrefix("198.19.0.1/24")
	for a, want := range map[string]bool{
		"198.19.0.255": true, "255.255.255.255": true, "224.0.0.1": true, "ff02::1": true,
		"198.19.0.2": false, "fd00:4755::2": false, "198.19.1.255": false,
	} {
		assert.Equal(t, want, isGroup(netip.MustParseAddr(a), sub), a)
	}
}

func TestNeighbourDiscovery(t *testing.T) {
	me, _ := ipoibcm.NewUnderlayLinkAddr(ipoibcm.FlagRC, 5, netip.MustParseAddr("198.18.0.1"))
	ns := buildNS(v6A, v6B, me)
	assert.Equal(t, netip.MustParseAddr("ff02::1:ff00:2"), netip.AddrFrom16([16]byte(ns[24:40])), "solicited-node group")
	m, ok, err := parseND(ns)
	require.True(t, ok)
	require.NoError(t, err)
	assert.Equal(t, ndMsg{typ: ndSolicit, src: v6A, target: v6B, ll: me, hasLL: true}, m)
	assert.Equal(t, []byte{1, 3, 0, 0}, ns[len(ns)-24:len(ns)-20], "IPoIB option: length 3, two octets of padding")

	na := buildNA(v6B, v6A, me)
	m, ok, err = parseND(na)
	require.True(t, ok)
	require.NoError(t, err)
	assert.Equal(t, ndMsg{typ: ndAdvert, src: v6B, target: v6B, ll: me, hasLL: true}, m)

	_, ok, _ = parseND(appendIPv6(nil, v6A, v6B, 17, 64, make([]byte, 40)))
	assert.False(t, ok, "not ICMPv6")
	bad := append([]byte(nil), ns...)
	bad[len(bad)-1] ^= 1
	_, ok, err = parseND(bad)
	assert.True(t, ok)
	assert.ErrorContains(t, err, "checksum")
	bad = append([]byte(nil), ns...)
	bad[7] = 64
	_, _, err = parseND(bad)
	assert.ErrorContains(t, err, "hop limit")
}
