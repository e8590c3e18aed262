package qp_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp/internal/matrix"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/iwarp/qp"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
)

// terminate checks that n's transmitter ends with its one Terminate and
// returns it.
func terminate(t *testing.T, n *node) *rdmap.Terminate {
	t.Helper()
	require.Equal(t, qp.JobTerminate, n.q.Peek().Kind)
	n.run()
	require.NotNil(t, n.term, "no Terminate")
	m, err := rdmap.Parse(n.term)
	require.NoError(t, err)
	require.Equal(t, rdmap.OpTerminate, m.Opcode())
	assert.Equal(t, uint32(rdmap.QNTerminate), m.Untagged().QN())
	assert.Equal(t, uint32(1), m.Untagged().MSN())
	assert.Equal(t, rdmap.LayoutRFC, m.Terminate.Layout)
	assert.Equal(t, qp.JobExit, n.q.Peek().Kind, "one Terminate per stream")
	return m.Terminate
}

// TestHostilePeer feeds each row of the receive-side error matrix to a QP
// and checks its Terminate (layer/type/code, M/D/R, copied headers), that
// the offender and everything after it is dropped without a byte placed,
// and that posted work is flushed.
func TestHostilePeer(t *testing.T) {
	for _, tc := range matrix.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			v := newNode(t, func(c *qp.Config) { c.IRD = tc.IRD })
			e, err := matrix.Setup(v.pd)
			require.NoError(t, err)
			for i := 0; i < tc.Recvs; i++ {
				require.NoError(t, v.q.PostRecv(qp.RecvWR{ID: uint64(i), SGL: []qp.SGE{{Addr: 0, Length: 64, LKey: e.Recv.STag}}}))
			}
			var msgs [][]byte
			if tc.Msgs != nil {
				msgs = tc.Msgs(e)
			} else {
				// Both arrive before the transmitter answers the first.
				msgs = matrix.BeyondIRD(v.reg(t, make([]byte, 64), 0, mem.RemoteRead).STag, 64)
			}
			for i, m := range msgs[:len(msgs)-1] {
				require.NoError(t, v.q.Receive(m), "message %d before the offender", i)
			}
			offender := msgs[len(msgs)-1]
			require.ErrorIs(t, v.q.Receive(offender), qp.ErrStopped)
			require.ErrorIs(t, v.q.Receive(matrix.Write(e.Target.STag, matrix.TargetVA, true, []byte("late"))), qp.ErrStopped, "later segments are dropped")
			tc.CheckTerminate(t, terminate(t, v), offender)
			var ee *qp.Error
			require.ErrorAs(t, v.q.Err(), &ee)
			assert.Equal(t, tc.Cause, ee.Cause)
			assert.False(t, ee.Remote)
			require.NoError(t, e.Untouched())
			if tc.Cause == rdmap.DDPMessageTooLong && tc.Recvs > 0 {
				assert.Equal(t, make([]byte, len(e.RecvBuf)), e.RecvBuf, "nothing of an oversize Send is placed")
			}
			require.Len(t, v.cq.recv, tc.Recvs)
			for i, c := range v.cq.recv {
				if c.Status == qp.WCSuccess {
					continue // an earlier, valid Send of the sequence
				}
				want := qp.WCFlushErr
				if tc.Cause == rdmap.DDPMessageTooLong && i == 0 {
					want = qp.WCLocLenErr // the receive the Send overflowed
				}
				assert.Equal(t, want, c.Status)
			}
			if tc.Cause == rdmap.RDMAPCannotInvalidate {
				if en, ok := v.tab.Lookup(e.Target.STag); assert.True(t, ok) {
					assert.True(t, en.Valid, "S7: the shared STag stays valid")
				}
			}
			assert.ErrorIs(t, v.q.PostSend(qp.SendWR{Opcode: qp.WRSend}), qp.ErrTerminated)
		})
	}
}

// TestMPAError: an error of the MPA layer is a Terminate with layer LLP
// and no headers, even before any ULPDU arrived at a Responder; one that
// requires closing TCP at once sends none.
func TestMPAError(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		cause rdmap.Cause
		term  bool
	}{
		{"CRC", &mpa.Error{Code: mpa.CodeCRC}, rdmap.MPACRC, true},
		{"marker", &mpa.Error{Code: mpa.CodeMarker}, rdmap.MPAMarker, true},
		{"other", bytes.ErrTooLarge, rdmap.MPAConnectionLost, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newNode(t, func(c *qp.Config) { c.HoldTx = true })
			require.Equal(t, qp.JobWait, v.q.Peek().Kind, "a Responder waits for the first FPDU")
			v.q.MPAError(tc.err)
			var ee *qp.Error
			require.ErrorAs(t, v.q.Err(), &ee)
			assert.Equal(t, tc.cause, ee.Cause)
			if !tc.term {
				assert.Equal(t, qp.JobExit, v.q.Peek().Kind)
				return
			}
			term := terminate(t, v)
			assert.Equal(t, tc.cause, term.Cause)
			assert.False(t, term.M || term.D || term.R)
		})
	}
}

