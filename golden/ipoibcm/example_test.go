package ipoibcm_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/openiwarp/openiwarp/golden/ipoibcm"
)

// The iWARP form of a link-layer address: RC flag, endpoint ID, underlay IPv4.
func ExampleNewUnderlayLinkAddr() {
	a, _ := ipoibcm.NewUnderlayLinkAddr(ipoibcm.FlagRC, 0x000007, netip.MustParseAddr("198.18.0.2"))
	fmt.Println(a)
	fmt.Println(a.HasRC(), a.QPN(), a.Underlay())
	// Output:
	// 80:00:00:07:00:00:00:00:00:00:00:00:00:00:ff:ff:c6:12:00:02
	// true 7 198.18.0.2
}

// Both Service-ID forms for UD QPN 0x48, and parsing either back.
func ExampleServiceID() {
	ofed, _ := ipoibcm.ServiceID(0x48, ipoibcm.SIDOFED)
	lit, _ := ipoibcm.ServiceID(0x48, ipoibcm.SIDLiteral)
	fmt.Printf("%#016x %#016x\n", ofed, lit)
	qpn, mode, _ := ipoibcm.ParseServiceID(lit)
	fmt.Printf("%#x %v\n", qpn, mode)
	// Output:
	// 0x1000000000000048 0x0100000000000048
	// 0x48 literal-rfc
}

// Private data as Linux sends it, and the connection MTU it yields against a
// 9000-octet peer.
func ExampleParsePrivateData() {
	p, _ := ipoibcm.ParsePrivateData([]byte{0, 0, 0, 0x48, 0, 0, 0xff, 0xf4})
	mtu, _ := ipoibcm.ConnMTU(p.ReceiveMTU, 9004)
	fmt.Println(p.UDQPN, p.ReceiveMTU, mtu)
	// Output: 72 65524 9000
}

// Crossing requests: the lower address accepts, the higher one rejects.
func ExampleResolveCrossing() {
	lo, _ := ipoibcm.NewUnderlayLinkAddr(ipoibcm.FlagRC, 1, netip.MustParseAddr("198.18.0.1"))
	hi, _ := ipoibcm.NewUnderlayLinkAddr(ipoibcm.FlagRC, 2, netip.MustParseAddr("198.18.0.2"))
	fmt.Println(ipoibcm.ResolveCrossing(lo, hi, true))
	fmt.Println(ipoibcm.ResolveCrossing(hi, lo, true))
	// Output:
	// accept
	// reject (crossing, consumer reject)
}

// A responder's table accepting a request and choosing the send connection.
func ExampleTable() {
	me, _ := ipoibcm.NewUnderlayLinkAddr(ipoibcm.FlagRC, 2, netip.MustParseAddr("198.18.0.2"))
	peer, _ := ipoibcm.NewUnderlayLinkAddr(0, 1, netip.MustParseAddr("198.18.0.1"))
	tb, _ := ipoibcm.NewTable(ipoibcm.TableConfig{Local: me, ReceiveMTU: ipoibcm.LinuxReceiveMTU})
	now := time.Now()
	id, mtu, d, _, _ := tb.Request(peer, ipoibcm.PrivateData{UDQPN: 1, ReceiveMTU: 2048}, now)
	_ = tb.Up(id, now)
	c, ok := tb.SendConn(peer)
	fmt.Println(d, mtu, ok, c.Role)
	// Output: accept 2044 true passive
}

// Credits: a sender with 4 credits may send 3 data messages; the receiver
// grants them back once it owes a quarter of its depth.
func ExampleFlowControl() {
	tx, _ := ipoibcm.NewFlowControl(8, 4)
	n := 0
	for tx.TrySendData() {
		n++
	}
	rx, _ := ipoibcm.NewFlowControl(4, 8)
	for i := 0; i < n; i++ {
		_ = rx.Received(true)
	}
	u, ok := rx.TakeUpdate()
	fmt.Println(n, u.Grant, ok)
	_ = tx.Granted(u)
	fmt.Println(tx.Credits())
	// Output:
	// 3 3 true
	// 4
}
