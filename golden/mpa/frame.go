package mpa

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Revision is the MPA revision carried in the Rev field of a startup frame.
type Revision uint8

// The MPA revisions openiwarp speaks.
const (
	Rev0 Revision = 0 // draft-ietf-rddp-mpa-01 (RDMA Consortium), DDP/RDMAP version 0
	Rev1 Revision = 1 // RFC 5044
	Rev2 Revision = 2 // RFC 6581 enhanced connection establishment (Linux siw's default)
)

func (r Revision) String() string {
	switch r {
	case Rev0:
		return "0 (draft-01)"
	case Rev1:
		return "1 (RFC 5044)"
	case Rev2:
		return "2 (RFC 6581)"
	}
	return fmt.Sprintf("%d (unknown)", uint8(r))
}

// Startup frame layout (RFC 5044 §7.1.1, Fig. 8).
const (
	FrameHeaderLen = 20  // Key(16) | M C R Res(5) | Rev(8) | PD_Length(16)
	MaxPrivateData = 512 // RFC 5044 limit; draft-01 allows up to 65535
	KeyLen         = 16

	flagMarkers  = 0x80
	flagCRC      = 0x40
	flagReject   = 0x20
	flagEnhanced = 0x10 // RFC 6581 took this Res bit
	flagReserved = 0x0f
)

// The 16-octet keys that open a Request and a Reply.
var (
	KeyRequest = [KeyLen]byte([]byte("MPA ID Req Frame"))
	KeyReply   = [KeyLen]byte([]byte("MPA ID Rep Frame"))
)

// Frame is an MPA Request or Reply.
type Frame struct {
	Reply    bool // the Key is "MPA ID Rep Frame"
	Markers  bool // M: the sender wants markers in the FPDUs it receives
	CRC      bool // C: the sender wants CRCs
	Reject   bool // R: in a Reply, the Responder rejects the connection
	Enhanced bool // RFC 6581: Private Data opens with an [EnhancedPD]
	// Reserved holds the remaining Res bits as received; they are sent as
	// zero and never checked (§7.1.1).
	Reserved    uint8
	Rev         Revision
	PrivateData []byte
}

// maxPD is the most private data revision r lets a frame carry.
func maxPD(r Revision) int {
	if r == Rev0 {
		return 0xffff // draft-01 §6.1.1
	}
	return MaxPrivateData
}

// Append appends the encoded frame to dst. The private data may be up to
// 512 octets (65535 for Rev0).
func (f *Frame) Append(dst []byte) ([]byte, error) {
	if n, lim := len(f.PrivateData), maxPD(f.Rev); n > lim {
		return dst, fmt.Errorf("mpa: %d octets of private data exceed the %d that revision %v allows", n, lim, f.Rev)
	}
	key := &KeyRequest
	if f.Reply {
		key = &KeyReply
	}
	var flags byte
	for _, b := range [...]struct {
		set  bool
		mask byte
	}{{f.Markers, flagMarkers}, {f.CRC, flagCRC}, {f.Reject, flagReject}, {f.Enhanced, flagEnhanced}} {
		if b.set {
			flags |= b.mask
		}
	}
	dst = append(dst, key[:]...)
	dst = append(dst, flags, byte(f.Rev))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(f.PrivateData)))
	return append(dst, f.PrivateData...), nil
}

// ParseFrame parses the startup frame at the start of b. It accepts at most
// maxPD octets of private data (a larger PD_Length is a malformed frame,
// §7.1.2 rule 9). It returns the frame, whose PrivateData aliases b, and
// its length. If b is too short to hold the whole frame it returns
// io.ErrUnexpectedEOF and the caller should read more. Any other error is
// an *Error of kind KindStartup.
func ParseFrame(b []byte, maxPD int) (Frame, int, error) {
	if len(b) < FrameHeaderLen {
		return Frame{}, 0, io.ErrUnexpectedEOF
	}
	f, pdLen, err := parseFrameHeader(b, maxPD)
	if err != nil {
		return Frame{}, 0, err
	}
	n := FrameHeaderLen + pdLen
	if len(b) < n {
		return Frame{}, 0, io.ErrUnexpectedEOF
	}
	if pdLen > 0 {
		f.PrivateData = b[FrameHeaderLen:n:n]
	}
	return f, n, nil
}

