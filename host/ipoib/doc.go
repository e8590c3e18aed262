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
// cmd/ipoibcm is its command line; test/ipoib runs links in network
// namespaces.
package ipoib
