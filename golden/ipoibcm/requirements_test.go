package ipoibcm

// One test per numbered requirement of the digest's §12 that this package
// implements. Requirements about the running link (UD QP for multicast,
// ARP/ND replies over the datagram channel, teardown on interface removal,
// unicast accepted on every mode) are exercised by cmd/ipoibcm and
// test/ipoib; where this package provides the decision, it is tested here.

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func gid(last byte) [16]byte {
	var g [16]byte
	g[0], g[1], g[15] = 0xfe, 0x80, last
	return g
}

func mustAddr(t *testing.T, flags uint8, qpn uint32, g [16]byte) LinkAddr {
	t.Helper()
	a, err := NewLinkAddr(flags, qpn, g)
	require.NoError(t, err)
	return a
}

// §3.1 layout: flags, QPN, GID at their octets.
func TestLinkAddrLayout(t *testing.T) {
	a := mustAddr(t, FlagRC, 0x123456, gid(0x42))
	want := []byte{0x80, 0x12, 0x34, 0x56, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x42}
	assert.Equal(t, want, a[:])
	assert.Equal(t, uint32(0x123456), a.QPN())
	assert.Equal(t, gid(0x42), a.GID())
	assert.Equal(t, "80:12:34:56:fe:80:00:00:00:00:00:00:00:00:00:00:00:00:00:42", a.String())
	_, err := NewLinkAddr(0, MaxQPN+1, gid(1))
	assert.ErrorIs(t, err, ErrQPNRange)
	_, err = ParseLinkAddr(a[:19])
	assert.ErrorIs(t, err, ErrShort)
}

// Req 6: reserved flag bits are 0 on transmit and ignored on receive.
func TestReq06ReservedFlagBits(t *testing.T) {
	for bit := 0; bit < 8; bit++ {
		f := uint8(1) << bit
		a := mustAddr(t, f, 1, gid(1))
		reserved := f&FlagsReservedMask != 0
		if reserved {
			assert.Zero(t, a[0], "bit %#02x must be cleared on transmit", f)
		} else {
			assert.Equal(t, f, a[0])
		}
		// Receive: the octet as it arrived, accessors ignore reserved bits.
		var b [LinkAddrLen]byte
		b[0] = f | FlagsReservedMask
		r, err := ParseLinkAddr(b[:])
		require.NoError(t, err)
		assert.Equal(t, f&^FlagsReservedMask, r.Flags())
		assert.Equal(t, f == FlagRC, r.HasRC())
		assert.Equal(t, f == FlagUC, r.HasUC())
	}
}

// Req 7: RC and UC may both be set.
func TestReq07BothModes(t *testing.T) {
	a := mustAddr(t, FlagRC|FlagUC, 7, gid(7))
	assert.True(t, a.HasRC())
	assert.True(t, a.HasUC())
	assert.Equal(t, uint8(0xC0), a.Flags())
}

// Req 8: a UD-only node sends the flags octet as zero (WithoutFlags).
func TestReq08UDOnlySendsZeroFlags(t *testing.T) {
	a := mustAddr(t, FlagRC|FlagUC, 9, gid(9))
	z := a.WithoutFlags()
	assert.Zero(t, z[0])
	assert.Equal(t, a[1:], z[1:])
}

// Req 9, 21: the link-layer QPN is the Service-ID input.
func TestReq09And21QPNIsServiceIDInput(t *testing.T) {
	a := mustAddr(t, FlagRC, 0xABCDEF, gid(1))
	for _, m := range []SIDMode{SIDOFED, SIDLiteral} {
		sid, err := ServiceID(a.QPN(), m)
		require.NoError(t, err)
		qpn, mode, err := ParseServiceID(sid)
		require.NoError(t, err)
		assert.Equal(t, a.QPN(), qpn)
		assert.Equal(t, m, mode)
	}
}

