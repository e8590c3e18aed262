package qp

import (
	"errors"
	"fmt"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
)

// The receive-side error matrix (digest §3.7) as pure functions: what an
// inbound DDP segment is checked for, in which order, and which Terminate
// each failure produces. QP.Receive and the card's golden model
// (host/driver/cardmodel, through golden/iwarp's names) both call them,
// each with its own state, so both answer a hostile segment with the same
// Terminate.

// Reject is an inbound segment refused: the Terminate cause, the opcode of
// the offending message, the segment itself (the Terminate copies its DDP
// header when the cause asks for it) and, for a Read Request, its RDMA
// header.
type Reject struct {
	Cause      rdmap.Cause
	Op         rdmap.Opcode
	ULPDU      []byte // the whole DDP segment, or nil when no header is copied
	RDMAHeader []byte // a Read Request's 28-byte header, or nil
	Msg        string
}

func (r *Reject) Error() string { return fmt.Sprintf("%v: %s", r.Cause, r.Msg) }

func reject(c rdmap.Cause, op rdmap.Opcode, d, rdmaHdr []byte, format string, args ...any) *Reject {
	return &Reject{Cause: c, Op: op, ULPDU: d, RDMAHeader: rdmaHdr, Msg: fmt.Sprintf(format, args...)}
}

// Terminate is the Terminate that reports r, with the headers RFC 5040
// Fig. 10 asks for (rdmap.Cause.Headers). Its slices are copies.
func (r *Reject) Terminate() *rdmap.Terminate {
	t := &rdmap.Terminate{Cause: r.Cause}
	t.M, t.D, t.R = r.Cause.Headers(r.Op)
	if t.D {
		seg, _ := ddp.Parse(r.ULPDU)
		t.SegLen = uint16(len(r.ULPDU))
		t.DDPHeader = append([]byte(nil), seg.Header...)
	}
	if t.R && r.Op == rdmap.OpReadRequest {
		t.RDMAHeader = append([]byte(nil), r.RDMAHeader...)
	}
	return t
}

// MPATerminate is how a receiver answers an error of its MPA deframer
// (RFC 5044 §8): the cause, and the Terminate (layer LLP, no headers) to
// send, or nil when the error requires closing TCP at once.
func MPATerminate(err error) (rdmap.Cause, *rdmap.Terminate) {
	c := rdmap.MPAConnectionLost
	var me *mpa.Error
	if errors.As(err, &me) {
		if me.Code != 0 {
			c = rdmap.NewCause(rdmap.LayerLLP, 0, uint8(me.Code))
		}
		if !me.CloseTCP() {
			return c, &rdmap.Terminate{Cause: c}
		}
	}
	return c, nil
}

// CheckHeaders runs the checks every inbound ULPDU d passes before its
// opcode's own: DDP header length and version, RDMAP version, QN, and
// whether the opcode fits the buffer model and queue (dv and rv are the
// negotiated versions). It returns the parsed segment and its opcode.
func CheckHeaders(d []byte, dv ddp.Version, rv rdmap.Version) (ddp.Segment, rdmap.Opcode, *Reject) {
	seg, err := ddp.Parse(d)
	if err != nil {
		c := rdmap.DDPUntaggedInvalidVersion
		if len(d) > 0 && ddp.Control(d[0]).Tagged() {
			c = rdmap.DDPTaggedInvalidVersion
		}
		return seg, rdmap.OpSend, reject(c, rdmap.OpSend, nil, nil, "%v", err)
	}
	tagged := seg.Control.Tagged()
	if seg.Control.Version() != dv {
		c := rdmap.DDPUntaggedInvalidVersion
		if tagged {
			c = rdmap.DDPTaggedInvalidVersion
		}
		return seg, 0, reject(c, 0, d, nil, "DDP version %d, negotiated %d", seg.Control.Version(), dv)
	}
	ctl := rdmap.Control(seg.RsvdULP0())
	op := ctl.Opcode()
	if ctl.Version() != rv {
		return seg, op, reject(rdmap.RDMAPInvalidVersion, op, d, nil, "RDMAP version %d, negotiated %d", ctl.Version(), rv)
	}
	var qn uint32
	if !tagged {
		if qn = seg.Untagged().QN(); qn >= rdmap.NumQueues {
			return seg, op, reject(rdmap.DDPInvalidQN, op, d, nil, "QN %d", qn)
		}
	}
	if !op.Fits(tagged, qn) {
		return seg, op, reject(rdmap.RDMAPUnexpectedOpcode, op, d, nil, "%v on a segment with T=%v QN=%d", op, tagged, qn)
	}
	return seg, op, nil
}

