// Package matrix is the receive-side error matrix (spec digest §3.7) as
// test cases: one hostile message sequence per row, with the Terminate it
// must produce. The protocol core's tests (golden/iwarp/qp) feed the rows
// to a QP directly; the endpoint's (golden/iwarp) send them over TCP,
// which checks that the endpoint puts the core's Terminate on the wire.
package matrix

import (
	"encoding/binary"
	"fmt"

	"github.com/stretchr/testify/assert"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/rdmap"
)

// Builders for hostile segments (DDP/RDMAP version 1).

// Write is an RDMA Write segment.
func Write(stag mem.STag, to uint64, last bool, p []byte) []byte {
	return append(ddp.TaggedFields{Last: last, Version: 1, RsvdULP: uint8(rdmap.NewControl(1, rdmap.OpWrite)), STag: uint32(stag), TO: to}.Append(nil), p...)
}

// ReadResp is a last Read Response segment.
func ReadResp(stag mem.STag, to uint64, p []byte) []byte {
	return append(ddp.TaggedFields{Last: true, Version: 1, RsvdULP: uint8(rdmap.NewControl(1, rdmap.OpReadResponse)), STag: uint32(stag), TO: to}.Append(nil), p...)
}

// Untagged is an untagged segment of opcode op.
func Untagged(op rdmap.Opcode, qn, msn, mo uint32, last bool, inv uint32, p []byte) []byte {
	return append(ddp.UntaggedFields{Last: last, Version: 1, RsvdULP0: uint8(rdmap.NewControl(1, op)), RsvdULP1: inv, QN: qn, MSN: msn, MO: mo}.Append(nil), p...)
}

// ReadReq is a Read Request.
func ReadReq(msn uint32, rr rdmap.ReadRequestFields) []byte {
	return rr.Append(Untagged(rdmap.OpReadRequest, 1, msn, 0, true, 0, nil))
}

// The victim's target region.
const (
	Guard     = 256
	TargetLen = 4096
	TargetVA  = 0x7f0000001000
)

// Env is the victim's memory: a target region between guard bytes, a
// region in another PD, a read-only one, one without remote read, and a
// receive buffer.
type Env struct {
	Arena    []byte
	Target   *mem.MR // Arena[Guard:Guard+TargetLen], RemoteRead|RemoteWrite|LocalWrite
	OtherPD  *mem.MR
	ReadOnly *mem.MR
	NoRead   *mem.MR
	Recv     *mem.MR
	RecvBuf  []byte
}

// Setup registers the victim's memory in pd.
func Setup(pd *mem.PD) (*Env, error) {
	e := &Env{Arena: make([]byte, 2*Guard+TargetLen), RecvBuf: make([]byte, 64)}
	for i := range e.Arena {
		e.Arena[i] = 0xAA
	}
	all := mem.LocalWrite | mem.RemoteRead | mem.RemoteWrite
	var err error
	reg := func(pd *mem.PD, buf []byte, acc mem.Access) *mem.MR {
		if err != nil {
			return nil
		}
		var mr *mem.MR
		mr, err = pd.RegisterMR(buf, 0, acc, 0)
		return mr
	}
	if e.Target, err = pd.RegisterMR(e.Arena[Guard:Guard+TargetLen:Guard+TargetLen], TargetVA, all, 0); err != nil {
		return nil, err
	}
	e.OtherPD = reg(pd.Table().AllocPD(), make([]byte, 64), all)
	e.ReadOnly = reg(pd, make([]byte, 64), mem.RemoteRead)
	e.NoRead = reg(pd, make([]byte, 64), mem.RemoteWrite)
	e.Recv = reg(pd, e.RecvBuf, mem.LocalWrite)
	return e, err
}

// Untouched reports the first arena byte that changed, if any.
func (e *Env) Untouched() error {
	for i, b := range e.Arena {
		if b != 0xAA {
			return fmt.Errorf("victim memory changed at arena offset %d (target is [%d,%d))", i, Guard, Guard+TargetLen)
		}
	}
	return nil
}

