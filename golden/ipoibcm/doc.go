// Package ipoibcm is the golden model of IP over InfiniBand connected mode
// (RFC 4755) and of its mapping onto iWARP reliable connections.
//
// It covers the wire formats and the decisions RFC 4755 asks of a node:
//
//   - the 20-octet link-layer address with its connected-mode flags (§3.1),
//     [LinkAddr];
//   - the Service-ID built from the UD QPN (§3.5), in the RFC's literal form
//     and in the form Linux/OFED uses, [ServiceID] and [ParseServiceID];
//   - the 8-octet private data of every connection-setup message (§3.2, §6),
//     [PrivateData], plus openiwarp's extension after it, [Extension];
//   - the 4-octet encapsulation header (§4, RFC 4391), [EncapHeader];
//   - the per-connection MTU (§5.1), [ConnMTU];
//   - the crossing-connection tie-break (§3.3), [ResolveCrossing];
//   - the record of connections a node takes part in, which connection to send
//     on, and teardown (§3.2, §3.4), [Table];
//   - receive-queue credits, which iWARP needs because it has no
//     receiver-not-ready mechanism, [FlowControl] and [Control].
//
// On iWARP (see the digest's §13) the UD QPN becomes a 24-bit endpoint ID that
// names the node's datagram side channel, the GID becomes the node's underlay
// IP address (IPv4 as ::ffff:a.b.c.d), the CM REQ/REP/REJ become the MPA
// Request/Reply with the private data inside, and the Service-ID travels in
// the [Extension] so a responder can check it was the intended target.
//
// Every parser takes untrusted bytes and reports what was wrong with an error
// that matches one of the Err* sentinels under errors.Is. The package imports
// only the standard library.
package ipoibcm