// Req 10: an ARP answer carries the responder's own address with its flags.
func TestReq10ARPCarriesFlags(t *testing.T) {
	me := mustAddr(t, FlagRC, 0x10, gid(2))
	req := ARP{Op: ARPRequest, SenderHW: mustAddr(t, FlagRC, 0x11, gid(3)),
		SenderIP: netip.MustParseAddr("198.19.0.1"), TargetIP: netip.MustParseAddr("198.19.0.2")}
	b, err := req.Append(nil)
	require.NoError(t, err)
	require.Len(t, b, ARPLen)
	got, err := ParseARP(b)
	require.NoError(t, err)
	assert.Equal(t, req, got)
	rep := ARP{Op: ARPReply, SenderHW: me, SenderIP: got.TargetIP, TargetHW: got.SenderHW, TargetIP: got.SenderIP}
	b, err = rep.Append(nil)
	require.NoError(t, err)
	got, err = ParseARP(b)
	require.NoError(t, err)
	assert.True(t, got.SenderHW.HasRC())
	assert.Equal(t, uint32(0x10), got.SenderHW.QPN())
}

func TestParseARPErrors(t *testing.T) {
	good, err := ARP{Op: ARPRequest, SenderIP: netip.MustParseAddr("1.2.3.4"), TargetIP: netip.MustParseAddr("1.2.3.5")}.Append(nil)
	require.NoError(t, err)
	cases := []struct {
		name string
		mod  func(b []byte) []byte
		want error
	}{
		{"short", func(b []byte) []byte { return b[:ARPLen-1] }, ErrShort},
		{"ethernet hardware", func(b []byte) []byte { b[1] = 1; return b }, ErrEtherType},
		{"ipv6 protocol", func(b []byte) []byte { b[2], b[3] = 0x86, 0xdd; return b }, ErrEtherType},
		{"hlen 6", func(b []byte) []byte { b[4] = 6; return b }, ErrEtherType},
		{"plen 16", func(b []byte) []byte { b[5] = 16; return b }, ErrEtherType},
		{"op 3", func(b []byte) []byte { b[7] = 3; return b }, ErrEtherType},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseARP(c.mod(append([]byte(nil), good...)))
			assert.ErrorIs(t, err, c.want)
		})
	}
	_, err = ARP{SenderIP: netip.MustParseAddr("::1"), TargetIP: netip.MustParseAddr("1.2.3.4")}.Append(nil)
	assert.ErrorIs(t, err, ErrEtherType)
}

// Req 12: the node keeps a record of its connections.
func TestReq12RecordOfConnections(t *testing.T) {
	local := mustAddr(t, FlagRC, 1, gid(1))
	peerA, peerB := mustAddr(t, FlagRC, 2, gid(2)), mustAddr(t, FlagRC, 3, gid(3))
	tb, err := NewTable(TableConfig{Local: local, ReceiveMTU: LinuxReceiveMTU})
	require.NoError(t, err)
	now := time.Unix(100, 0)
	a, pd, err := tb.Connect(peerA, now)
	require.NoError(t, err)
	assert.Equal(t, PrivateData{UDQPN: 1, ReceiveMTU: LinuxReceiveMTU}, pd)
	b, mtu, d, sup, err := tb.Request(peerB, PrivateData{UDQPN: 3, ReceiveMTU: 9000}, now)
	require.NoError(t, err)
	assert.Equal(t, Accept, d)
	assert.Empty(t, sup)
	assert.Equal(t, 8996, mtu)
	all := tb.All()
	require.Len(t, all, 2)
	assert.Equal(t, ConnInfo{ID: a, Peer: peerA.WithoutFlags(), Role: RoleActive, State: StateConnecting, LastActive: now}, all[0])
	assert.Equal(t, ConnInfo{ID: b, Peer: peerB.WithoutFlags(), Role: RolePassive, State: StateConnecting, MTU: 8996, LastActive: now}, all[1])
	_, ok := tb.SendConn(peerA)
	assert.False(t, ok, "no connection is usable before it is up")
	assert.True(t, tb.Connecting(peerB), "strict: the accepted request counts as being set up")
	require.NoError(t, tb.Up(b, now))
	c, ok := tb.SendConn(peerB)
	require.True(t, ok)
	assert.Equal(t, b, c.ID)
	assert.True(t, tb.Close(a))
	assert.False(t, tb.Close(a))
	assert.ErrorIs(t, tb.Up(a, now), ErrUnknownConn)
}

