package qp_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/iwarp/internal/matrix"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/iwarp/qp"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
)

const all = mem.LocalWrite | mem.RemoteRead | mem.RemoteWrite

// TestSegmentation: Writes and Sends are cut at the MULPDU, with TO or MO
// advancing, L on the last segment only and one MSN per Send; a zero-length
// message is one segment.
func TestSegmentation(t *testing.T) {
	for _, mulpdu := range []int{mpa.MinMULPDU, 1024, 1460, mpa.MaxULPDULength} {
		v := newNode(t, func(c *qp.Config) { c.MULPDU = mulpdu })
		const n = 100000
		mr := v.reg(t, make([]byte, n), 0x100, all)
		require.NoError(t, v.q.PostSend(
			qp.SendWR{Opcode: qp.WRWrite, SGL: []qp.SGE{{Addr: 0x100, Length: n / 2, LKey: mr.STag}, {Addr: 0x100 + n/2, Length: n / 2, LKey: mr.STag}}, RemoteAddr: 16384, RKey: 0x55},
			qp.SendWR{Opcode: qp.WRSend, SGL: []qp.SGE{{Addr: 0x100, Length: n, LKey: mr.STag}}},
			qp.SendWR{Opcode: qp.WRSend, Solicited: true},
		))
		v.run()
		var tagged, untagged uint64
		var sends []uint32
		for _, m := range sent(t, v) {
			require.LessOrEqual(t, len(m.Segment.Header)+len(m.Payload), mulpdu)
			if m.Segment.Control.Tagged() {
				assert.Equal(t, 16384+tagged, m.Tagged().TO())
				tagged += uint64(len(m.Payload))
				assert.Equal(t, tagged == n, m.Segment.Control.Last())
				continue
			}
			h := m.Untagged()
			if h.MO() == 0 {
				sends = append(sends, h.MSN())
				untagged = 0
			}
			assert.Equal(t, untagged, uint64(h.MO()))
			untagged += uint64(len(m.Payload))
			if m.Opcode() == rdmap.OpSendSE {
				assert.Zero(t, untagged)
			} else {
				assert.Equal(t, untagged == n, m.Segment.Control.Last())
			}
		}
		assert.Equal(t, uint64(n), tagged)
		assert.Equal(t, []uint32{1, 2}, sends)
	}
}

// TestORDAndFence: a Read beyond ORD waits, and so does every WR behind it
// (posting order); a fenced WR waits for every earlier Read's response.
func TestORDAndFence(t *testing.T) {
	for _, fence := range []bool{false, true} {
		v := newNode(t, func(c *qp.Config) { c.ORD = 1 })
		mr := v.reg(t, make([]byte, 64), 0, all)
		read := qp.SendWR{ID: 1, Opcode: qp.WRRead, SGL: []qp.SGE{{Addr: 0, Length: 8, LKey: mr.STag}}, RKey: 9, Signaled: true}
		second := qp.SendWR{ID: 2, Opcode: qp.WRSend, Inline: []byte("x"), Signaled: true, Fence: true}
		if !fence {
			second = read
			second.ID = 2
		}
		require.NoError(t, v.q.PostSend(read, second))
		v.run()
		require.Len(t, v.wire, 1, "the second WR waits")
		assert.Equal(t, rdmap.OpReadRequest, sent(t, v)[0].Opcode())
		require.NoError(t, v.q.Receive(matrix.ReadResp(mr.STag, 0, make([]byte, 8))))
		v.run()
		require.Len(t, v.wire, 2)
		require.NotEmpty(t, v.cq.send)
		assert.Equal(t, uint64(1), v.cq.send[0].ID)
		assert.Equal(t, qp.WCRead, v.cq.send[0].Opcode)
	}
}

