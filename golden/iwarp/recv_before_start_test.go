package iwarp

import (
	"testing"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/stretchr/testify/require"
)

// TestRecvBeforeStart: a Send already waiting in the socket when the
// endpoint starts lands in a receive given in Config.Recv (verbs: post_recv
// before connecting). Queued after the start, it would be a Terminate.
func TestRecvBeforeStart(t *testing.T) {
	checkLeaks(t)
	cc, cp, sc, sp := connectMPA(t, mpa.Config{}, mpa.Config{})

	// The initiator's first FPDU, a Send, is in the responder's socket
	// before its endpoint exists.
	h := ddp.UntaggedFields{Last: true, Version: ddp.Version1, RsvdULP0: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpSend)),
		QN: rdmap.QNSend, MSN: 1}
	f := cp.Framer()
	wire, err := f.AppendFPDU(nil, append(h.Append(nil), "early"...))
	require.NoError(t, err)
	_, err = cc.Write(wire)
	require.NoError(t, err)

	tab := mem.NewTable()
	pd := tab.AllocPD()
	buf := make([]byte, 16)
	mr, err := pd.RegisterMR(buf, 0, mem.LocalWrite, 0)
	require.NoError(t, err)
	cq := NewCQ(16)
	ep, err := New(sc, sp, Config{PD: pd, SendCQ: cq, RecvCQ: cq,
		Recv: []RecvWR{{ID: 7, SGL: []SGE{{Addr: 0, Length: 16, LKey: mr.STag}}}}})
	require.NoError(t, err)
	t.Cleanup(func() { ep.Close() })
	c := waitOK(t, cq, 7, WCRecv)
	require.Equal(t, uint32(5), c.ByteLen)
	require.Equal(t, "early", string(buf[:5]))
}