// Req 13: another connection to a peer may be started; the table refuses a
// second outstanding request and caps connections.
func TestReq13RepeatedAndCappedConnections(t *testing.T) {
	local := mustAddr(t, FlagRC, 1, gid(1))
	peer := mustAddr(t, FlagRC, 2, gid(2))
	tb, err := NewTable(TableConfig{Local: local, ReceiveMTU: 2048, MaxConns: 2})
	require.NoError(t, err)
	now := time.Unix(0, 0)
	id, _, err := tb.Connect(peer, now)
	require.NoError(t, err)
	assert.True(t, tb.Connecting(peer))
	_, _, err = tb.Connect(peer, now)
	assert.ErrorIs(t, err, ErrConnLimit)
	_, err = tb.Replied(id, PrivateData{UDQPN: 2, ReceiveMTU: 2048}, now)
	require.NoError(t, err)
	_, _, err = tb.Connect(peer, now) // a second connection is allowed (§3.2 MAY)
	require.NoError(t, err)
	_, _, err = tb.Connect(mustAddr(t, FlagRC, 3, gid(3)), now)
	assert.ErrorIs(t, err, ErrConnLimit)
	_, _, d, _, err := tb.Request(mustAddr(t, 0, 4, gid(4)), PrivateData{UDQPN: 4, ReceiveMTU: 2048}, now)
	assert.Equal(t, RejectLimit, d)
	assert.ErrorIs(t, err, ErrConnLimit)
}

// Req 14, 15, 29, 30, 31: the private data block in every setup message and REJ.
func TestReq14To31PrivateData(t *testing.T) {
	p := PrivateData{UDQPN: 0x00ABCDEF, ReceiveMTU: LinuxReceiveMTU}
	b, err := p.Append(nil)
	require.NoError(t, err)
	assert.Equal(t, []byte{0x00, 0xAB, 0xCD, 0xEF, 0x00, 0x00, 0xFF, 0xF4}, b)
	// Reserved octet ignored on receive, trailing octets ignored (CM padding).
	got, err := ParsePrivateData(append([]byte{0xFF, 0xAB, 0xCD, 0xEF, 0x00, 0x00, 0xFF, 0xF4}, make([]byte, 84)...))
	require.NoError(t, err)
	assert.Equal(t, p, got)
	for n := 0; n < PrivateDataLen; n++ {
		_, err := ParsePrivateData(b[:n])
		assert.ErrorIs(t, err, ErrShort, "length %d", n)
	}
	_, err = PrivateData{UDQPN: 1 << 24}.Append(nil)
	assert.ErrorIs(t, err, ErrQPNRange)
	// The table puts our UD QPN and Receive MTU in what it hands out for
	// REQ, REP and REJ alike.
	tb, err := NewTable(TableConfig{Local: mustAddr(t, FlagRC, 0xABCDEF, gid(1)), ReceiveMTU: LinuxReceiveMTU})
	require.NoError(t, err)
	assert.Equal(t, p, tb.PrivateData())
}

func TestHelloExtension(t *testing.T) {
	sid, err := ServiceID(0x000102, SIDOFED)
	require.NoError(t, err)
	h := Hello{PrivateData{UDQPN: 0x000102, ReceiveMTU: 65524}, Extension{Credits: 64, ServiceID: sid}}
	b, err := h.Append(nil)
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0, 1, 2, 0, 0, 0xFF, 0xF4, 1, 0, 0, 64, 0x10, 0, 0, 0, 0, 0, 1, 2}, b)
	got, err := ParseHello(b)
	require.NoError(t, err)
	assert.Equal(t, h, got)
	// An IB CM's zero padding is no extension.
	_, err = ParseExtension(append(b[:8:8], make([]byte, 84)...))
	assert.ErrorIs(t, err, ErrExtension)
	_, err = ParseHello(b[:HelloLen-1])
	assert.ErrorIs(t, err, ErrExtension)
	_, err = ParseHello(b[:7])
	assert.ErrorIs(t, err, ErrShort)
	// A reject says why (an MPA Reject has no reason field of its own).
	h.RejectReason = RejectReasonConsumer
	b, err = h.Append(nil)
	require.NoError(t, err)
	assert.Equal(t, byte(28), b[9])
	got, err = ParseHello(b)
	require.NoError(t, err)
	assert.Equal(t, h, got)
}