func parseFrameHeader(b []byte, maxPD int) (Frame, int, error) {
	var f Frame
	switch [KeyLen]byte(b[:KeyLen]) {
	case KeyRequest:
	case KeyReply:
		f.Reply = true
	default:
		return f, 0, newError(KindStartup, 0, nil, "key %q is neither %q nor %q", b[:KeyLen], KeyRequest[:], KeyReply[:])
	}
	flags := b[16]
	f.Markers = flags&flagMarkers != 0
	f.CRC = flags&flagCRC != 0
	f.Reject = flags&flagReject != 0
	f.Enhanced = flags&flagEnhanced != 0
	f.Reserved = flags & flagReserved
	f.Rev = Revision(b[17])
	pdLen := int(binary.BigEndian.Uint16(b[18:]))
	if pdLen > maxPD {
		return f, 0, newError(KindStartup, 0, nil, "PD_Length %d exceeds the %d octets accepted", pdLen, maxPD)
	}
	return f, pdLen, nil
}

// ReadFrame reads exactly one startup frame from r, never an octet beyond
// it, so the FPDUs that follow stay in r for the deframer.
func ReadFrame(r io.Reader, maxPD int) (Frame, error) {
	var hdr [FrameHeaderLen]byte
	if n, err := io.ReadFull(r, hdr[:]); err != nil {
		return Frame{}, readError(err, n, FrameHeaderLen)
	}
	f, pdLen, err := parseFrameHeader(hdr[:], maxPD)
	if err != nil {
		return Frame{}, err
	}
	if pdLen > 0 {
		f.PrivateData = make([]byte, pdLen)
		if n, err := io.ReadFull(r, f.PrivateData); err != nil {
			return Frame{}, readError(err, FrameHeaderLen+n, FrameHeaderLen+pdLen)
		}
	}
	return f, nil
}

func readError(err error, got, want int) error {
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) && ne.Timeout() {
		return newError(KindTimeout, 0, err, "startup frame incomplete after %d of %d octets", got, want)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return newError(KindStartup, 0, err, "peer closed after %d of %d startup frame octets", got, want)
	}
	return newError(KindStartup, 0, err, "reading startup frame (%d of %d octets)", got, want)
}

// EnhancedPD is the 4-octet prefix RFC 6581 puts at the start of the
// Private Data of a Rev 2 frame with the Enhanced flag:
//
//	|P|S|        IRD (14)           |W|R|        ORD (14)           |
//
// P asks for the peer-to-peer model, in which the Initiator sends a
// ready-to-receive (RTR) message as its first FPDU; S, W and R name the RTR
// messages the sender can use: a zero-length Send, RDMA Write or RDMA Read.
type EnhancedPD struct {
	IRD, ORD   uint16 // inbound and outbound RDMA Read queue depths, 0 to 16383
	PeerToPeer bool
	RTRSend    bool
	RTRWrite   bool
	RTRRead    bool
}

// Bits of the RFC 6581 private-data prefix.
const (
	EnhancedPDLen = 4
	MaxIRDORD     = 0x3fff
	pdPeerToPeer  = 0x8000 // in the IRD word
	pdRTRSend     = 0x4000 // in the IRD word
	pdRTRWrite    = 0x8000 // in the ORD word
	pdRTRRead     = 0x4000 // in the ORD word
)

// Append appends the encoded prefix. IRD and ORD are clamped to 16383.
func (e EnhancedPD) Append(dst []byte) []byte {
	ird, ord := min(e.IRD, MaxIRDORD), min(e.ORD, MaxIRDORD)
	if e.PeerToPeer {
		ird |= pdPeerToPeer
	}
	if e.RTRSend {
		ird |= pdRTRSend
	}
	if e.RTRWrite {
		ord |= pdRTRWrite
	}
	if e.RTRRead {
		ord |= pdRTRRead
	}
	dst = binary.BigEndian.AppendUint16(dst, ird)
	return binary.BigEndian.AppendUint16(dst, ord)
}

// ParseEnhancedPD parses the RFC 6581 prefix at the start of pd.
func ParseEnhancedPD(pd []byte) (EnhancedPD, error) {
	if len(pd) < EnhancedPDLen {
		return EnhancedPD{}, newError(KindStartup, 0, nil,
			"enhanced frame carries %d octets of private data, fewer than the %d-octet IRD/ORD prefix", len(pd), EnhancedPDLen)
	}
	ird, ord := binary.BigEndian.Uint16(pd), binary.BigEndian.Uint16(pd[2:])
	return EnhancedPD{
		IRD:        ird & MaxIRDORD,
		ORD:        ord & MaxIRDORD,
		PeerToPeer: ird&pdPeerToPeer != 0,
		RTRSend:    ird&pdRTRSend != 0,
		RTRWrite:   ord&pdRTRWrite != 0,
		RTRRead:    ord&pdRTRRead != 0,
	}, nil
}
