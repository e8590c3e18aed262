package pcapio

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"time"
)

// Packet is one captured frame.
type Packet struct {
	Index     int       // 1-based frame number in the file, as Wireshark counts
	Time      time.Time // capture timestamp
	LinkType  LinkType
	Interface int    // pcapng interface number (0 for pcap)
	Data      []byte // captured octets; valid until the next call to Next
	OrigLen   int    // length on the wire (≥ len(Data) when the snapshot cut it)
}

// ErrFormat is matched by every *FormatError: the file is not a capture, or
// is damaged.
var ErrFormat = errors.New("pcapio: bad capture file")

// FormatError says what is wrong with a capture file and where.
type FormatError struct {
	Offset int64 // file offset of the offending header or block
	Msg    string
	Err    error // io.ErrUnexpectedEOF for a file cut short, else nil
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("pcapio: bad capture file at offset %d: %s", e.Offset, e.Msg)
}
func (e *FormatError) Is(target error) bool { return target == ErrFormat }
func (e *FormatError) Unwrap() error        { return e.Err }

// Reader reads packets from a pcap or pcapng file, detected from its first
// octets.
type Reader struct {
	r    *bufio.Reader
	off  int64
	n    int
	buf  []byte
	next func() (Packet, error)

	// pcap
	order binary.ByteOrder
	nano  bool
	lt    LinkType

	// pcapng: interfaces of the current section
	ifaces []ngInterface
}

type ngInterface struct {
	lt      LinkType
	snaplen uint32
	unitsPS uint64 // timestamp units per second
	offset  int64  // seconds added to every timestamp (if_tsoffset)
}

const (
	ngSHB         = 0x0A0D0D0A
	ngIDB         = 1
	ngOPB         = 2 // obsolete Packet Block
	ngSPB         = 3
	ngEPB         = 6
	ngByteOrder   = 0x1A2B3C4D
	maxBlockLen   = 16 << 20 // refuse anything larger rather than allocate it
	maxInterfaces = 1 << 16
)

// NewReader reads the file header and returns a reader positioned at the
// first packet.
func NewReader(r io.Reader) (*Reader, error) {
	rd := &Reader{r: bufio.NewReaderSize(r, 1<<16)}
	head, err := rd.r.Peek(4)
	if err != nil {
		return nil, &FormatError{Msg: "file too short for a capture header", Err: io.ErrUnexpectedEOF}
	}
	switch {
	case binary.LittleEndian.Uint32(head) == ngSHB:
		rd.next = rd.nextNG
		return rd, nil
	}
	if err := rd.readPcapHeader(); err != nil {
		return nil, err
	}
	rd.next = rd.nextPcap
	return rd, nil
}

// Next returns the next packet, or io.EOF at the end of the file.
func (r *Reader) Next() (Packet, error) {
	p, err := r.next()
	if err == nil {
		r.n++
		p.Index = r.n
	}
	return p, err
}

// read fills exactly n octets from the file into a reused buffer.
func (r *Reader) read(n int, what string) ([]byte, error) {
	if cap(r.buf) < n {
		r.buf = make([]byte, n)
	}
	b := r.buf[:n]
	got, err := io.ReadFull(r.r, b)
	r.off += int64(got)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || (errors.Is(err, io.EOF) && got == 0) {
			return nil, &FormatError{Offset: r.off - int64(got), Msg: fmt.Sprintf("file ends inside %s (%d of %d octets)", what, got, n), Err: io.ErrUnexpectedEOF}
		}
		return nil, fmt.Errorf("pcapio: reading %s: %w", what, err)
	}
	return b, nil
}

// atEOF reports a clean end of file before the next record.
func (r *Reader) atEOF() bool {
	_, err := r.r.Peek(1)
	return err == io.EOF
}

