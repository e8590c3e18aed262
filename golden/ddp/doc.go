// Package ddp implements the wire formats of the Direct Data Placement
// protocol (RFC 5041) as used by iWARP over MPA/TCP.
//
// A DDP segment is one MPA ULPDU: a 14-byte tagged header (T=1) or an
// 18-byte untagged header (T=0), followed by the payload. The package gives
// byte-slice views over both headers with accessor methods (Tagged,
// Untagged), append-style encoders (TaggedFields.Append,
// UntaggedFields.Append), and Parse, which splits an untrusted ULPDU into a
// header view and its payload without copying:
//
//	seg, err := ddp.Parse(ulpdu)
//	if err != nil { ... }            // *ParseError: too short for its header
//	if seg.Control.Tagged() {
//		h := seg.Tagged()            // STag, TO, RsvdULP
//	} else {
//		h := seg.Untagged()          // QN, MSN, MO, RsvdULP
//	}
//	_ = seg.Payload
//
// Parse checks only what it needs to find the payload. Semantic checks
// (the DDP version negotiated for the stream, QN, MSN, MO, STag and bounds)
// belong to the data sink, which reports them with the Terminate codes of
// package rdmap; see RFC 5041 §7 and golden/iwarp.
//
// Segment sizing for a transmitter is in MaxPayload and SegmentCount.
// All multi-byte fields are big-endian. Byte offsets in this package count
// from the first byte of the DDP header (the MPA ULPDU_Length is not part of
// a ULPDU).
package ddp
