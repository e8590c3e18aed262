package rdmap

import (
	"errors"
	"testing"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestControlField(t *testing.T) {
	// Byte 1 values of RFC 5040 Fig. 4 with RV=1 (digest §2.2).
	want := []byte{0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47}
	for op := Opcode(0); op < NumOpcodes; op++ {
		c := NewControl(Version1, op)
		assert.Equal(t, want[op], byte(c), "%v", op)
		assert.Equal(t, op, c.Opcode())
		assert.Equal(t, Version1, c.Version())
	}
	// Reserved bits are ignored on receive (req 13).
	c := Control(0x43 | byte(ControlRsvd))
	assert.Equal(t, OpSend, c.Opcode())
	assert.Equal(t, Version1, c.Version())
	assert.Equal(t, VersionRDMAC, NewControl(VersionRDMAC, OpSend).Version())
}

func TestOpcodeTable(t *testing.T) {
	for _, tc := range []struct {
		op               Opcode
		name             string
		tagged           bool
		qn               uint32
		hdr              int
		payload, inv, se bool
	}{
		{OpWrite, "RDMA Write", true, 0, 0, true, false, false},
		{OpReadRequest, "RDMA Read Request", false, 1, 28, false, false, false},
		{OpReadResponse, "RDMA Read Response", true, 0, 0, true, false, false},
		{OpSend, "Send", false, 0, 0, true, false, false},
		{OpSendInvalidate, "Send with Invalidate", false, 0, 0, true, true, false},
		{OpSendSE, "Send with Solicited Event", false, 0, 0, true, false, true},
		{OpSendSEInvalidate, "Send with Solicited Event and Invalidate", false, 0, 0, true, true, true},
		{OpTerminate, "Terminate", false, 2, 4, false, false, false},
	} {
		info, ok := tc.op.Info()
		require.True(t, ok)
		assert.Equal(t, tc.name, tc.op.String())
		assert.Equal(t, tc.tagged, info.Tagged, "%v", tc.op)
		if !tc.tagged {
			assert.Equal(t, tc.qn, info.QN, "%v", tc.op)
			assert.True(t, tc.op.Fits(false, tc.qn))
			assert.False(t, tc.op.Fits(false, tc.qn+1))
			assert.False(t, tc.op.Fits(true, 0))
		} else {
			assert.True(t, tc.op.Fits(true, 0))
			assert.False(t, tc.op.Fits(false, 0))
		}
		assert.Equal(t, tc.hdr, info.HeaderLen, "%v", tc.op)
		assert.Equal(t, tc.payload, info.Payload, "%v", tc.op)
		assert.Equal(t, tc.inv, info.Invalidate, "%v", tc.op)
		assert.Equal(t, tc.se, info.Solicited, "%v", tc.op)
	}
	for op := OpcodeReservedFirst; op <= opcodeMax; op++ {
		assert.False(t, op.Valid())
		assert.False(t, op.Fits(true, 0))
		assert.False(t, op.Fits(false, 0))
		assert.Contains(t, op.String(), "Reserved")
	}
}

func TestCauseTable(t *testing.T) {
	for _, tc := range []struct {
		c                  Cause
		layer, etype, code uint8
		str                string
	}{
		{RDMAPLocalCatastrophic, 0, 0, 0xFF, "RDMAP Local Catastrophic Error: Local Catastrophic Error (0/0/0xFF)"},
		{RDMAPInvalidSTag, 0, 1, 0x00, "RDMAP Remote Protection Error: Invalid STag (0/1/0x00)"},
		{RDMAPBaseBounds, 0, 1, 0x01, ""},
		{RDMAPAccessRights, 0, 1, 0x02, ""},
		{RDMAPSTagNotAssociated, 0, 1, 0x03, ""},
		{RDMAPTOWrap, 0, 1, 0x04, ""},
		{RDMAPCannotInvalidate, 0, 1, 0x09, ""},
		{RDMAPProtectionUnspecified, 0, 1, 0xFF, ""},
		{RDMAPInvalidVersion, 0, 2, 0x05, "RDMAP Remote Operation Error: Invalid RDMAP version (0/2/0x05)"},
		{RDMAPUnexpectedOpcode, 0, 2, 0x06, ""},
		{RDMAPCatastrophicStream, 0, 2, 0x07, ""},
		{RDMAPCatastrophicGlobal, 0, 2, 0x08, ""},
		{RDMAPOperationCannotInvalidate, 0, 2, 0x09, ""},
		{RDMAPOperationUnspecified, 0, 2, 0xFF, ""},
		{DDPLocalCatastrophic, 1, 0, 0x00, ""},
		{DDPInvalidSTag, 1, 1, 0x00, "DDP Tagged Buffer Error: Invalid STag (1/1/0x00)"},
		{DDPBaseBounds, 1, 1, 0x01, ""},
		{DDPSTagNotAssociated, 1, 1, 0x02, ""},
		{DDPTOWrap, 1, 1, 0x03, ""},
		{DDPTaggedInvalidVersion, 1, 1, 0x04, ""},
		{DDPInvalidQN, 1, 2, 0x01, "DDP Untagged Buffer Error: Invalid QN (1/2/0x01)"},
		{DDPNoBuffer, 1, 2, 0x02, ""},
		{DDPInvalidMSNRange, 1, 2, 0x03, ""},
		{DDPInvalidMO, 1, 2, 0x04, ""},
		{DDPMessageTooLong, 1, 2, 0x05, ""},
		{DDPUntaggedInvalidVersion, 1, 2, 0x06, ""},
		{MPAConnectionLost, 2, 0, 0x01, ""},
		{MPACRC, 2, 0, 0x02, "LLP MPA Error: MPA CRC error (2/0/0x02)"},
		{MPAMarker, 2, 0, 0x03, ""},
		{MPAInvalidStartup, 2, 0, 0x04, ""},
		{MPALocalCatastrophic, 2, 0, 0x05, ""},
		{MPAInsufficientIRD, 2, 0, 0x06, ""},
		{MPANoMatchingRTR, 2, 0, 0x07, ""},
	} {
		assert.Equal(t, Layer(tc.layer), tc.c.Layer(), "%v", tc.c)
		assert.Equal(t, tc.etype, tc.c.EType(), "%v", tc.c)
		assert.Equal(t, tc.code, tc.c.Code(), "%v", tc.c)
		assert.Equal(t, tc.c, NewCause(Layer(tc.layer), tc.etype, tc.code))
		assert.True(t, tc.c.Known())
		assert.NotEmpty(t, tc.c.Name())
		assert.True(t, tc.c.Type().Known())
		if tc.str != "" {
			assert.Equal(t, tc.str, tc.c.String())
		}
	}
	assert.Len(t, Causes(), 33)
	assert.True(t, Cause(0x0000).Known(), "Local Catastrophic accepts any code")
	assert.False(t, Cause(0x1207).Known())
	assert.Contains(t, Cause(0x1207).String(), "unknown code")
	assert.Equal(t, "Layer 0x5", Layer(5).String())
}

func TestHeadersFig10(t *testing.T) {
	for _, tc := range []struct {
		c       Cause
		op      Opcode
		m, d, r bool
	}{
		{RDMAPLocalCatastrophic, OpSend, false, false, false},
		{RDMAPInvalidSTag, OpReadRequest, true, true, true},
		{RDMAPCannotInvalidate, OpSendInvalidate, true, true, true},
		{RDMAPCatastrophicStream, OpReadRequest, true, true, false},
		{RDMAPInvalidVersion, OpSend, false, false, false},
		{RDMAPUnexpectedOpcode, OpSend, false, false, false},
		{DDPInvalidQN, OpSend, true, true, false},
		{DDPBaseBounds, OpWrite, true, true, false},
		{DDPTaggedInvalidVersion, OpWrite, false, false, false},
		{MPACRC, OpSend, false, false, false},
	} {
		m, d, r := tc.c.Headers(tc.op)
		assert.Equal(t, []bool{tc.m, tc.d, tc.r}, []bool{m, d, r}, "%v %v", tc.c, tc.op)
	}
}

func TestReadRequest(t *testing.T) {
	f := ReadRequestFields{SinkSTag: 0x01020304, SinkTO: 0x1112131415161718, Size: 0x21222324, SrcSTag: 0x31323334, SrcTO: 0x4142434445464748}
	b := f.Append(nil)
	require.Len(t, b, ReadRequestLen)
	assert.Equal(t, []byte{1, 2, 3, 4, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x21, 0x22, 0x23, 0x24,
		0x31, 0x32, 0x33, 0x34, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48}, b)
	assert.Equal(t, f, ReadRequest(b).Fields())
	a := f.Advance(0x24)
	assert.Equal(t, f.SinkTO+0x24, a.SinkTO)
	assert.Equal(t, f.SrcTO+0x24, a.SrcTO)
	assert.Equal(t, uint32(0x21222300), a.Size)
	assert.Equal(t, f.SinkSTag, a.SinkSTag)
}

func readRequestULPDU(msn uint32, f ReadRequestFields) []byte {
	b := ddp.UntaggedFields{Last: true, Version: ddp.Version1, RsvdULP0: uint8(NewControl(Version1, OpReadRequest)), QN: 1, MSN: msn}.Append(nil)
	return f.Append(b)
}

func TestTerminateEncodeSizes(t *testing.T) {
	tagged := ddp.TaggedFields{Last: true, Version: ddp.Version1, RsvdULP: 0x40, STag: 5, TO: 6}.Append(nil)
	untagged := ddp.UntaggedFields{Last: true, Version: ddp.Version1, RsvdULP0: 0x43, MSN: 1}.Append(nil)
	rr := readRequestULPDU(1, ReadRequestFields{SinkSTag: 1, Size: 10, SrcSTag: 2})
	for _, tc := range []struct {
		name string
		t    Terminate
		n    int // DDP bytes of the whole Terminate message (digest §2.7.2)
	}{
		{"bare", Terminate{Cause: MPACRC}, 22},
		{"tagged", Terminate{Cause: DDPBaseBounds, M: true, D: true, SegLen: 100, DDPHeader: tagged}, 38},
		{"untagged", Terminate{Cause: DDPInvalidQN, M: true, D: true, SegLen: 20, DDPHeader: untagged}, 42},
		{"read request", Terminate{Cause: RDMAPBaseBounds, M: true, D: true, R: true, SegLen: 46, DDPHeader: rr[:18], RDMAHeader: rr[18:]}, 70},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := tc.t.AppendMessage(nil, Version1, ddp.Version1, 1)
			require.Len(t, msg, tc.n)
			assert.Zero(t, (2+len(msg))%4, "whole FPDU before CRC needs no pad")
			m, err := Parse(msg)
			require.NoError(t, err)
			assert.Equal(t, OpTerminate, m.Opcode())
			require.NotNil(t, m.Terminate)
			got := *m.Terminate
			assert.Equal(t, tc.t.Cause, got.Cause)
			assert.Equal(t, tc.t.M, got.M)
			assert.Equal(t, tc.t.D, got.D)
			assert.Equal(t, tc.t.R, got.R)
			assert.Equal(t, tc.t.SegLen, got.SegLen)
			assert.Equal(t, []byte(tc.t.DDPHeader), []byte(got.DDPHeader))
			assert.Equal(t, []byte(tc.t.RDMAHeader), []byte(got.RDMAHeader))
			assert.Equal(t, LayoutRFC, got.Layout)
			assert.Equal(t, tc.t.Len(), len(m.Segment.Payload))
		})
	}
}