func (r *Reader) readPcapHeader() error {
	h, err := r.read(24, "the pcap file header")
	if err != nil {
		return err
	}
	switch m := binary.LittleEndian.Uint32(h); m {
	case magicMicro, magicNano:
		r.order, r.nano = binary.LittleEndian, m == magicNano
	case bits.ReverseBytes32(magicMicro), bits.ReverseBytes32(magicNano):
		r.order, r.nano = binary.BigEndian, m == bits.ReverseBytes32(magicNano)
	default:
		return &FormatError{Msg: fmt.Sprintf("magic %08x is neither pcap nor pcapng", m)}
	}
	r.lt = LinkType(r.order.Uint32(h[20:]) & 0xffff) // upper bits: FCS length flags
	return nil
}

func (r *Reader) nextPcap() (Packet, error) {
	if r.atEOF() {
		return Packet{}, io.EOF
	}
	start := r.off
	h, err := r.read(16, "a pcap record header")
	if err != nil {
		return Packet{}, err
	}
	sec, frac := r.order.Uint32(h), r.order.Uint32(h[4:])
	incl, orig := r.order.Uint32(h[8:]), r.order.Uint32(h[12:])
	if incl > maxSnapLen {
		return Packet{}, &FormatError{Offset: start, Msg: fmt.Sprintf("record of %d octets exceeds %d", incl, maxSnapLen)}
	}
	ns := int64(frac) * 1000
	if r.nano {
		ns = int64(frac)
	}
	data, err := r.read(int(incl), "a pcap packet")
	if err != nil {
		return Packet{}, err
	}
	return Packet{Time: time.Unix(int64(sec), ns).UTC(), LinkType: r.lt, Data: data, OrigLen: int(max(orig, incl))}, nil
}

func (r *Reader) nextNG() (Packet, error) {
	for {
		if r.atEOF() {
			return Packet{}, io.EOF
		}
		start := r.off
		h, err := r.read(8, "a pcapng block header")
		if err != nil {
			return Packet{}, err
		}
		btype := binary.LittleEndian.Uint32(h)
		if btype == ngSHB {
			// A new section may change the byte order; the length comes
			// after we know it.
			bom, err := r.read(4, "a section header")
			if err != nil {
				return Packet{}, err
			}
			switch binary.LittleEndian.Uint32(bom) {
			case ngByteOrder:
				r.order = binary.LittleEndian
			case bits.ReverseBytes32(ngByteOrder):
				r.order = binary.BigEndian
			default:
				return Packet{}, &FormatError{Offset: start, Msg: "section header with a bad byte-order magic"}
			}
			blen := r.order.Uint32(h[4:])
			if err := r.checkBlockLen(start, blen, 28); err != nil {
				return Packet{}, err
			}
			if _, err := r.read(int(blen)-12, "a section header"); err != nil {
				return Packet{}, err
			}
			r.ifaces = r.ifaces[:0]
			continue
		}
		if r.order == nil {
			return Packet{}, &FormatError{Offset: start, Msg: "pcapng block before any section header"}
		}
		btype = r.order.Uint32(h)
		blen := r.order.Uint32(h[4:])
		if err := r.checkBlockLen(start, blen, 12); err != nil {
			return Packet{}, err
		}
		body, err := r.read(int(blen)-8, "a pcapng block")
		if err != nil {
			return Packet{}, err
		}
		if r.order.Uint32(body[len(body)-4:]) != blen {
			return Packet{}, &FormatError{Offset: start, Msg: "pcapng block's trailing length differs from its leading one"}
		}
		body = body[:len(body)-4]
		switch btype {
		case ngIDB:
			if err := r.addInterface(start, body); err != nil {
				return Packet{}, err
			}
		case ngEPB, ngOPB:
			return r.packetBlock(start, btype, body)
		case ngSPB:
			if len(r.ifaces) == 0 {
				return Packet{}, &FormatError{Offset: start, Msg: "simple packet block with no interface described"}
			}
			if len(body) < 4 {
				return Packet{}, &FormatError{Offset: start, Msg: "simple packet block too short"}
			}
			orig := int(r.order.Uint32(body))
			data := body[4:]
			if ifc := r.ifaces[0]; orig < len(data) {
				data = data[:orig]
			} else if ifc.snaplen != 0 && int(ifc.snaplen) < len(data) {
				data = data[:ifc.snaplen]
			}
			return Packet{LinkType: r.ifaces[0].lt, Data: data, OrigLen: max(orig, len(data))}, nil
		}
		// Name resolution, statistics, custom blocks...: nothing to decode.
	}
}