// Req 16: crossing requests; flags zeroed; QPN compared before GID.
func TestReq16ResolveCrossing(t *testing.T) {
	cases := []struct {
		name        string
		local       LinkAddr
		remote      LinkAddr
		outstanding bool
		want        Decision
	}{
		{"no outstanding, lower", mustAddr(t, 0, 1, gid(1)), mustAddr(t, 0, 2, gid(2)), false, Accept},
		{"no outstanding, higher", mustAddr(t, 0, 9, gid(1)), mustAddr(t, 0, 2, gid(2)), false, Accept},
		{"local lower accepts", mustAddr(t, 0, 1, gid(1)), mustAddr(t, 0, 2, gid(2)), true, Accept},
		{"local higher rejects", mustAddr(t, 0, 3, gid(1)), mustAddr(t, 0, 2, gid(2)), true, RejectCrossing},
		{"QPN before GID", mustAddr(t, 0, 1, gid(9)), mustAddr(t, 0, 2, gid(1)), true, Accept},
		{"GID breaks QPN tie", mustAddr(t, 0, 5, gid(9)), mustAddr(t, 0, 5, gid(1)), true, RejectCrossing},
		{"flags ignored (local RC)", mustAddr(t, FlagRC, 1, gid(1)), mustAddr(t, 0, 2, gid(2)), true, Accept},
		{"flags ignored (remote RC)", mustAddr(t, 0, 3, gid(1)), mustAddr(t, FlagRC|FlagUC, 2, gid(2)), true, RejectCrossing},
		{"equal rejects", mustAddr(t, FlagRC, 5, gid(5)), mustAddr(t, 0, 5, gid(5)), true, RejectCrossing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, ResolveCrossing(c.local, c.remote, c.outstanding))
		})
	}
	assert.Equal(t, 28, RejectReasonConsumer)
	assert.Equal(t, uint8(0), RejectReason(Accept, nil))
	assert.Equal(t, uint8(28), RejectReason(RejectCrossing, nil))
	assert.Equal(t, uint8(3), RejectReason(RejectLimit, ErrConnLimit))
	assert.Equal(t, uint8(26), RejectReason(RejectInvalid, ErrMTU))
	assert.Equal(t, uint8(8), RejectReason(RejectInvalid, ErrServiceID))
	assert.Equal(t, uint8(5), RejectReason(RejectInvalid, ErrExtension))
}

// node is a peer model for crossing scenarios: a Table plus its REQs.
type node struct {
	tb *Table
	la LinkAddr
}

func newNode(t *testing.T, qpn uint32, p Policy) node {
	la := mustAddr(t, FlagRC, qpn, gid(byte(qpn)))
	tb, err := NewTable(TableConfig{Local: la, ReceiveMTU: 65524, Policy: p})
	require.NoError(t, err)
	return node{tb, la}
}

// cross runs two crossing requests between x and y. replyFirst says whether
// each side's answer to the other's request arrives before it processes the
// peer's request (REP and REQ travel on different TCP connections).
func cross(t *testing.T, x, y node, xReplyBeforeReq bool) {
	now := time.Unix(1, 0)
	xid, xpd, err := x.tb.Connect(y.la, now)
	require.NoError(t, err)
	yid, ypd, err := y.tb.Connect(x.la, now)
	require.NoError(t, err)
	// y handles x's request first.
	yAcc, _, yd, _, err := y.tb.Request(x.la.WithoutFlags(), xpd, now)
	require.NoError(t, err)
	deliverToX := func() {
		if yd == Accept {
			_, err := x.tb.Replied(xid, y.tb.PrivateData(), now)
			require.NoError(t, err)
			require.NoError(t, y.tb.Up(yAcc, now))
		} else {
			require.NoError(t, x.tb.Rejected(xid, yd == RejectCrossing))
		}
	}
	if xReplyBeforeReq {
		deliverToX()
	}
	xAcc, _, xd, _, err := x.tb.Request(y.la.WithoutFlags(), ypd, now)
	require.NoError(t, err)
	if xd == Accept {
		_, err := y.tb.Replied(yid, x.tb.PrivateData(), now)
		require.NoError(t, err)
		require.NoError(t, x.tb.Up(xAcc, now))
	} else {
		require.NoError(t, y.tb.Rejected(yid, xd == RejectCrossing))
	}
	if !xReplyBeforeReq {
		deliverToX()
	}
}

