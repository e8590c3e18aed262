package iwarp

import (
	"testing"
	"time"

	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/stretchr/testify/require"
)

// TestResponderCloseBeforeFirstFPDU: a Responder that has received no
// FPDU may send none (RFC 5044 §7.1.2 rule 4); closing with nothing
// queued needs none, so the FIN goes at once and the Initiator sees a
// graceful end. The Linger is an hour: a close that waited for the first
// FPDU or for the Linger would hang the test.
func TestResponderCloseBeforeFirstFPDU(t *testing.T) {
	checkLeaks(t)
	o := pairOpts{rev: mpa.Rev1, cfg: Config{Linger: time.Hour}}
	ini, res := pair(t, o)
	require.False(t, ini.ep.params.WaitFirstFPDU)
	require.True(t, res.ep.params.WaitFirstFPDU)
	buf := res.reg(t, make([]byte, 8), 0, all)
	require.NoError(t, res.ep.PostRecv(RecvWR{ID: 3, SGL: []SGE{{Addr: 0, Length: 8, LKey: buf.STag}}}))

	require.NoError(t, res.ep.Close())
	require.ErrorIs(t, res.ep.Err(), ErrClosed)
	c := wait(t, res.rcq)
	require.Equal(t, uint64(3), c.ID)
	require.Equal(t, WCFlushErr, c.Status)
	require.ErrorIs(t, res.ep.PostSend(SendWR{Opcode: WRSend}), ErrClosed)
	<-ini.ep.Done()
	require.ErrorIs(t, ini.ep.Err(), ErrClosed)
}