// TestCompletionOrder: a Send posted after a Read completes after it,
// though it is written first (RFC 5040 §5.5 rule 15); unsignaled WRs
// complete silently.
func TestCompletionOrder(t *testing.T) {
	v := newNode(t, nil)
	mr := v.reg(t, make([]byte, 64), 0, all)
	require.NoError(t, v.q.PostSend(
		qp.SendWR{ID: 1, Opcode: qp.WRRead, SGL: []qp.SGE{{Addr: 0, Length: 8, LKey: mr.STag}}, RKey: 9, Signaled: true},
		qp.SendWR{ID: 2, Opcode: qp.WRSend, Inline: []byte("x")},
		qp.SendWR{ID: 3, Opcode: qp.WRWrite, Inline: []byte("y"), RKey: 5, Signaled: true},
	))
	v.run()
	require.Len(t, v.wire, 3)
	assert.Empty(t, v.cq.send, "nothing completes before the Read")
	require.NoError(t, v.q.Receive(matrix.ReadResp(mr.STag, 0, []byte("12345678"))))
	require.Len(t, v.cq.send, 2)
	assert.Equal(t, []uint64{1, 3}, []uint64{v.cq.send[0].ID, v.cq.send[1].ID})
	assert.Equal(t, uint32(8), v.cq.send[0].ByteLen)
	assert.Zero(t, v.q.NonReads())
}

// TestHandOverRace: a WR whose last FPDU is being written when the stream
// fails completes with success (handed to the LLP, RFC 5040 §5.5 rule
// 14); one emitted but not handed over is flushed, and its octets are
// not written.
func TestHandOverRace(t *testing.T) {
	for _, handed := range []bool{true, false} {
		v := newNode(t, nil)
		require.NoError(t, v.q.PostSend(qp.SendWR{ID: 9, Opcode: qp.WRSend, Inline: []byte("last words"), Signaled: true}))
		_, ok := v.q.Next()
		require.True(t, ok)
		if handed {
			require.True(t, v.q.HandOver())
		}
		v.q.LLPEnded(nil) // the peer's FIN, seen by the receive side
		if handed {
			v.q.Written(false)
		} else {
			assert.False(t, v.q.HandOver())
		}
		require.Len(t, v.cq.send, 1)
		want := qp.WCFlushErr
		if handed {
			want = qp.WCSuccess
		}
		assert.Equal(t, want, v.cq.send[0].Status)
		assert.ErrorIs(t, v.q.Err(), qp.ErrClosed)
	}
}

// TestStartRules: a Responder sends nothing before the first inbound
// ULPDU; an Initiator with an RTR sends it first and never completes it.
func TestStartRules(t *testing.T) {
	r := newNode(t, func(c *qp.Config) { c.HoldTx = true })
	require.NoError(t, r.q.PostSend(qp.SendWR{ID: 1, Opcode: qp.WRSend, Signaled: true}))
	assert.Equal(t, qp.JobWait, r.q.Peek().Kind)
	require.NoError(t, r.q.Receive(matrix.Write(1, 0, true, nil)))
	r.run()
	require.Len(t, r.wire, 1)

	for _, rtr := range []mpa.RTR{mpa.RTRWrite, mpa.RTRRead, mpa.RTRSend} {
		i := newNode(t, func(c *qp.Config) { c.RTR = qp.RTRFor(rtr) })
		require.NoError(t, i.q.PostSend(qp.SendWR{ID: 1, Opcode: qp.WRSend, Signaled: true}))
		i.run()
		msgs := sent(t, i)
		require.Len(t, msgs, 2)
		want := map[mpa.RTR]rdmap.Opcode{mpa.RTRWrite: rdmap.OpWrite, mpa.RTRRead: rdmap.OpReadRequest, mpa.RTRSend: rdmap.OpSend}[rtr]
		assert.Equal(t, want, msgs[0].Opcode())
		if rtr == mpa.RTRRead {
			require.NoError(t, i.q.Receive(matrix.ReadResp(0, 0, nil)))
		}
		require.Len(t, i.cq.send, 1, "the RTR is not completed")
		assert.Equal(t, uint64(1), i.cq.send[0].ID)
	}
}