func TestReq16CrossingStrictBothOrders(t *testing.T) {
	for _, replyFirst := range []bool{false, true} {
		for _, lowFirst := range []bool{false, true} {
			lo, hi := newNode(t, 1, PolicyStrict), newNode(t, 2, PolicyStrict)
			x, y := hi, lo
			if lowFirst {
				x, y = lo, hi
			}
			cross(t, x, y, replyFirst)
			// Exactly one connection survives, set up by the higher address,
			// and both ends send on it.
			require.Len(t, lo.tb.All(), 1, "low: %+v", lo.tb.All())
			require.Len(t, hi.tb.All(), 1, "high: %+v", hi.tb.All())
			assert.Equal(t, RolePassive, lo.tb.All()[0].Role)
			assert.Equal(t, RoleActive, hi.tb.All()[0].Role)
			_, ok := lo.tb.SendConn(hi.la)
			assert.True(t, ok)
			_, ok = hi.tb.SendConn(lo.la)
			assert.True(t, ok)
		}
	}
}

// A compat (Linux-like) node accepts everything; against another compat node
// each side sends on its own connection; against a strict node the compat
// node's request is rejected if it is the lower one, and it then sends on the
// strict node's connection.
func TestCrossingCompat(t *testing.T) {
	a, b := newNode(t, 1, PolicyCompat), newNode(t, 2, PolicyCompat)
	cross(t, a, b, false)
	require.Len(t, a.tb.All(), 2)
	ca, _ := a.tb.SendConn(b.la)
	cb, _ := b.tb.SendConn(a.la)
	assert.Equal(t, RoleActive, ca.Role)
	assert.Equal(t, RoleActive, cb.Role)

	p := mustAddr(t, 0, 7, gid(7))
	_, _, d, _, err := a.tb.Request(p, PrivateData{UDQPN: 7, ReceiveMTU: 2048}, time.Unix(0, 0))
	require.NoError(t, err)
	require.Equal(t, Accept, d)
	assert.False(t, a.tb.Connecting(p), "compat: the peer's connection is not one we send on")

	lo, hi := newNode(t, 1, PolicyCompat), newNode(t, 2, PolicyStrict)
	cross(t, lo, hi, false)
	c, ok := lo.tb.SendConn(hi.la)
	require.True(t, ok)
	assert.Equal(t, RolePassive, c.Role, "compat node uses the strict peer's connection after Consumer Reject")
	c, ok = hi.tb.SendConn(lo.la)
	require.True(t, ok)
	assert.Equal(t, RoleActive, c.Role)

	// Strict node lower than a compat node: the compat node accepts the strict
	// node's request and the strict node rejects the compat one's; strict uses
	// its own, compat uses strict's after the reject.
	lo, hi = newNode(t, 1, PolicyStrict), newNode(t, 2, PolicyCompat)
	cross(t, lo, hi, true)
	c, ok = hi.tb.SendConn(lo.la)
	require.True(t, ok)
	assert.Equal(t, RoleActive, c.Role)
	c, ok = lo.tb.SendConn(hi.la)
	require.True(t, ok)
}

