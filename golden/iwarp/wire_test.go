package iwarp

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/internal/testwatch"
)

// TestSegmentationOnWire reads what an endpoint sends: segments no larger
// than the MULPDU, L only on the last, MO/TO advancing by the payload of
// each segment in increasing order, the same control field, STag, QN and
// MSN on every segment of a message, MSNs from 1 up by 1, zero Invalidate
// STag fields on plain Sends (requirements 14, 135-137, 141-142, 145-148,
// 152, 186).
func TestSegmentationOnWire(t *testing.T) {
	checkLeaks(t)
	h, v := hostilePair(t, pairOpts{cfg: Config{MULPDU: 1500}})
	require.Equal(t, 1500, v.ep.MULPDU())
	const n = 4000
	src := make([]byte, n)
	fill(src, 3)
	mr := v.reg(t, src, 0x100, all)
	h.send(t, write(1, 0, true, nil))
	require.NoError(t, v.ep.PostSend(
		SendWR{Opcode: WRWrite, SGL: []SGE{{Addr: 0x100, Length: n, LKey: mr.STag}}, RemoteAddr: 16384, RKey: 0x55},
		SendWR{Opcode: WRSend, SGL: []SGE{{Addr: 0x100, Length: n, LKey: mr.STag}}},
		SendWR{Opcode: WRSend, Solicited: true, Inline: []byte("x")},
	))
	// 4000 bytes: tagged 1486+1486+1028, untagged 1482+1482+1036, then 1.
	got := h.await(t, 7)
	require.Len(t, got, 7)
	var data []byte
	for i, m := range got[:3] {
		require.Equal(t, rdmap.OpWrite, m.Opcode())
		require.LessOrEqual(t, len(m.Segment.Header)+len(m.Segment.Payload), 1500)
		assert.Equal(t, i == 2, m.Segment.Control.Last(), "L on the last segment only")
		assert.Equal(t, uint32(0x55), m.Tagged().STag())
		assert.Equal(t, uint64(16384+len(data)), m.Tagged().TO())
		assert.Equal(t, byte(0x40), m.Tagged().RsvdULP())
		assert.Equal(t, ddp.Version1, m.Segment.Control.Version())
		data = append(data, m.Payload...)
	}
	assert.Equal(t, []int{1486, 1486, 1028}, []int{len(got[0].Payload), len(got[1].Payload), len(got[2].Payload)})
	assert.Equal(t, src, data)
	data = nil
	for i, m := range got[3:6] {
		require.Equal(t, rdmap.OpSend, m.Opcode())
		u := m.Untagged()
		assert.Equal(t, i == 2, m.Segment.Control.Last())
		assert.Equal(t, uint32(0), u.QN())
		assert.Equal(t, uint32(1), u.MSN(), "first message on QN 0 has MSN 1")
		assert.Equal(t, uint32(len(data)), u.MO())
		assert.Zero(t, u.RsvdULP1(), "Invalidate STag field of a plain Send")
		data = append(data, m.Payload...)
	}
	assert.Equal(t, []int{1482, 1482, 1036}, []int{len(got[3].Payload), len(got[4].Payload), len(got[5].Payload)})
	assert.Equal(t, src, data)
	last := got[6]
	assert.Equal(t, rdmap.OpSendSE, last.Opcode())
	assert.Equal(t, uint32(2), last.Untagged().MSN())
	assert.True(t, last.Segment.Control.Last())
}

// TestIgnoredFields: reserved bits in the DDP and RDMAP control fields and
// the Invalidate STag field of a plain Send are ignored on receive
// (requirements 13, 14, 139).
func TestIgnoredFields(t *testing.T) {
	checkLeaks(t)
	h, v := hostilePair(t, pairOpts{})
	e := setupVictim(t, v)
	require.NoError(t, v.ep.PostRecv(RecvWR{ID: 1, SGL: []SGE{{Addr: 0, Length: 64, LKey: e.Recv.STag}}}))
	w := write(e.Target.STag, targetVA, true, []byte("w"))
	w[0] |= byte(ddp.ControlRsvd)
	w[1] |= byte(rdmap.ControlRsvd)
	s := untagged(rdmap.OpSend, 0, 1, 0, true, 0xFFFFFFFF, []byte("s"))
	s[0] |= byte(ddp.ControlRsvd)
	s[1] |= byte(rdmap.ControlRsvd)
	h.send(t, w, s)
	c := waitOK(t, v.rcq, 1, WCRecv)
	assert.False(t, c.Invalidated)
	assert.Equal(t, byte('w'), e.Arena[guard])
	assert.Equal(t, byte('s'), e.RecvBuf[0])
	assert.NoError(t, v.ep.Err())
}