// TestPostChecks: malformed WRs are refused with ErrInvalidWR, a full
// queue with ErrQueueFull, and nothing of a refused batch is queued.
func TestPostChecks(t *testing.T) {
	v := newNode(t, func(c *qp.Config) { c.SQDepth, c.RQDepth = 2, 1 })
	ro := v.reg(t, make([]byte, 8), 0, mem.RemoteRead)
	other, err := v.tab.AllocPD().RegisterMR(make([]byte, 8), 0, all, 0)
	require.NoError(t, err)
	for name, wr := range map[string]qp.SendWR{
		"another PD's lkey":            {Opcode: qp.WRSend, SGL: []qp.SGE{{Addr: 0, Length: 8, LKey: other.STag}}},
		"out of bounds":                {Opcode: qp.WRSend, SGL: []qp.SGE{{Addr: 4, Length: 8, LKey: ro.STag}}},
		"Read sink without LocalWrite": {Opcode: qp.WRRead, SGL: []qp.SGE{{Addr: 0, Length: 4, LKey: ro.STag}}},
		"two sink SGEs":                {Opcode: qp.WRRead, SGL: []qp.SGE{{Addr: 0, Length: 4, LKey: ro.STag}, {Addr: 4, Length: 4, LKey: ro.STag}}},
		"opcode":                       {Opcode: qp.WRBindMW + 1},
		"BIND_MW without a bind":       {Opcode: qp.WRBindMW},
	} {
		assert.ErrorIs(t, v.q.PostSend(qp.SendWR{Opcode: qp.WRSend}, wr), qp.ErrInvalidWR, name)
	}
	assert.ErrorIs(t, v.q.PostRecv(qp.RecvWR{SGL: []qp.SGE{{Addr: 0, Length: 8, LKey: ro.STag}}}), qp.ErrInvalidWR)
	assert.Zero(t, v.q.SQLen(), "a refused batch queues nothing")
	assert.ErrorIs(t, v.q.PostSend(make([]qp.SendWR, 3)...), qp.ErrQueueFull)
	assert.ErrorIs(t, v.q.PostRecv(qp.RecvWR{}, qp.RecvWR{}), qp.ErrQueueFull)
}

// TestCQOverflow: a completion the CQ cannot take ends the stream with a
// Local Catastrophic Terminate.
func TestCQOverflow(t *testing.T) {
	v := newNode(t, nil)
	v.cq.limit = 1
	require.NoError(t, v.q.PostSend(
		qp.SendWR{ID: 1, Opcode: qp.WRSend, Signaled: true},
		qp.SendWR{ID: 2, Opcode: qp.WRSend, Signaled: true}))
	v.run()
	require.ErrorIs(t, v.q.Err(), qp.ErrCQOverflow)
	assert.Equal(t, rdmap.RDMAPLocalCatastrophic, sent(t, v)[len(v.wire)-1].Terminate.Cause)
}

// TestGracefulClose: after Close the queued work still goes, then the
// transmitter exits; a FIN then ends the stream with ErrClosed and the
// receives still posted are flushed.
func TestGracefulClose(t *testing.T) {
	v := newNode(t, nil)
	mr := v.reg(t, make([]byte, 8), 0, all)
	require.NoError(t, v.q.PostRecv(qp.RecvWR{ID: 5, SGL: []qp.SGE{{Addr: 0, Length: 8, LKey: mr.STag}}}))
	require.NoError(t, v.q.PostSend(qp.SendWR{ID: 1, Opcode: qp.WRSend, Signaled: true}))
	v.q.Close()
	assert.ErrorIs(t, v.q.PostSend(qp.SendWR{Opcode: qp.WRSend}), qp.ErrClosed)
	v.run()
	assert.True(t, v.exited)
	require.Len(t, v.wire, 1)
	assert.Nil(t, v.q.TakeTerminate())
	v.q.LLPEnded(nil)
	v.q.Finish()
	assert.ErrorIs(t, v.q.Err(), qp.ErrClosed)
	require.Len(t, v.cq.recv, 1)
	assert.Equal(t, qp.WCFlushErr, v.cq.recv[0].Status)
	assert.Equal(t, qp.Closed, v.q.State())
}