// A peer that opens a new connection while an old one is recorded has
// abandoned the old one: it is superseded.
func TestRequestSupersedes(t *testing.T) {
	n := newNode(t, 5, PolicyStrict)
	peer := mustAddr(t, 0, 9, gid(9))
	now := time.Unix(0, 0)
	id1, _, d, _, err := n.tb.Request(peer, PrivateData{UDQPN: 9, ReceiveMTU: 2048}, now)
	require.NoError(t, err)
	require.Equal(t, Accept, d)
	require.NoError(t, n.tb.Up(id1, now))
	id2, _, d, sup, err := n.tb.Request(peer, PrivateData{UDQPN: 9, ReceiveMTU: 2048}, now)
	require.NoError(t, err)
	require.Equal(t, Accept, d)
	assert.Equal(t, []ConnID{id1}, sup)
	_, ok := n.tb.Conn(id1)
	assert.False(t, ok)
	_, ok = n.tb.Conn(id2)
	assert.True(t, ok)
}

func TestRequestInvalid(t *testing.T) {
	n := newNode(t, 5, PolicyStrict)
	now := time.Unix(0, 0)
	_, _, d, _, err := n.tb.Request(mustAddr(t, 0, 9, gid(9)), PrivateData{UDQPN: 8, ReceiveMTU: 2048}, now)
	assert.Equal(t, RejectInvalid, d)
	assert.ErrorIs(t, err, ErrExtension)
	_, _, d, _, err = n.tb.Request(mustAddr(t, 0, 9, gid(9)), PrivateData{UDQPN: 9, ReceiveMTU: 71}, now)
	assert.Equal(t, RejectInvalid, d)
	assert.ErrorIs(t, err, ErrMTU)
	assert.Empty(t, n.tb.All())
	id, _, err := n.tb.Connect(mustAddr(t, 0, 9, gid(9)), now)
	require.NoError(t, err)
	_, err = n.tb.Replied(id, PrivateData{UDQPN: 9, ReceiveMTU: 10}, now)
	assert.ErrorIs(t, err, ErrMTU)
	assert.Empty(t, n.tb.All())
	id, _, err = n.tb.Connect(mustAddr(t, 0, 9, gid(9)), now)
	require.NoError(t, err)
	_, err = n.tb.Replied(id, PrivateData{UDQPN: 7, ReceiveMTU: 2048}, now)
	assert.ErrorIs(t, err, ErrExtension)
	_, err = n.tb.Replied(id, PrivateData{UDQPN: 9, ReceiveMTU: 2048}, now)
	assert.ErrorIs(t, err, ErrUnknownConn)
	assert.ErrorIs(t, n.tb.Rejected(id, true), ErrUnknownConn)
	_, err = NewTable(TableConfig{ReceiveMTU: 71})
	assert.ErrorIs(t, err, ErrMTU)
}

// Req 17, 18: teardown when the interface goes, when the resolution entry
// expires, or when idle.
func TestReq17And18Teardown(t *testing.T) {
	n := newNode(t, 5, PolicyStrict)
	t0 := time.Unix(1000, 0)
	p1, p2 := mustAddr(t, FlagRC, 6, gid(6)), mustAddr(t, FlagRC, 7, gid(7))
	a, _, err := n.tb.Connect(p1, t0)
	require.NoError(t, err)
	_, err = n.tb.Replied(a, PrivateData{UDQPN: 6, ReceiveMTU: 2048}, t0)
	require.NoError(t, err)
	b, _, _, _, err := n.tb.Request(p2, PrivateData{UDQPN: 7, ReceiveMTU: 2048}, t0)
	require.NoError(t, err)
	require.NoError(t, n.tb.Up(b, t0))
	n.tb.Touch(b, t0.Add(50*time.Second))
	assert.Equal(t, []ConnID{a}, n.tb.Idle(t0.Add(60*time.Second), 60*time.Second))
	assert.Equal(t, []ConnID{a, b}, n.tb.Idle(t0.Add(110*time.Second), 60*time.Second))
	assert.Equal(t, []ConnID{b}, n.tb.Forget(p2))
	assert.Equal(t, []ConnID{a, b}, n.tb.CloseAll())
	assert.Empty(t, n.tb.All())
}