// Case is one row: Recvs receives of 64 bytes (Env.Recv) posted, the IRD
// (0: default), the messages (the last one is the offender) and the
// Terminate expected: its cause, M/D/R flags, and whether the Read
// Request header is copied. A nil Msgs is the IRD row: two Read Requests
// of which the first must still be unanswered when the second arrives
// (BeyondIRD builds them).
type Case struct {
	Name    string
	Recvs   int
	IRD     int
	Msgs    func(e *Env) [][]byte
	Cause   rdmap.Cause
	M, D, R bool
	RDMAHdr bool
}

// BeyondIRD is the IRD row's messages: two Read Requests of src (size
// bytes from TO 0) with IRD 1.
func BeyondIRD(src mem.STag, size uint32) [][]byte {
	return [][]byte{
		ReadReq(1, rdmap.ReadRequestFields{SinkSTag: 1, Size: size, SrcSTag: uint32(src)}),
		ReadReq(2, rdmap.ReadRequestFields{SinkSTag: 1, Size: 8, SrcSTag: uint32(src)}),
	}
}

func rr(stag mem.STag, to uint64, size uint32) rdmap.ReadRequestFields {
	return rdmap.ReadRequestFields{SinkSTag: 0x1234, SinkTO: 0, Size: size, SrcSTag: uint32(stag), SrcTO: to}
}