func TestTerminateByteLayout(t *testing.T) {
	term := Terminate{Cause: DDPInvalidQN, M: true, D: true, SegLen: 0x1234,
		DDPHeader: ddp.UntaggedFields{Version: ddp.Version1, QN: 9}.Append(nil)}
	b := term.AppendMessage(nil, Version1, ddp.Version1, 1)
	// DDP header: untagged, last, QN 2, MSN 1, MO 0; RDMAP control 0x47.
	assert.Equal(t, []byte{0x41, 0x47, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0}, b[:18])
	assert.Equal(t, []byte{0x12, 0x01, 0xC0, 0x00, 0x12, 0x34}, b[18:24])
}

func TestTerminateSiwLayout(t *testing.T) {
	untagged := ddp.UntaggedFields{Last: true, Version: ddp.Version1, RsvdULP0: 0x43, QN: 7, MSN: 1}.Append(nil)
	rr := readRequestULPDU(1, ReadRequestFields{SinkSTag: 1, Size: 10, SrcSTag: 2})
	for _, tc := range []struct {
		name   string
		b      []byte
		cause  Cause
		layout Layout
		m, d   bool
		rdma   bool
	}{
		// Observed from siw 6.1 (notes/real-peers-in-qemu.md).
		{"siw DDP version", []byte{0x21, 0x06, 0, 0}, DDPUntaggedInvalidVersion, LayoutSiw, false, false, false},
		{"siw invalid QN with header", append([]byte{0x21, 0x01, 0x03, 0, 0, 20}, untagged...), DDPInvalidQN, LayoutSiw, true, true, false},
		{"siw read request bounds", append([]byte{0x10, 0x01, 0x07, 0, 0, 46}, rr...), RDMAPBaseBounds, LayoutSiw, true, true, true},
		// 20 05 is ambiguous: RFC reading wins.
		{"ambiguous 20 05", []byte{0x20, 0x05, 0, 0}, MPALocalCatastrophic, LayoutRFC, false, false, false},
		{"rfc DDP version", []byte{0x12, 0x06, 0, 0}, DDPUntaggedInvalidVersion, LayoutRFC, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			term, err := ParseTerminate(tc.b)
			require.NoError(t, err)
			assert.Equal(t, tc.cause, term.Cause, "%v", term.Cause)
			assert.Equal(t, tc.layout, term.Layout)
			assert.Equal(t, tc.m, term.M)
			assert.Equal(t, tc.d, term.D)
			assert.Equal(t, tc.rdma, term.RDMAHeader != nil)
		})
	}
}