// Req 19, 20: Service-ID Type and Reserved are zero; both prefixes accepted.
func TestReq19And20ServiceID(t *testing.T) {
	ofed, err := ServiceID(0x123456, SIDOFED)
	require.NoError(t, err)
	assert.Equal(t, uint64(0x1000000000123456), ofed, "Linux IPOIB_CM_IETF_ID | qpn")
	lit, err := ServiceID(0x123456, SIDLiteral)
	require.NoError(t, err)
	assert.Equal(t, uint64(0x0100000000123456), lit, "RFC 4755 §3.5 figure: 00000001 | Type | Reserved | QPN")
	_, err = ServiceID(1<<24, SIDOFED)
	assert.ErrorIs(t, err, ErrQPNRange)
	_, err = ServiceID(1, SIDMode(7))
	assert.ErrorIs(t, err, ErrServiceID)

	bad := []struct {
		name string
		sid  uint64
	}{
		{"type 1", 0x1001000000000001},
		{"type 0x80 literal", 0x0180000000000001},
		{"reserved low bit", 0x1000000001000001},
		{"reserved high bit", 0x0100008000000001},
		{"prefix 0", 0x0000000000000001},
		{"prefix 0x11", 0x1100000000000001},
		{"prefix 0x02", 0x0200000000000001},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ParseServiceID(c.sid)
			assert.ErrorIs(t, err, ErrServiceID)
		})
	}
	assert.Equal(t, "ofed", SIDOFED.String())
	assert.Equal(t, "literal-rfc", SIDLiteral.String())
}

// Req 22: Type is the EtherType; Reserved 0 on transmit; strict/lenient receive.
func TestReq22Encapsulation(t *testing.T) {
	for _, et := range []uint16{EtherTypeIPv4, EtherTypeIPv6} {
		b := EncapHeader{EtherType: et}.Append(nil)
		assert.Equal(t, []byte{byte(et >> 8), byte(et), 0, 0}, b)
		h, p, err := ParseEncap(append(b, 0x45), true)
		require.NoError(t, err)
		assert.Equal(t, et, h.EtherType)
		assert.Equal(t, []byte{0x45}, p)
		var put [4]byte
		put[2], put[3] = 9, 9
		EncapHeader{EtherType: et}.Put(put[:])
		assert.Equal(t, b, put[:])
	}
	_, _, err := ParseEncap([]byte{8, 0, 0, 1}, true)
	assert.ErrorIs(t, err, ErrReserved)
	h, _, err := ParseEncap([]byte{8, 0, 0, 1}, false)
	require.NoError(t, err)
	assert.Equal(t, EtherTypeIPv4, h.EtherType)
	_, _, err = ParseEncap([]byte{8, 0, 0}, false)
	assert.ErrorIs(t, err, ErrShort)

	cases := []struct {
		et   uint16
		ch   Channel
		want error
	}{
		{EtherTypeIPv4, ChannelConnected, nil},
		{EtherTypeIPv6, ChannelConnected, nil},
		{EtherTypeIPv4, ChannelDatagram, nil},
		{EtherTypeIPv6, ChannelDatagram, nil},
		{EtherTypeARP, ChannelDatagram, nil},
		{EtherTypeARP, ChannelConnected, ErrEtherType}, // req 35: resolution over UD only
		{EtherTypeCredit, ChannelConnected, nil},
		{EtherTypeCredit, ChannelDatagram, ErrEtherType},
		{0x8100, ChannelConnected, ErrEtherType},
		{0x0000, ChannelDatagram, ErrEtherType},
	}
	for _, c := range cases {
		err := CheckEtherType(c.et, c.ch)
		if c.want == nil {
			assert.NoError(t, err, "%#04x on %d", c.et, c.ch)
		} else {
			assert.ErrorIs(t, err, c.want, "%#04x on %d", c.et, c.ch)
		}
	}
}

