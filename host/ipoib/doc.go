// Package ipoib is an IP link over openiwarp reliable connections: IP over
// InfiniBand connected mode (RFC 4755, the wire formats in
// golden/ipoibcm) mapped onto iWARP through host/verbs.
//
// A Link owns a TUN interface, resolves neighbours with ARP and IPv6
// neighbour discovery over a UDP datagram channel on the underlay network
// (standing in for the UD QP), opens one RC connection per peer on demand
// with the RFC 4755 private data in the MPA Request/Reply, carries IPv4 and
// IPv6 packets with the 4-octet encapsulation header as Sends within each
// connection's negotiated MTU, keeps a receive posted for every Send with
// credits (iWARP has no receiver-not-ready), tears idle connections down,
// and sends broadcast and multicast over the datagram channel.
//
// Data moves without inline copies: each connection registers a ring of
// send frames. The transmit loop reads each packet from the TUN device
// straight into a frame of the connection the previous packet went on
// (behind room for the header), so a stream to one peer is never copied on
// the way out; a packet for another peer is encapsulated into a free frame
// of its own connection. A packet is posted as a signaled Send whose one
// SGE is the frame, by the goroutine that read it when a credit is free and
// nothing waits before it, else by the connection's transmit goroutine once
// credits come back; the completion
// returns the frame to the ring, so the card is done with a frame before it
// is reused. A packet that finds no free frame is
// dropped and counted, as a full NIC ring drops it. Received Sends land in
// a registered ring of receive buffers and go to the TUN device from there.
//
// cmd/ipoibcm is its command line; test/ipoib runs links in network
// namespaces.
package ipoib