func TestTerminateSendInvalidateR(t *testing.T) {
	// siw sets R on a Send with Invalidate error: R is accepted, no RDMA header is read.
	send := ddp.UntaggedFields{Last: true, Version: ddp.Version1, RsvdULP0: 0x44, RsvdULP1: 0xdead, MSN: 1}.Append(nil)
	b := append([]byte{0x01, 0x09, 0xE0, 0, 0, 20}, send...)
	term, err := ParseTerminate(b)
	require.NoError(t, err)
	assert.Equal(t, RDMAPCannotInvalidate, term.Cause)
	assert.True(t, term.R)
	assert.Nil(t, term.RDMAHeader)
	assert.False(t, term.CopiedTagged())
}

func TestTerminateErrors(t *testing.T) {
	for _, b := range [][]byte{
		{},
		{0x12, 0x01, 0},
		{0x12, 0x01, 0x80, 0, 0},                 // M without the length
		{0x12, 0x01, 0x40, 0, 0, 20},             // D without the header
		{0x12, 0x01, 0x40, 0, 0, 20, 0x01, 0x43}, // D with a truncated header
		append([]byte{0x01, 0x00, 0xE0, 0, 0, 46}, readRequestULPDU(1, ReadRequestFields{})[:30]...), // R truncated
	} {
		_, err := ParseTerminate(b)
		require.Error(t, err, "%x", b)
		assert.True(t, errors.Is(err, ErrTerminateShort), "%v", err)
	}
}