// Cases is the matrix.
func Cases() []Case {
	return []Case{
		{"DDP version tagged", 0, 0, func(e *Env) [][]byte {
			b := Write(e.Target.STag, TargetVA, true, []byte("x"))
			b[0] = 0xC2
			return [][]byte{b}
		}, rdmap.DDPTaggedInvalidVersion, false, false, false, false},
		{"DDP version untagged", 1, 0, func(e *Env) [][]byte {
			b := Untagged(rdmap.OpSend, 0, 1, 0, true, 0, []byte("x"))
			b[0] = 0x40
			return [][]byte{b}
		}, rdmap.DDPUntaggedInvalidVersion, false, false, false, false},
		{"RDMAP version", 1, 0, func(e *Env) [][]byte {
			b := Untagged(rdmap.OpSend, 0, 1, 0, true, 0, []byte("x"))
			b[1] = 0x83
			return [][]byte{b}
		}, rdmap.RDMAPInvalidVersion, false, false, false, false},
		{"reserved opcode", 1, 0, func(e *Env) [][]byte {
			return [][]byte{Untagged(rdmap.Opcode(0xA), 0, 1, 0, true, 0, []byte("x"))}
		}, rdmap.RDMAPUnexpectedOpcode, false, false, false, false},
		{"Send on a tagged segment", 1, 0, func(e *Env) [][]byte {
			b := Write(e.Target.STag, TargetVA, true, []byte("x"))
			b[1] = byte(rdmap.NewControl(1, rdmap.OpSend))
			return [][]byte{b}
		}, rdmap.RDMAPUnexpectedOpcode, false, false, false, false},
		{"Send on QN 1", 1, 0, func(e *Env) [][]byte {
			return [][]byte{Untagged(rdmap.OpSend, 1, 1, 0, true, 0, []byte("x"))}
		}, rdmap.RDMAPUnexpectedOpcode, false, false, false, false},
		{"invalid QN", 1, 0, func(e *Env) [][]byte {
			return [][]byte{Untagged(rdmap.OpSend, 7, 1, 0, true, 0, []byte("x"))}
		}, rdmap.DDPInvalidQN, true, true, false, false},
		{"Send with no receive posted", 0, 0, func(e *Env) [][]byte {
			return [][]byte{Untagged(rdmap.OpSend, 0, 1, 0, true, 0, []byte("x"))}
		}, rdmap.DDPNoBuffer, true, true, false, false},
		{"stale MSN", 2, 0, func(e *Env) [][]byte {
			return [][]byte{Untagged(rdmap.OpSend, 0, 1, 0, true, 0, []byte("a")), Untagged(rdmap.OpSend, 0, 1, 0, true, 0, []byte("b"))}
		}, rdmap.DDPInvalidMSNRange, true, true, false, false},
		{"skipped MSN", 2, 0, func(e *Env) [][]byte {
			return [][]byte{Untagged(rdmap.OpSend, 0, 2, 0, true, 0, []byte("a"))}
		}, rdmap.DDPInvalidMSNRange, true, true, false, false},
		{"new message before L", 2, 0, func(e *Env) [][]byte {
			return [][]byte{Untagged(rdmap.OpSend, 0, 1, 0, false, 0, []byte("a")), Untagged(rdmap.OpSend, 0, 2, 0, true, 0, []byte("b"))}
		}, rdmap.DDPInvalidMSNRange, true, true, false, false},
		{"MO gap", 1, 0, func(e *Env) [][]byte {
			return [][]byte{Untagged(rdmap.OpSend, 0, 1, 0, false, 0, []byte("a")), Untagged(rdmap.OpSend, 0, 1, 2, true, 0, []byte("b"))}
		}, rdmap.DDPInvalidMO, true, true, false, false},
		{"MO outside the buffer", 1, 0, func(e *Env) [][]byte {
			return [][]byte{Untagged(rdmap.OpSend, 0, 1, 1000, true, 0, []byte("a"))}
		}, rdmap.DDPInvalidMO, true, true, false, false},
		{"Send longer than the receive", 1, 0, func(e *Env) [][]byte {
			return [][]byte{Untagged(rdmap.OpSend, 0, 1, 0, true, 0, make([]byte, 65))}
		}, rdmap.DDPMessageTooLong, true, true, false, false},
		{"unknown STag", 0, 0, func(e *Env) [][]byte {
			return [][]byte{Write(e.Target.STag^0x100, TargetVA, true, []byte("x"))}
		}, rdmap.DDPInvalidSTag, true, true, false, false},
		{"wrong key", 0, 0, func(e *Env) [][]byte {
			return [][]byte{Write(e.Target.STag^1, TargetVA, true, []byte("x"))}
		}, rdmap.DDPInvalidSTag, true, true, false, false},
		{"STag of another PD", 0, 0, func(e *Env) [][]byte {
			return [][]byte{Write(e.OtherPD.STag, 0, true, []byte("x"))}
		}, rdmap.DDPSTagNotAssociated, true, true, false, false},
		{"TO below base", 0, 0, func(e *Env) [][]byte {
			return [][]byte{Write(e.Target.STag, TargetVA-1, true, []byte("xy"))}
		}, rdmap.DDPBaseBounds, true, true, false, false},
		{"TO+len past end", 0, 0, func(e *Env) [][]byte {
			return [][]byte{Write(e.Target.STag, TargetVA+TargetLen-1, true, []byte("xy"))}
		}, rdmap.DDPBaseBounds, true, true, false, false},
		{"TO wrap", 0, 0, func(e *Env) [][]byte {
			return [][]byte{Write(e.Target.STag, ^uint64(0), true, []byte("xy"))}
		}, rdmap.DDPTOWrap, true, true, false, false},
		{"Write without REMOTE_WRITE", 0, 0, func(e *Env) [][]byte {
			return [][]byte{Write(e.ReadOnly.STag, 0, true, []byte("x"))}
		}, rdmap.DDPInvalidSTag, true, true, false, false},
		{"Read Response with no Read", 0, 0, func(e *Env) [][]byte {
			return [][]byte{ReadResp(e.Target.STag, TargetVA, []byte("x"))}
		}, rdmap.DDPLocalCatastrophic, false, false, false, false},
		{"Read Request: invalid SrcSTag", 0, 0, func(e *Env) [][]byte {
			return [][]byte{ReadReq(1, rr(e.Target.STag^0x100, TargetVA, 8))}
		}, rdmap.RDMAPInvalidSTag, true, true, true, true},
		{"Read Request: SrcSTag of another PD", 0, 0, func(e *Env) [][]byte {
			return [][]byte{ReadReq(1, rr(e.OtherPD.STag, 0, 8))}
		}, rdmap.RDMAPSTagNotAssociated, true, true, true, true},
		{"Read Request: no REMOTE_READ", 0, 0, func(e *Env) [][]byte {
			return [][]byte{ReadReq(1, rr(e.NoRead.STag, 0, 8))}
		}, rdmap.RDMAPAccessRights, true, true, true, true},
		{"Read Request: bounds", 0, 0, func(e *Env) [][]byte {
			return [][]byte{ReadReq(1, rr(e.Target.STag, TargetVA+TargetLen-4, 8))}
		}, rdmap.RDMAPBaseBounds, true, true, true, true},
		{"Read Request: SrcTO+size wraps", 0, 0, func(e *Env) [][]byte {
			return [][]byte{ReadReq(1, rr(e.Target.STag, ^uint64(0)-2, 8))}
		}, rdmap.RDMAPTOWrap, true, true, true, true},
		{"Read Request: wrong MSN", 0, 0, func(e *Env) [][]byte {
			return [][]byte{ReadReq(2, rr(e.Target.STag, TargetVA, 8))}
		}, rdmap.DDPInvalidMSNRange, true, true, false, false},
		{"Read Request with payload", 0, 0, func(e *Env) [][]byte {
			return [][]byte{append(ReadReq(1, rr(e.Target.STag, TargetVA, 8)), 1, 2, 3, 4)}
		}, rdmap.DDPMessageTooLong, true, true, false, false},
		{"Read Requests beyond IRD", 0, 1, nil, rdmap.RDMAPCatastrophicStream, true, true, false, false},
		{"Send with Invalidate of a PD-shared STag", 1, 0, func(e *Env) [][]byte {
			return [][]byte{Untagged(rdmap.OpSendInvalidate, 0, 1, 0, true, uint32(e.Target.STag), []byte("x"))}
		}, rdmap.RDMAPCannotInvalidate, true, true, true, false},
		{"Send with SE and Invalidate of an unknown STag", 1, 0, func(e *Env) [][]byte {
			return [][]byte{Untagged(rdmap.OpSendSEInvalidate, 0, 1, 0, true, 0x77, []byte("x"))}
		}, rdmap.RDMAPCannotInvalidate, true, true, true, false},
	}
}