// CheckWrite reports an RDMA Write segment whose placement the STag check
// refused (f is mem.Check's verdict for UseRemoteWrite), or nil.
func CheckWrite(seg ddp.Segment, d []byte, f mem.Fault) *Reject {
	if f == mem.OK {
		return nil
	}
	h := seg.Tagged()
	return reject(f.Cause(mem.UseRemoteWrite), rdmap.OpWrite, d, nil, "RDMA Write to %v TO %#x len %d: %v", mem.STag(h.STag()), h.TO(), len(seg.Payload), f)
}

// RecvState is what a Send segment meets on the receive side: the MSN the
// Send queue expects, and the receive at its head (Posted false when there
// is none) with the bytes already placed in it and its capacity.
type RecvState struct {
	MSN      uint32
	Posted   bool
	Got, Cap uint64
}

// CheckSend checks a segment of a Send (any of the four) against the
// receive side: MSN, a posted receive, MO, and room in its buffers. A
// DDPMessageTooLong reject completes the receive with a length error.
func CheckSend(seg ddp.Segment, op rdmap.Opcode, d []byte, s RecvState) *Reject {
	h := seg.Untagged()
	if msn := h.MSN(); msn != s.MSN {
		return reject(rdmap.DDPInvalidMSNRange, op, d, nil, "Send MSN %d, expected %d", msn, s.MSN)
	}
	if !s.Posted {
		return reject(rdmap.DDPNoBuffer, op, d, nil, "Send MSN %d and no receive posted", h.MSN())
	}
	n := uint64(len(seg.Payload))
	if mo := uint64(h.MO()); mo != s.Got {
		return reject(rdmap.DDPInvalidMO, op, d, nil, "Send MO %d, expected %d", mo, s.Got)
	}
	if s.Got+n > s.Cap {
		return reject(rdmap.DDPMessageTooLong, op, d, nil, "Send of at least %d bytes for a %d-byte receive", s.Got+n, s.Cap)
	}
	return nil
}

// SendPlacementFailed reports a Send whose receive buffer refused the
// placement (f from the local-write check of the receive's SGE).
func SendPlacementFailed(op rdmap.Opcode, d []byte, id uint64, f mem.Fault) *Reject {
	return reject(rdmap.RDMAPLocalCatastrophic, op, d, nil, "receive buffer %d: %v", id, f)
}

// CannotInvalidate reports a Send with Invalidate whose STag the table
// refused to invalidate (mem.CanInvalidate).
func CannotInvalidate(op rdmap.Opcode, d []byte, stag mem.STag) *Reject {
	return reject(rdmap.RDMAPCannotInvalidate, op, d, nil, "Send with Invalidate of %v", stag)
}

// CheckReadRequest checks a Read Request segment: MSN (want), a single
// segment, a well-formed header without payload, and room within IRD
// (queued inbound Reads already accepted). It returns the request's fields
// and its header, which the source check (ReadSourceFault) copies.
func CheckReadRequest(seg ddp.Segment, d []byte, want uint32, queued, ird int) (rdmap.ReadRequestFields, rdmap.ReadRequest, *Reject) {
	op := rdmap.OpReadRequest
	h := seg.Untagged()
	if msn := h.MSN(); msn != want {
		return rdmap.ReadRequestFields{}, nil, reject(rdmap.DDPInvalidMSNRange, op, d, nil, "Read Request MSN %d, expected %d", msn, want)
	}
	if h.MO() != 0 || !seg.Control.Last() {
		return rdmap.ReadRequestFields{}, nil, reject(rdmap.DDPInvalidMO, op, d, nil, "Read Request in more than one segment (MO %d)", h.MO())
	}
	m, err := rdmap.Parse(d)
	if err != nil {
		return rdmap.ReadRequestFields{}, nil, reject(rdmap.DDPInvalidMO, op, d, nil, "%v", err)
	}
	if len(m.Payload) > 0 {
		return rdmap.ReadRequestFields{}, nil, reject(rdmap.DDPMessageTooLong, op, d, m.ReadRequest, "Read Request with %d bytes of payload", len(m.Payload))
	}
	if queued >= ird {
		return rdmap.ReadRequestFields{}, nil, reject(rdmap.RDMAPCatastrophicStream, op, d, m.ReadRequest, "Read Request beyond IRD %d", ird)
	}
	return m.ReadRequest.Fields(), m.ReadRequest, nil
}