// Req 23, 24, 25, 26, 27, 28: MTU negotiation.
func TestReq23To28MTU(t *testing.T) {
	assert.Equal(t, 2044, DefaultMTU)
	assert.Equal(t, 2048, DefaultReceiveMTU)
	cases := []struct {
		local, remote uint32
		want          int
		err           error
	}{
		{65524, 65524, 65520, nil}, // Linux on both ends
		{65524, 2048, 2044, nil},   // the smaller one wins, minus 4
		{2048, 65524, 2044, nil},   // symmetric: requester accepts smaller (req 27)
		{9004, 1500, 1496, nil},
		{72, 65524, 68, nil},                // exactly the IPv4 minimum
		{71, 65524, 0, ErrMTU},              // below it (req 23)
		{65524, 0, 0, ErrMTU},               // peer advertising nothing
		{1 << 31, 1 << 31, MaxIPv4MTU, nil}, // capped for IPv4's 16-bit length
	}
	for _, c := range cases {
		got, err := ConnMTU(c.local, c.remote)
		if c.err != nil {
			assert.ErrorIs(t, err, c.err, "%d/%d", c.local, c.remote)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, c.want, got, "%d/%d", c.local, c.remote)
	}
	assert.True(t, SupportsIPv6(1280))
	assert.False(t, SupportsIPv6(1279))
	assert.Equal(t, 68, MinMTU(EtherTypeIPv4))
	assert.Equal(t, 1280, MinMTU(EtherTypeIPv6))
	assert.Equal(t, 0, MinMTU(EtherTypeARP))
}

func TestControlFormat(t *testing.T) {
	b := Control{Kind: ControlGrant, Grant: 0x01020304}.Append(nil)
	assert.Equal(t, []byte{0x88, 0xB5, 0, 0, 1, 1, 0, 0, 1, 2, 3, 4}, b)
	h, p, err := ParseEncap(b, true)
	require.NoError(t, err)
	assert.Equal(t, EtherTypeCredit, h.EtherType)
	u, err := ParseControl(p)
	require.NoError(t, err)
	assert.Equal(t, uint32(0x01020304), u.Grant)
	r := Control{Kind: ControlReady}.Append(nil)
	assert.Equal(t, []byte{0x88, 0xB5, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0}, r)
	c, err := ParseControl(r[4:])
	require.NoError(t, err)
	assert.Equal(t, Control{Kind: ControlReady}, c)
	for _, bad := range [][]byte{{1, 1, 0, 0, 0, 0, 0}, {2, 1, 0, 0, 0, 0, 0, 1}, {1, 3, 0, 0, 0, 0, 0, 1}, {1, 2, 0, 0, 0, 0, 0, 1}, {1, 1, 0, 0, 0, 0, 0, 0}} {
		_, err := ParseControl(bad)
		assert.Error(t, err)
		assert.True(t, errors.Is(err, ErrShort) || errors.Is(err, ErrCredits))
	}
}

func TestFlowControlRules(t *testing.T) {
	_, err := NewFlowControl(1, 8)
	assert.ErrorIs(t, err, ErrCredits)
	f, err := NewFlowControl(8, 4)
	require.NoError(t, err)
	assert.True(t, f.TrySendData())
	assert.True(t, f.TrySendData())
	assert.True(t, f.TrySendData())
	assert.False(t, f.TrySendData(), "the last credit is kept for an update")
	assert.Equal(t, 1, f.Credits())
	_, ok := f.TakeUpdate()
	assert.False(t, ok, "nothing owed")
	require.NoError(t, f.Received(true))
	u, ok := f.TakeUpdate() // threshold 8/4 = 2
	assert.False(t, ok)
	require.NoError(t, f.Received(true))
	u, ok = f.TakeUpdate()
	require.True(t, ok)
	assert.Equal(t, uint32(2), u.Grant)
	assert.Equal(t, 0, f.Credits())
	assert.ErrorIs(t, f.Granted(Control{Kind: ControlGrant, Grant: 5}), ErrCredits, "beyond the peer's depth")
	assert.ErrorIs(t, f.Granted(Control{Kind: ControlReady}), ErrCredits)
	_, err = f.TakeReady()
	assert.ErrorIs(t, err, ErrCredits, "no credit left for ready")
	require.NoError(t, f.Granted(Control{Kind: ControlGrant, Grant: 4}))
	assert.Equal(t, 4, f.Credits())
	for i := 0; i < 8; i++ {
		require.NoError(t, f.Received(true))
	}
	assert.ErrorIs(t, f.Received(true), ErrCredits, "peer overran our receive queue")
}