func (r *Reader) checkBlockLen(start int64, blen, least uint32) error {
	if blen < least || blen%4 != 0 || blen > maxBlockLen {
		return &FormatError{Offset: start, Msg: fmt.Sprintf("pcapng block length %d (needs a multiple of 4 from %d to %d)", blen, least, maxBlockLen)}
	}
	return nil
}

func (r *Reader) addInterface(start int64, body []byte) error {
	if len(body) < 8 {
		return &FormatError{Offset: start, Msg: "interface description block too short"}
	}
	if len(r.ifaces) >= maxInterfaces {
		return &FormatError{Offset: start, Msg: "too many interfaces in one section"}
	}
	ifc := ngInterface{lt: LinkType(r.order.Uint16(body)), snaplen: r.order.Uint32(body[4:]), unitsPS: 1e6}
	for opts := body[8:]; len(opts) >= 4; {
		code, olen := r.order.Uint16(opts), int(r.order.Uint16(opts[2:]))
		if code == 0 {
			break
		}
		if 4+olen > len(opts) {
			return &FormatError{Offset: start, Msg: fmt.Sprintf("interface option %d runs past its block", code)}
		}
		val := opts[4 : 4+olen]
		switch {
		case code == 9 && olen == 1: // if_tsresol
			ifc.unitsPS = tsUnits(val[0])
			if ifc.unitsPS == 0 {
				return &FormatError{Offset: start, Msg: fmt.Sprintf("timestamp resolution %#02x too fine", val[0])}
			}
		case code == 14 && olen == 8: // if_tsoffset
			ifc.offset = int64(r.order.Uint64(val))
		}
		opts = opts[4+(olen+3)&^3:]
	}
	r.ifaces = append(r.ifaces, ifc)
	return nil
}

// tsUnits turns an if_tsresol value into units per second (0 if too fine).
func tsUnits(v byte) uint64 {
	if v&0x80 != 0 {
		if v&0x7f > 63 {
			return 0
		}
		return 1 << (v & 0x7f)
	}
	if v > 19 {
		return 0
	}
	u := uint64(1)
	for range v {
		u *= 10
	}
	return u
}

func (r *Reader) packetBlock(start int64, btype uint32, body []byte) (Packet, error) {
	if len(body) < 20 {
		return Packet{}, &FormatError{Offset: start, Msg: "packet block too short"}
	}
	var id int
	if btype == ngEPB {
		id = int(r.order.Uint32(body))
	} else {
		id = int(r.order.Uint16(body))
	}
	if id >= len(r.ifaces) {
		return Packet{}, &FormatError{Offset: start, Msg: fmt.Sprintf("packet on interface %d, but only %d described", id, len(r.ifaces))}
	}
	ifc := r.ifaces[id]
	ts := uint64(r.order.Uint32(body[4:]))<<32 | uint64(r.order.Uint32(body[8:]))
	capLen, orig := r.order.Uint32(body[12:]), r.order.Uint32(body[16:])
	if uint64(capLen) > uint64(len(body)-20) {
		return Packet{}, &FormatError{Offset: start, Msg: fmt.Sprintf("captured length %d runs past its block", capLen)}
	}
	sec, frac := ts/ifc.unitsPS, ts%ifc.unitsPS
	ns := int64(float64(frac) * 1e9 / float64(ifc.unitsPS))
	t := time.Unix(0, 0).UTC()
	if sec <= math.MaxInt32*4 { // anything later is nonsense; leave the epoch
		t = time.Unix(int64(sec)+ifc.offset, ns).UTC()
	}
	return Packet{Time: t, LinkType: ifc.lt, Interface: id, Data: body[20 : 20+capLen], OrigLen: int(max(orig, capLen))}, nil
}