// TestConnectionLost: a broken connection fails the stream with
// ErrConnLost and no Terminate.
func TestConnectionLost(t *testing.T) {
	v := newNode(t, nil)
	v.q.LLPEnded(errors.New("reset"))
	assert.ErrorIs(t, v.q.Err(), qp.ErrConnLost)
	assert.Equal(t, qp.JobExit, v.q.Peek().Kind)
}

// TestMemoryWRs: Local Invalidate and Bind take effect in send-queue
// order and complete in posting order; a failing one fails the stream.
func TestMemoryWRs(t *testing.T) {
	v := newNode(t, nil)
	mr := v.reg(t, make([]byte, 64), 0, all|mem.Bind)
	mw, err := v.pd.AllocMW(mem.KindMW1)
	require.NoError(t, err)
	require.NoError(t, v.q.PostSend(
		qp.SendWR{ID: 1, Opcode: qp.WRBindMW, Bind: &qp.MWBind{MW: mw, MR: mr, Addr: 0, Length: 16, Access: mem.RemoteWrite}, Signaled: true},
		qp.SendWR{ID: 2, Opcode: qp.WRLocalInvalidate, InvalidateSTag: mr.STag, Signaled: true},
		qp.SendWR{ID: 3, Opcode: qp.WRLocalInvalidate, InvalidateSTag: mr.STag, Signaled: true}, // already invalid
	))
	v.run()
	require.Len(t, v.cq.send, 3)
	assert.Equal(t, []qp.Status{qp.WCSuccess, qp.WCSuccess, qp.WCLocProtErr}, []qp.Status{v.cq.send[0].Status, v.cq.send[1].Status, v.cq.send[2].Status})
	assert.Equal(t, qp.WCBindMW, v.cq.send[0].Opcode)
	en, ok := v.tab.Lookup(mr.STag)
	require.True(t, ok)
	assert.False(t, en.Valid)
	assert.Equal(t, rdmap.RDMAPLocalCatastrophic, sent(t, v)[len(v.wire)-1].Terminate.Cause)
}

// TestBindRefused: a bind the region does not allow completes with
// MW_BIND_ERR (IBV_WC_MW_BIND_ERR, as the card reports it) and fails the
// stream.
func TestBindRefused(t *testing.T) {
	v := newNode(t, nil)
	mr := v.reg(t, make([]byte, 64), 0, all) // no bind right
	mw, err := v.pd.AllocMW(mem.KindMW2)
	require.NoError(t, err)
	require.NoError(t, v.q.PostSend(qp.SendWR{ID: 1, Opcode: qp.WRBindMW, Bind: &qp.MWBind{MW: mw, MR: mr, Addr: 0, Length: 16, Access: mem.RemoteWrite}}))
	v.run()
	require.Len(t, v.cq.send, 1)
	assert.Equal(t, qp.WCMWBindErr, v.cq.send[0].Status)
	assert.Equal(t, qp.WCBindMW, v.cq.send[0].Opcode)
	assert.Equal(t, rdmap.RDMAPLocalCatastrophic, sent(t, v)[len(v.wire)-1].Terminate.Cause)
}

// TestNew refuses configurations a QP cannot run with.
func TestNew(t *testing.T) {
	tab := mem.NewTable()
	for name, c := range map[string]qp.Config{
		"no memory": {Completer: &cqs{}, MULPDU: 1024},
		"MULPDU":    {Memory: tab, Completer: &cqs{}, MULPDU: 100},
		"version":   {Memory: tab, Completer: &cqs{}, MULPDU: 1024, Version: 2},
	} {
		_, err := qp.New(c)
		assert.ErrorIs(t, err, qp.ErrInvalidWR, name)
	}
}