// TestReadResponsesInOrder: the responder answers Read Requests in the
// order they arrived, each with the Sink STag and TO of its request
// (requirements 17, 38, 40, 46, 79).
func TestReadResponsesInOrder(t *testing.T) {
	checkLeaks(t)
	h, v := hostilePair(t, pairOpts{})
	e := setupVictim(t, v)
	fill(e.Arena[guard:guard+targetLen], 9)
	var reqs [][]byte
	for i := uint32(0); i < 3; i++ {
		reqs = append(reqs, readReq(i+1, rdmap.ReadRequestFields{SinkSTag: 100 + i, SinkTO: uint64(1000 * i), Size: 3000 - 1000*i, SrcSTag: uint32(e.Target.STag), SrcTO: targetVA + uint64(i)}))
	}
	h.send(t, reqs...)
	got := h.await(t, 3)
	require.Len(t, got, 3)
	for i, m := range got {
		require.Equal(t, rdmap.OpReadResponse, m.Opcode())
		assert.Equal(t, uint32(100+i), m.Tagged().STag(), "response %d", i)
		assert.Equal(t, uint64(1000*i), m.Tagged().TO())
		assert.True(t, m.Segment.Control.Last())
		assert.Equal(t, e.Arena[guard+i:guard+i+3000-1000*i], m.Payload)
	}
}

// TestFirstErrorReported: with two bad segments back to back, the
// Terminate describes the first, and nothing after it is placed
// (requirements 98, 171).
func TestFirstErrorReported(t *testing.T) {
	checkLeaks(t)
	h, v := hostilePair(t, pairOpts{})
	e := setupVictim(t, v)
	bad1 := write(e.Target.STag^1, targetVA, true, []byte("x"))
	good := write(e.Target.STag, targetVA, true, []byte("y"))
	bad2 := untagged(rdmap.OpSend, 7, 1, 0, true, 0, nil)
	h.send(t, bad1, good, bad2)
	term := h.terminate(t)
	assert.Equal(t, rdmap.DDPInvalidSTag, term.Cause)
	assert.Equal(t, bad1[:ddp.TaggedHeaderLen], term.DDPHeader)
	e.untouched(t)
}

// TestPostChecks: the SGE checks at post time refuse memory the WR may not use.
func TestPostChecks(t *testing.T) {
	checkLeaks(t)
	a, b := pair(t, pairOpts{})
	ro := a.reg(t, make([]byte, 8), 0, mem.RemoteRead)
	other := b.reg(t, make([]byte, 8), 0, all)
	assert.ErrorIs(t, a.ep.PostRecv(RecvWR{SGL: []SGE{{Addr: 0, Length: 8, LKey: ro.STag}}}), ErrInvalidWR, "receive into memory without LocalWrite")
	assert.ErrorIs(t, a.ep.PostSend(SendWR{Opcode: WRSend, SGL: []SGE{{Addr: 0, Length: 8, LKey: other.STag}}}), ErrInvalidWR, "another PD's lkey")
	assert.ErrorIs(t, a.ep.PostSend(SendWR{Opcode: WRSend, SGL: []SGE{{Addr: 4, Length: 8, LKey: ro.STag}}}), ErrInvalidWR, "out of bounds")
	assert.ErrorIs(t, a.ep.PostSend(SendWR{Opcode: WRRead, SGL: []SGE{{Addr: 0, Length: 4, LKey: ro.STag}}}), ErrInvalidWR, "Read sink without LocalWrite")
	assert.ErrorIs(t, a.ep.PostSend(SendWR{Opcode: WRRead, SGL: []SGE{{Addr: 0, Length: 4, LKey: ro.STag}, {Addr: 4, Length: 4, LKey: ro.STag}}}), ErrInvalidWR, "two sink SGEs")
	assert.ErrorIs(t, a.ep.PostSend(SendWR{Opcode: WRBindMW + 1}), ErrInvalidWR)
	assert.ErrorIs(t, a.ep.PostSend(SendWR{Opcode: WRBindMW}), ErrInvalidWR, "BIND_MW without a bind")
	many := make([]SendWR, 300)
	for i := range many {
		many[i] = SendWR{Opcode: WRSend, Inline: []byte("x")}
	}
	assert.ErrorIs(t, a.ep.PostSend(many...), ErrQueueFull)
	assert.NoError(t, a.ep.Err())
}

