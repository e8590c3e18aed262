package iwarp

import (
	"io"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/internal/testwatch"
)

// gateConn holds the transmitter just after its first Write has reached
// TCP, until the test releases it.
type gateConn struct {
	net.Conn
	written, release chan struct{}
	once             sync.Once
}

func (g *gateConn) Write(p []byte) (int, error) {
	n, err := g.Conn.Write(p)
	g.once.Do(func() {
		close(g.written)
		<-g.release
	})
	return n, err
}

// TestSendWrittenBeforePeerCloses: a Send whose FPDU TCP has taken
// completes with success even when the peer's FIN is processed before the
// transmitter marks it done (RFC 5040 §5.5 rule 14: handed to the LLP).
func TestSendWrittenBeforePeerCloses(t *testing.T) {
	checkLeaks(t)
	cc, p, peer, _ := connectMPA(t, mpa.Config{}, mpa.Config{})

	gate := &gateConn{Conn: cc, written: make(chan struct{}), release: make(chan struct{})}
	tab := mem.NewTable()
	pd := tab.AllocPD()
	cq := NewCQ(16)
	ep, err := New(gate, p, Config{PD: pd, SendCQ: cq, RecvCQ: cq})
	require.NoError(t, err)
	t.Cleanup(func() { ep.Close() })
	// Posted from its own goroutine: a lone inline WR on an idle QP is sent
	// by the posting goroutine itself, which the gate then holds.
	posted := make(chan error, 1)
	go func() {
		posted <- ep.PostSend(SendWR{ID: 9, Opcode: WRSend, Inline: []byte("last words"), Signaled: true})
	}()
	released := false
	defer func() {
		if !released {
			close(gate.release) // let Close finish if the test failed early
		}
	}()

	<-gate.written
	// The peer takes the Send and closes; the endpoint sees the FIN while
	// its transmitter is still between the Write and its bookkeeping.
	buf := make([]byte, 64)
	_, err = io.ReadAtLeast(peer, buf, 1)
	require.NoError(t, err)
	peer.Close()
	testwatch.Until(t, "the endpoint to see the peer's FIN", func() bool { return ep.Err() != nil })
	close(gate.release)
	released = true
	require.NoError(t, <-posted)

	c := wait(t, cq)
	require.Equal(t, uint64(9), c.ID)
	require.Equal(t, WCSuccess, c.Status, "a Send TCP took completes with success, not %v", c.Status)
}
