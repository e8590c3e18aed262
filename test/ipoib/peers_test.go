package ipoib

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openiwarp/openiwarp/golden/ipoibcm"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Four nodes on a bridge: a and b ordinary, c with a 9000-octet Receive MTU
// sending the RFC's literal Service-ID, d UD-only. Each subtest checks one
// property of the link; the misbehaving peers run while a and b move data.
func TestPeers(t *testing.T) {
	e := NewEnv(t, 4)
	a, b, c, d := e.Nodes[0], e.Nodes[1], e.Nodes[2], e.Nodes[3]
	da := e.Start(a)
	db := e.Start(b)
	dc := e.Start(c, "-mtu", "9000", "-recv-mtu", "9004", "-sid", "literal-rfc")
	dd := e.Start(d, "-ud-only")

	t.Run("PerConnectionMTU", func(t *testing.T) {
		// a's interface MTU is 65520 but the connection to c is min(65524, 9004) - 4.
		out, err := a.Ping(c.V4.String(), "-M", "do", "-s", "8972")
		require.NoError(t, err, out)
		assert.Contains(t, out, "3 received")
		out, _ = a.Ping(c.V4.String(), "-M", "do", "-s", "8973")
		assert.Contains(t, out, "mtu = 9000", "a learns c's MTU from the ICMP error the link generates:\n%s", out)
		out, err = a.Ping(c.V4.String(), "-M", "dont", "-s", "20000")
		require.NoError(t, err, "IPv4 without DF is fragmented to the connection MTU:\n%s", out)
		_, err = Transfer(a.NS, c.NS, c.V4, 5101, 8<<20, 11)
		require.NoError(t, err)
		_, err = Transfer(a.NS, c.NS, c.V6, 5102, 2<<20, 12)
		require.NoError(t, err, "IPv6 learns the MTU from packet too big")
		assert.True(t, dc.WaitLog("up (passive, MTU 9000)", time.Second), dc.Log())
		assert.True(t, da.WaitLog("up (active, MTU 9000)", time.Second), da.Log())
	})

	t.Run("LiteralServiceIDAccepted", func(t *testing.T) {
		// c sends the literal RFC form; b, which sends the OFED form, accepts it.
		out, err := c.Ping(b.V4.String())
		require.NoError(t, err, out)
		assert.True(t, db.WaitLog("with 00:00:01:02:", time.Second), "b accepted c's request:\n%s", db.Log())
	})

	t.Run("UDOnlyPeer", func(t *testing.T) {
		out, err := a.Ping(d.V4.String())
		require.NoError(t, err, out)
		out, err = a.Ping(d.V6.String(), "-6")
		require.NoError(t, err, out)
		out, _ = a.Ping(d.V4.String(), "-M", "do", "-s", "2100")
		assert.Contains(t, out, "mtu = 2044", "unicast to a UD-only peer is limited to the UD MTU:\n%s", out)
		_, err = Transfer(a.NS, d.NS, d.V4, 5103, 4<<20, 13)
		require.NoError(t, err)
		assert.NotContains(t, dd.Log(), "connection", "a UD-only node has no connections")
		assert.NotContains(t, da.Log(), "with 00:00:01:03:", "nobody connects to a UD-only node")
	})

	t.Run("MisbehavingPeers", func(t *testing.T) {
		// a and b move data the whole time; nothing below may disturb it.
		var wg sync.WaitGroup
		var bulkErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, bulkErr = Transfer(a.NS, b.NS, b.V4, 5104, 48<<20, 14)
		}()
		target, me := uint32(b.EPID), uint32(0x777)

		// Private data too short to hold the RFC 4755 block: rejected, Unsupported.
		r, err := DialRaw(c.NS, b.Underlay, 4756, []byte{1, 2, 3})
		require.ErrorIs(t, err, mpa.ErrRejected)
		assert.Equal(t, uint8(ipoibcm.RejectReasonUnsupported), r.Hello.RejectReason)
		assert.Equal(t, target, r.Hello.UDQPN, "a REJ carries the sender's UD QPN (§3.2)")

		// A Service-ID naming another endpoint: rejected, Invalid Service ID.
		r, err = DialRaw(c.NS, b.Underlay, 4756, HelloFor(0x999, me, 9004, 8, ipoibcm.SIDOFED))
		require.ErrorIs(t, err, mpa.ErrRejected)
		assert.Equal(t, uint8(ipoibcm.RejectReasonInvalidServiceID), r.Hello.RejectReason)

		// A Receive MTU that cannot carry IPv4: rejected, Invalid MTU.
		r, err = DialRaw(c.NS, b.Underlay, 4756, HelloFor(target, me, 40, 8, ipoibcm.SIDOFED))
		require.ErrorIs(t, err, mpa.ErrRejected)
		assert.Equal(t, uint8(ipoibcm.RejectReasonInvalidMTU), r.Hello.RejectReason)

		// A packet over the negotiated MTU (min(1504, 65524) - 4 = 1500): dropped.
		r, err = DialRaw(c.NS, b.Underlay, 4756, HelloFor(target, me, 1504, 8, ipoibcm.SIDLiteral))
		require.NoError(t, err)
		require.NoError(t, r.Start(8, 1504))
		require.NoError(t, r.Open())
		require.NoError(t, r.Send(IPv4Packet(c.V4, b.V4, 1000)))
		require.NoError(t, r.Send(IPv4Packet(c.V4, b.V4, 3000)))
		why, done := r.WaitDone(10 * time.Second)
		require.True(t, done, "b keeps a connection that sent an oversize packet")
		t.Logf("oversize packet: connection ended: %v", why)
		assert.True(t, db.WaitLog("over the connection MTU 1500", time.Second), db.Log())

		// Sends beyond the credits granted: b drops the connection before
		// any Send can meet an empty receive queue.
		r, err = DialRaw(c.NS, b.Underlay, 4756, HelloFor(target, me+1, 65524, 3, ipoibcm.SIDOFED))
		require.NoError(t, err)
		require.NoError(t, r.Start(3, 65524))
		require.NoError(t, r.Open())
		for i := 0; i < 400; i++ {
			if r.Send(IPv4Packet(c.V4, b.V4, 100)) != nil {
				break
			}
		}
		_, done = r.WaitDone(10 * time.Second)
		require.True(t, done, "b keeps a connection that ignores its credits")
		// Caught by b's credit accounting, or by its engine if the burst
		// outran the reposting: either way that connection alone goes.
		assert.True(t, db.WaitLine(time.Second, "with 00:00:07:78:", "dropped"), db.Log())

		// Abrupt close in the middle of an FPDU on an established connection.
		r, err = DialRaw(c.NS, b.Underlay, 4756, HelloFor(target, me+2, 65524, 8, ipoibcm.SIDOFED))
		require.NoError(t, err)
		require.NoError(t, r.Start(8, 65524))
		require.NoError(t, r.Open())
		_, err = r.Conn.Write([]byte{0x00, 0x40, 0x01, 0x02})
		require.NoError(t, err)
		require.NoError(t, r.Conn.SetLinger(0))
		require.NoError(t, r.Conn.Close()) // RST
		assert.True(t, db.WaitLine(5*time.Second, "with 00:00:07:79:", "dropped"), db.Log())

		// Garbage and an impostor on the datagram channel: an ARP reply from
		// c's underlay address claiming a's overlay address with a's link
		// address is refused (the address does not belong to its sender).
		aLink, err := ipoibcm.NewUnderlayLinkAddr(ipoibcm.FlagRC, uint32(a.EPID), a.Underlay)
		require.NoError(t, err)
		spoof, err := ipoibcm.ARP{Op: ipoibcm.ARPReply, SenderHW: aLink, SenderIP: a.V4, TargetIP: b.V4}.Append(
			ipoibcm.EncapHeader{EtherType: ipoibcm.EtherTypeARP}.Append(nil))
		require.NoError(t, err)
		require.NoError(t, SendDatagrams(c.NS, b.Underlay, 4755,
			nil, []byte{8}, []byte{0x08, 0x06, 0, 0, 1, 2, 3}, []byte{0x88, 0xb5, 0, 0, 1, 1, 0, 0, 0, 0, 0, 9},
			append([]byte{0x86, 0xdd, 0, 0}, make([]byte, 60)...), spoof))
		assert.True(t, db.WaitLine(5*time.Second, "does not belong to sender 198.18.0.3"), db.Log())

		// A close in the middle of setup.
		r, err = DialRaw(c.NS, b.Underlay, 4756, HelloFor(target, me+3, 65524, 8, ipoibcm.SIDOFED))
		require.NoError(t, err)
		r.Conn.Close()

		wg.Wait()
		require.NoError(t, bulkErr, "the transfer between a and b survives every misbehaving peer")
		out, err := a.Ping(b.V4.String())
		require.NoError(t, err, out)
		out, err = c.Ping(b.V4.String())
		require.NoError(t, err, "c's own daemon still reaches b:\n%s", out)
		assert.Equal(t, 0, strings.Count(db.Log(), "panic"))
	})
	for _, dm := range []*Daemon{da, db, dc, dd} {
		require.NoError(t, dm.Stop(), "clean exit")
	}
}