// CheckTerminate asserts that term is the row's Terminate for offender,
// the last message: cause, M/D/R, and the copied headers.
func (c Case) CheckTerminate(t assert.TestingT, term *rdmap.Terminate, offender []byte) {
	assert.Equal(t, c.Cause, term.Cause, "got %v", term.Cause)
	assert.Equal(t, []bool{c.M, c.D, c.R}, []bool{term.M, term.D, term.R}, "M D R")
	if c.D {
		assert.Equal(t, uint16(len(offender)), term.SegLen, "DDP Segment Length")
		hl := ddp.Control(offender[0]).HeaderLen()
		assert.Equal(t, offender[:hl], term.DDPHeader, "copied DDP header")
	}
	if c.RDMAHdr {
		assert.Equal(t, offender[ddp.UntaggedHeaderLen:ddp.UntaggedHeaderLen+rdmap.ReadRequestLen], term.RDMAHeader, "copied Read Request header")
	} else {
		assert.Nil(t, term.RDMAHeader)
	}
}

// FuzzSTag in a fuzz input stands for the victim's registered STag,
// which is random per run (MapSTag).
const FuzzSTag = 0xAAAAAAAA

// FuzzSegments splits a fuzz input into ULPDUs: each is a 1-byte length
// (plus 1) and that many bytes.
func FuzzSegments(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		n := min(int(b[0])+1, len(b)-1)
		if n <= 0 {
			break
		}
		out = append(out, b[1:1+n])
		b = b[1+n:]
	}
	return out
}

// FuzzSeed is the fuzz input FuzzSegments splits into segs.
func FuzzSeed(segs ...[]byte) []byte {
	var b []byte
	for _, s := range segs {
		b = append(b, byte(len(s)-1))
		b = append(b, s...)
	}
	return b
}

// MapSTag returns a copy of the fuzzed segment s with FuzzSTag, where a
// tagged segment's STag, a Read Request's SrcSTag or a Send with
// Invalidate's STag is, replaced by stag.
func MapSTag(s []byte, stag mem.STag) []byte {
	s = append([]byte(nil), s...)
	put := func(at, minLen int) {
		if len(s) >= minLen && binary.BigEndian.Uint32(s[at:]) == FuzzSTag {
			binary.BigEndian.PutUint32(s[at:], uint32(stag))
		}
	}
	if len(s) > 0 && ddp.Control(s[0]).Tagged() {
		put(2, ddp.TaggedHeaderLen)
	} else if len(s) > 0 {
		put(34, ddp.UntaggedHeaderLen+rdmap.ReadRequestLen) // a Read Request's SrcSTag
		put(2, ddp.UntaggedHeaderLen)                       // a Send with Invalidate's STag
	}
	return s
}