func TestParseMessages(t *testing.T) {
	rr := readRequestULPDU(3, ReadRequestFields{SinkSTag: 1, SinkTO: 2, Size: 3, SrcSTag: 4, SrcTO: 5})
	m, err := Parse(rr)
	require.NoError(t, err)
	assert.Equal(t, OpReadRequest, m.Opcode())
	assert.Equal(t, uint32(3), m.ReadRequest.Size())
	assert.Empty(t, m.Payload)

	inv := append(ddp.UntaggedFields{Last: true, Version: ddp.Version1, RsvdULP0: 0x46, RsvdULP1: 0xCAFE, MSN: 1}.Append(nil), "hi"...)
	m, err = Parse(inv)
	require.NoError(t, err)
	assert.Equal(t, OpSendSEInvalidate, m.Opcode())
	assert.Equal(t, uint32(0xCAFE), m.InvalidateSTag())
	assert.Equal(t, "hi", string(m.Payload))

	w := append(ddp.TaggedFields{Last: true, Version: ddp.Version1, RsvdULP: 0x40, STag: 9, TO: 1}.Append(nil), "data"...)
	m, err = Parse(w)
	require.NoError(t, err)
	assert.Equal(t, OpWrite, m.Opcode())
	assert.Equal(t, "data", string(m.Payload))
	assert.Zero(t, m.InvalidateSTag())

	for name, b := range map[string][]byte{
		"send on tagged":    ddp.TaggedFields{Version: ddp.Version1, RsvdULP: 0x43}.Append(nil),
		"write on untagged": ddp.UntaggedFields{Version: ddp.Version1, RsvdULP0: 0x40}.Append(nil),
		"send on QN1":       ddp.UntaggedFields{Version: ddp.Version1, RsvdULP0: 0x43, QN: 1}.Append(nil),
		"reserved opcode":   ddp.UntaggedFields{Version: ddp.Version1, RsvdULP0: 0x48}.Append(nil),
	} {
		_, err := Parse(b)
		var pe *ParseError
		require.ErrorAs(t, err, &pe, name)
		assert.Equal(t, RDMAPUnexpectedOpcode, pe.Cause, name)
	}
	_, err = Parse(rr[:40])
	var pe *ParseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, RDMAPOperationUnspecified, pe.Cause)
	_, err = Parse([]byte{0x81, 0x40})
	require.ErrorAs(t, err, &pe)
	assert.ErrorIs(t, err, ddp.ErrShort)
}