// ReadSourceFault reports a Read Request whose source the STag check
// refused (f is mem.Check's verdict for UseRemoteRead), or nil.
func ReadSourceFault(d []byte, hdr rdmap.ReadRequest, rr rdmap.ReadRequestFields, f mem.Fault) *Reject {
	if f == mem.OK {
		return nil
	}
	return reject(f.Cause(mem.UseRemoteRead), rdmap.OpReadRequest, d, hdr, "Read of %v TO %#x size %d: %v", mem.STag(rr.SrcSTag), rr.SrcTO, rr.Size, f)
}

// ReadSink is the Read a Read Response meets: whether one is outstanding,
// its sink SGE, and the response bytes already placed.
type ReadSink struct {
	Outstanding bool
	Sink        SGE
	Got         uint64
}

// CheckReadResponse checks a Read Response segment against the oldest
// outstanding Read before anything of it is placed: there is one; with
// payload, the STag is its sink's, and TO and length fall where the next
// bytes belong; and a last segment (L=1) completes the Read, so that a
// response that ends short writes nothing of its last segment either.
func CheckReadResponse(seg ddp.Segment, d []byte, s ReadSink) *Reject {
	op := rdmap.OpReadResponse
	h := seg.Tagged()
	if !s.Outstanding {
		return reject(rdmap.DDPLocalCatastrophic, op, d, nil, "Read Response with no Read outstanding")
	}
	n := uint64(len(seg.Payload))
	if n > 0 {
		if mem.STag(h.STag()) != s.Sink.LKey {
			return reject(rdmap.DDPInvalidSTag, op, d, nil, "Read Response to %v, the Read's sink is %v", mem.STag(h.STag()), s.Sink.LKey)
		}
		if h.TO() != s.Sink.Addr+s.Got || s.Got+n > uint64(s.Sink.Length) {
			return reject(rdmap.DDPBaseBounds, op, d, nil, "Read Response TO %#x len %d, expected TO %#x with %d left", h.TO(), n, s.Sink.Addr+s.Got, uint64(s.Sink.Length)-s.Got)
		}
	}
	if seg.Control.Last() && s.Got+n != uint64(s.Sink.Length) {
		return reject(rdmap.DDPBaseBounds, op, d, nil, "Read Response of %d bytes for a %d-byte Read", s.Got+n, s.Sink.Length)
	}
	return nil
}

// ReadResponsePlacement reports a Read Response the sink's check refused
// (f is mem.Check's verdict for UseReadResponse), or nil.
func ReadResponsePlacement(d []byte, f mem.Fault) *Reject {
	if f == mem.OK {
		return nil
	}
	return reject(f.Cause(mem.UseReadResponse), rdmap.OpReadResponse, d, nil, "Read Response placement: %v", f)
}

// TerminateReceived decodes an inbound Terminate segment (RFC 5040 §5.4;
// want is the MSN its queue expects): the cause and the decoded
// Terminate, or RDMAPOperationUnspecified and nil with a reason for a
// malformed one, whose content is ignored.
func TerminateReceived(seg ddp.Segment, want uint32) (rdmap.Cause, *rdmap.Terminate, string, error) {
	h := seg.Untagged()
	if h.MSN() != want || h.MO() != 0 || !seg.Control.Last() {
		return rdmap.RDMAPOperationUnspecified, nil, fmt.Sprintf("malformed Terminate (MSN %d MO %d)", h.MSN(), h.MO()), nil
	}
	t, err := rdmap.ParseTerminate(seg.Payload)
	if err != nil {
		return rdmap.RDMAPOperationUnspecified, nil, "unparsable Terminate", err
	}
	t.DDPHeader = append([]byte(nil), t.DDPHeader...)
	t.RDMAHeader = append([]byte(nil), t.RDMAHeader...)
	return t.Cause, &t, "", nil
}

// ReadSourceRevoked is the Terminate for an inbound Read whose source
// failed its check (f) after sent bytes of the response went out: the Read
// Request's header updated to where it stopped (RFC 5040 §4.8). ddpHdr is
// the Read Request's DDP header.
func ReadSourceRevoked(f mem.Fault, rr rdmap.ReadRequestFields, sent uint32, ddpHdr []byte) *rdmap.Terminate {
	c := f.Cause(mem.UseRemoteRead)
	return &rdmap.Terminate{Cause: c, M: true, D: true, R: true, SegLen: uint16(len(ddpHdr) + rdmap.ReadRequestLen),
		DDPHeader: append([]byte(nil), ddpHdr...), RDMAHeader: rr.Advance(sent).Append(nil)}
}