// Both ends start sending to each other at once and answer requests slowly,
// so their requests cross; RFC 4755 §3.3 leaves one connection, and idle
// connections are torn down and set up again on demand.
func TestCrossingAndIdle(t *testing.T) {
	e := NewEnv(t, 2)
	a, b := e.Nodes[0], e.Nodes[1]
	da := e.Start(a, "-idle", "1500ms", "-accept-delay", "300ms")
	db := e.Start(b, "-idle", "1500ms", "-accept-delay", "300ms")
	var wg sync.WaitGroup
	var errA, errB error
	var outA, outB string
	wg.Add(2)
	go func() { defer wg.Done(); outA, errA = a.Ping(b.V4.String()) }()
	go func() { defer wg.Done(); outB, errB = b.Ping(a.V4.String()) }()
	wg.Wait()
	require.NoError(t, errA, outA)
	require.NoError(t, errB, outB)
	up := func(d *Daemon) int { return strings.Count(d.Log(), " up (") }
	closed := func(d *Daemon) int { return strings.Count(d.Log(), " closed") + strings.Count(d.Log(), " dropped") }
	// b (the higher address) rejects a's request with Consumer Reject and
	// a sends on b's connection.
	assert.True(t, db.WaitLine(time.Second, "request from 198.18.0.1 rejected", "crossing"), db.Log())
	assert.True(t, da.WaitLine(time.Second, "reason 28", "using the peer's connection"), da.Log())
	assert.Equal(t, 1, up(da)-closed(da), "a ends with one connection:\n%s", da.Log())
	assert.Equal(t, 1, up(db)-closed(db), "b ends with one connection:\n%s", db.Log())

	require.True(t, da.WaitLog("idle for 1.5s: tearing down", 5*time.Second) || db.WaitLog("idle for 1.5s: tearing down", time.Second),
		"an idle connection is torn down:\n%s\n%s", da.Log(), db.Log())
	out, err := a.Ping(b.V4.String())
	require.NoError(t, err, "a new connection is set up on demand:\n%s", out)
	require.NoError(t, da.Stop())
	require.NoError(t, db.Stop())
}

// Two compat (Linux-like) nodes accept every request and each sends on the
// connection it set up itself, so crossing requests leave two connections.
func TestCrossingCompat(t *testing.T) {
	e := NewEnv(t, 2)
	a, b := e.Nodes[0], e.Nodes[1]
	da := e.Start(a, "-policy", "compat", "-accept-delay", "300ms")
	db := e.Start(b, "-policy", "compat", "-accept-delay", "300ms")
	var wg sync.WaitGroup
	var errA, errB error
	wg.Add(2)
	go func() { defer wg.Done(); _, errA = a.Ping(b.V4.String()) }()
	go func() { defer wg.Done(); _, errB = b.Ping(a.V4.String()) }()
	wg.Wait()
	require.NoError(t, errA)
	require.NoError(t, errB)
	for _, d := range []*Daemon{da, db} {
		assert.True(t, d.WaitLine(time.Second, "up (active"), d.Log())
		assert.True(t, d.WaitLine(time.Second, "up (passive"), d.Log())
		assert.NotContains(t, d.Log(), "crossing")
	}
	_, err := Transfer(a.NS, b.NS, b.V4, 5301, 4<<20, 31)
	require.NoError(t, err)
}