func FuzzParse(f *testing.F) {
	f.Add(readRequestULPDU(1, ReadRequestFields{SinkSTag: 1, Size: 4096, SrcSTag: 2}))
	f.Add((&Terminate{Cause: DDPInvalidQN, M: true, D: true, DDPHeader: make([]byte, 18)}).AppendMessage(nil, Version1, ddp.Version1, 1))
	f.Add(append(ddp.TaggedFields{Last: true, Version: ddp.Version1, RsvdULP: 0x40, STag: 1}.Append(nil), 1, 2, 3))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || !pe.Cause.Known() {
				t.Fatalf("error %v is not a ParseError with a known cause", err)
			}
			return
		}
		if m.Opcode() == OpReadRequest && len(m.ReadRequest) != ReadRequestLen {
			t.Fatal("short Read Request view")
		}
		if m.Opcode() == OpTerminate && m.Terminate == nil {
			t.Fatal("Terminate not decoded")
		}
	})
}

func FuzzParseTerminate(f *testing.F) {
	f.Add([]byte{0x12, 0x01, 0xC0, 0, 0, 20, 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 1, 0, 0, 0, 0})
	f.Add([]byte{0x21, 0x06, 0, 0})
	f.Add([]byte{0x10, 0x01, 0x07, 0, 0, 46})
	f.Fuzz(func(t *testing.T, b []byte) {
		term, err := ParseTerminate(b)
		if err != nil {
			return
		}
		if term.Layout == LayoutSiw {
			return // we never produce the siw layout
		}
		// An RFC-layout Terminate re-encodes to its own prefix (reserved bits aside).
		enc := term.Append(nil)
		if len(enc) > len(b) {
			t.Fatalf("re-encoded %d bytes from %d", len(enc), len(b))
		}
		want := append([]byte(nil), b[:len(enc)]...)
		want[2] &= 0xE0
		want[3] = 0
		if string(enc) != string(want) {
			t.Fatalf("re-encoded %x, want %x", enc, want)
		}
	})
}
