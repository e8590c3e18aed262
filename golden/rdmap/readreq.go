package rdmap

import "encoding/binary"

// RDMA Read Request header, 28 octets after the untagged DDP header
// (RFC 5040 §4.4):
//
//	0..3    Data Sink STag
//	4..11   Data Sink Tagged Offset
//	12..15  RDMA Read Message Size
//	16..19  Data Source STag
//	20..27  Data Source Tagged Offset
const (
	ReadRequestLen = 28

	rrSinkSTag = 0
	rrSinkTO   = 4
	rrSize     = 12
	rrSrcSTag  = 16
	rrSrcTO    = 20
)

// ReadRequest is a view of a Read Request header; at least ReadRequestLen bytes.
type ReadRequest []byte

// SinkSTag is the requester's STag that the Read Response targets.
func (r ReadRequest) SinkSTag() uint32 { return binary.BigEndian.Uint32(r[rrSinkSTag:]) }

// SinkTO is the tagged offset of the Read Response's first byte.
func (r ReadRequest) SinkTO() uint64 { return binary.BigEndian.Uint64(r[rrSinkTO:]) }

// Size is RDMARDSZ, the number of bytes to read.
func (r ReadRequest) Size() uint32 { return binary.BigEndian.Uint32(r[rrSize:]) }

// SrcSTag is the responder's STag to read from.
func (r ReadRequest) SrcSTag() uint32 { return binary.BigEndian.Uint32(r[rrSrcSTag:]) }

// SrcTO is the tagged offset to read from.
func (r ReadRequest) SrcTO() uint64 { return binary.BigEndian.Uint64(r[rrSrcTO:]) }

// Fields returns the header's fields.
func (r ReadRequest) Fields() ReadRequestFields {
	return ReadRequestFields{SinkSTag: r.SinkSTag(), SinkTO: r.SinkTO(), Size: r.Size(), SrcSTag: r.SrcSTag(), SrcTO: r.SrcTO()}
}

// ReadRequestFields are the contents of a Read Request header.
type ReadRequestFields struct {
	SinkSTag uint32
	SinkTO   uint64
	Size     uint32
	SrcSTag  uint32
	SrcTO    uint64
}

// Append appends the encoded header to dst.
func (f ReadRequestFields) Append(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, f.SinkSTag)
	dst = binary.BigEndian.AppendUint64(dst, f.SinkTO)
	dst = binary.BigEndian.AppendUint32(dst, f.Size)
	dst = binary.BigEndian.AppendUint32(dst, f.SrcSTag)
	return binary.BigEndian.AppendUint64(dst, f.SrcTO)
}

// Advance returns the header as it stands after n bytes of the Read have
// been sent: both offsets moved by n, the size reduced by n. This is the
// "updated" Terminated RDMA header of RFC 5040 §4.8.
func (f ReadRequestFields) Advance(n uint32) ReadRequestFields {
	f.SinkTO += uint64(n)
	f.SrcTO += uint64(n)
	f.Size -= n
	return f
}
