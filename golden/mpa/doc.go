// Package mpa is the golden model of MPA, Marker PDU Aligned framing for TCP:
// RFC 5044 (revision 1), its 2004 predecessor draft-ietf-rddp-mpa-01
// (revision 0) and the RFC 6581 enhanced connection establishment
// (revision 2, the default of Linux soft-iWARP).
//
// It is the reference every other part of openiwarp is checked against: the
// generated RTL (CRC32c, marker insertion and stripping, FPDU framing and
// delineation), the host stack and the capture tools. It imports only the
// standard library.
//
// The package has three parts:
//
//   - Framing. A [Framer] is the transmit side of one half connection: it
//     turns ULPDUs (DDP segments) into FPDUs, ULPDU_Length | ULPDU | PAD |
//     CRC32c, with markers every 512 octets of stream counted from SeqStart
//     (RFC 5044 §4). [FPDUWireLen] and [MULPDU] size them.
//   - Deframing. A [Deframer] is the receive side: it is fed TCP payload in
//     pieces of any size, strips and checks markers, delineates FPDUs,
//     checks the CRC and yields each ULPDU with its stream position
//     (RFC 5044 §5, §6). Its memory stays bounded by one FPDU whatever the
//     peer sends, and an error stops delivery on that half connection for
//     good (RFC 5044 §8).
//   - Startup. [Frame] encodes and parses the MPA Request and Reply;
//     [Initiate] and [Respond] run the two roles of the exchange over a
//     net.Conn and return the negotiated [Params] (RFC 5044 §7.1).
//
// Errors are *[Error] values that carry the RFC 5044 §8 error code and say
// what the connection must do next ([Error.CloseTCP]); match them with
// errors.Is against [ErrCRC], [ErrMarker], [ErrLength], [ErrStartup],
// [ErrTimeout], [ErrClosed] and [ErrRejected].
package mpa