// TestMSNWraps: MSNs go up by one modulo 2^32, 0xFFFFFFFF is followed by
// 0, both ways (requirement 145). The endpoints start near the wrap.
func TestMSNWraps(t *testing.T) {
	checkLeaks(t)
	h, v := hostilePair(t, pairOpts{cfg: Config{firstMSN: 0xFFFFFFFE}})
	e := setupVictim(t, v)
	for i := 0; i < 3; i++ {
		require.NoError(t, v.ep.PostRecv(RecvWR{ID: uint64(i), SGL: []SGE{{Addr: uint64(i), Length: 1, LKey: e.Recv.STag}}}))
	}
	h.send(t, untagged(rdmap.OpSend, 0, 0xFFFFFFFE, 0, true, 0, []byte("a")),
		untagged(rdmap.OpSend, 0, 0xFFFFFFFF, 0, true, 0, []byte("b")),
		untagged(rdmap.OpSend, 0, 0, 0, true, 0, []byte("c")))
	for i := 0; i < 3; i++ {
		waitOK(t, v.rcq, uint64(i), WCRecv)
	}
	assert.Equal(t, "abc", string(e.RecvBuf[:3]))
	for i := 0; i < 3; i++ {
		require.NoError(t, v.ep.PostSend(SendWR{Opcode: WRSend, Inline: []byte{'x'}}))
	}
	got := h.await(t, 3)
	require.Len(t, got, 3)
	assert.Equal(t, []uint32{0xFFFFFFFE, 0xFFFFFFFF, 0}, []uint32{got[0].Untagged().MSN(), got[1].Untagged().MSN(), got[2].Untagged().MSN()})
}

// TestInPlaceFramingOnWire: FPDUs framed around payloads read in place
// from registered memory (writev) are, octet for octet, those mpa.Framer
// builds from the same ULPDUs, whatever the SGE boundaries and with CRC on
// or off.
func TestInPlaceFramingOnWire(t *testing.T) {
	for _, noCRC := range []bool{false, true} {
		t.Run(map[bool]string{false: "crc", true: "nocrc"}[noCRC], func(t *testing.T) {
			checkLeaks(t)
			h, v := hostilePair(t, pairOpts{noCRC: noCRC, cfg: Config{MULPDU: 1500}})
			require.NotNil(t, v.ep.zc, "a kernel socket with golden MPA and no markers frames in place")
			src := make([]byte, 8000)
			fill(src, 9)
			mr := v.reg(t, src, 0x1000, all)
			h.send(t, write(1, 0, true, nil))
			sgl := []SGE{{Addr: 0x1000, Length: 700, LKey: mr.STag}, {Addr: 0x1000 + 700, Length: 3001, LKey: mr.STag}, {Addr: 0x1000 + 4000, Length: 99, LKey: mr.STag}}
			require.NoError(t, v.ep.PostSend(
				SendWR{Opcode: WRWrite, SGL: sgl, RemoteAddr: 1 << 40, RKey: 0x77},
				SendWR{Opcode: WRSend, SGL: sgl[1:2]},
				SendWR{Opcode: WRSend, Inline: []byte("tail")},
			))
			go v.ep.Close()
			h.conn.SetReadDeadline(testwatch.Deadline())
			wire, err := io.ReadAll(h.conn)
			require.NoError(t, err)
			var want []byte
			f := h.p.Framer() // the victim's transmit side, as the peer negotiated it
			f.CRC = !noCRC
			n := 0
			require.NoError(t, h.df.Feed(wire, func(u mpa.ULPDU) error {
				n++
				want, err = f.AppendFPDU(want, u.Data)
				return err
			}))
			require.Equal(t, 7, n, "3 Write and 3 Send segments (the last one copied: under zcMin), one inline Send")
			require.Equal(t, want, wire)
		})
	}
}