// TestReceiveTerminate: a peer's Terminate fails the stream with its
// cause, flushes posted work (the WR it most likely hit with the remote
// status) and is never answered.
func TestReceiveTerminate(t *testing.T) {
	v := newNode(t, nil)
	e, err := matrix.Setup(v.pd)
	require.NoError(t, err)
	require.NoError(t, v.q.PostRecv(qp.RecvWR{ID: 7, SGL: []qp.SGE{{Addr: 0, Length: 64, LKey: e.Recv.STag}}}))
	require.NoError(t, v.q.PostSend(qp.SendWR{ID: 8, Opcode: qp.WRSend, Inline: []byte("x"), Signaled: true}))
	s, ok := v.q.Next() // taken, not yet handed over
	require.True(t, ok)
	require.True(t, s.Last)
	copied := matrix.Write(0x99, 5, true, nil)
	t1 := rdmap.Terminate{Cause: rdmap.DDPBaseBounds, M: true, D: true, SegLen: 14, DDPHeader: copied[:14]}
	require.ErrorIs(t, v.q.Receive(t1.AppendMessage(nil, 1, 1, 1)), qp.ErrStopped)
	var ee *qp.Error
	require.ErrorAs(t, v.q.Err(), &ee)
	assert.True(t, ee.Remote)
	assert.Equal(t, rdmap.DDPBaseBounds, ee.Cause)
	assert.Equal(t, copied[:14], ee.Terminate.DDPHeader)
	assert.Equal(t, qp.JobExit, v.q.Peek().Kind, "a Terminate is never answered with a Terminate")
	assert.False(t, v.q.HandOver(), "nothing more is written")
	require.Len(t, v.cq.send, 1)
	assert.Equal(t, qp.WCRemAccessErr, v.cq.send[0].Status, "the WR the peer's error hit")
	require.Len(t, v.cq.recv, 1)
	assert.Equal(t, qp.WCFlushErr, v.cq.recv[0].Status)
	assert.Nil(t, v.q.TakeTerminate())
}

// TestLocalProtectionError: a WR whose memory is deregistered before it is
// sent completes with a local protection error and the stream ends with a
// Local Catastrophic Terminate without headers (RFC 5040 §7.1 case 1).
func TestLocalProtectionError(t *testing.T) {
	v := newNode(t, nil)
	mr := v.reg(t, make([]byte, 128), 0, mem.LocalWrite)
	require.NoError(t, v.q.PostSend(qp.SendWR{ID: 1, Opcode: qp.WRSend, SGL: []qp.SGE{{Addr: 0, Length: 128, LKey: mr.STag}}, Signaled: true}))
	require.NoError(t, mr.Deregister())
	_, ok := v.q.Next()
	require.False(t, ok)
	term := terminate(t, v)
	assert.Equal(t, rdmap.RDMAPLocalCatastrophic, term.Cause)
	assert.False(t, term.M || term.D || term.R)
	require.Len(t, v.cq.send, 1)
	assert.Equal(t, qp.WCLocProtErr, v.cq.send[0].Status)
}

// TestHostileNoBytesOutside writes many tagged segments at a region and
// checks, against a shadow copy, that the only bytes that ever change are
// those of segments that passed every check.
func TestHostileNoBytesOutside(t *testing.T) {
	v := newNode(t, nil)
	e, err := matrix.Setup(v.pd)
	require.NoError(t, err)
	shadow := bytes.Clone(e.Arena)
	for i := 0; i < 200; i++ {
		to := matrix.TargetVA + uint64(i*17%matrix.TargetLen)
		n := min(37, matrix.TargetLen-int(to-matrix.TargetVA))
		p := bytes.Repeat([]byte{byte(i)}, n)
		require.NoError(t, v.q.Receive(matrix.Write(e.Target.STag, to, true, p)))
		copy(shadow[matrix.Guard+int(to-matrix.TargetVA):], p)
	}
	require.ErrorIs(t, v.q.Receive(matrix.Write(e.Target.STag, matrix.TargetVA+matrix.TargetLen-10, true, make([]byte, 11))), qp.ErrStopped)
	assert.Equal(t, rdmap.DDPBaseBounds, terminate(t, v).Cause)
	assert.Equal(t, shadow, e.Arena)
}

// TestReadSourceRevoked: the source of a Read is invalidated while the
// response is being sent; the response stops once what was read is
// handed over, and the Terminate carries the Read Request header updated
// to where it stopped (RFC 5040 §4.8).
func TestReadSourceRevoked(t *testing.T) {
	v := newNode(t, nil)
	const size = 64 << 10
	src := v.reg(t, make([]byte, size), 0x10000000, mem.RemoteRead)
	rr := rdmap.ReadRequestFields{SinkSTag: 0x99, SinkTO: 0x5000, Size: size, SrcSTag: uint32(src.STag), SrcTO: 0x10000000}
	require.NoError(t, v.q.Receive(matrix.ReadReq(1, rr)))
	for i := 0; i < 3; i++ {
		v.step()
	}
	require.NoError(t, v.tab.Invalidate(src.STag, v.pd.ID))
	v.run()
	msgs := sent(t, v)
	require.GreaterOrEqual(t, len(msgs), 2)
	var placed uint64
	for _, m := range msgs[:len(msgs)-1] {
		require.Equal(t, rdmap.OpReadResponse, m.Opcode())
		require.Equal(t, rr.SinkTO+placed, m.Tagged().TO())
		placed += uint64(len(m.Payload))
	}
	require.Equal(t, uint64(3*ddp.MaxPayload(1024, ddp.TaggedHeaderLen)), placed, "the three segments emitted before the revocation are handed over")
	term := msgs[len(msgs)-1].Terminate
	require.NotNil(t, term)
	assert.Equal(t, rdmap.RDMAPInvalidSTag, term.Cause)
	assert.True(t, term.M && term.D && term.R)
	assert.Equal(t, rr.Advance(uint32(placed)), rdmap.ReadRequest(term.RDMAHeader).Fields(), "updated to the progress made")
}
