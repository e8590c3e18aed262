// Package pcapio reads and writes packet captures of TCP connections, the
// raw material of openiwarp's capture tools (cmd/iwdump) and of the tests
// that check our MPA traffic with Wireshark's iWARP dissectors.
//
// It has four parts:
//
//   - Writer writes a classic pcap file, and AppendFrame builds the
//     Ethernet/IPv4 or IPv6/TCP frames that go in it, with correct lengths,
//     checksums and sequence numbers.
//   - Record and RecordPair wrap a net.Conn so that everything written and
//     read through it lands in a capture as the segments of one TCP
//     connection: handshake first, one segment per Write, FIN at Close.
//   - Reader reads pcap (either byte order, micro- or nanosecond stamps) and
//     pcapng (several sections and interfaces), and DecodeTCP takes a frame
//     of any supported link type (Ethernet with 802.1Q tags, Linux cooked
//     SLL and SLL2, raw IP, BSD loopback) through IPv4 or IPv6 to its TCP
//     segment.
//   - Assembler puts the segments of each connection back into two ordered
//     byte streams, dropping retransmissions, reporting gaps and bounding the
//     memory it holds for out-of-order data.
//
// Everything that reads a capture treats it as untrusted: a malformed or
// truncated file gives an error that says what and where, never a panic.
package pcapio
