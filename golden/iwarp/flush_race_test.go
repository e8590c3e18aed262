package iwarp

import (
	"io"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/ddp"
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

// TestLastFPDUWrittenBeforePeerCloses: with one Write per FPDU
// (AlignFPDUs), a Send of several segments whose last FPDU TCP has taken
// completes with success even when the peer's FIN is processed before
// the transmitter's bookkeeping.
func TestLastFPDUWrittenBeforePeerCloses(t *testing.T) {
	checkLeaks(t)
	cc, p, peer, pp := connectMPA(t, mpa.Config{}, mpa.Config{})
	const segs = 3
	gate := &countGate{Conn: cc, at: segs, written: make(chan struct{}), release: make(chan struct{})}
	ep, cq := raceEndpoint(t, gate, p, Config{AlignFPDUs: true, MULPDU: mpa.MinMULPDU})
	defer gate.open()
	msg := make([]byte, segs*ddp.MaxPayload(mpa.MinMULPDU, ddp.UntaggedHeaderLen))
	posted := make(chan error, 1)
	go func() { posted <- ep.PostSend(SendWR{ID: 3, Opcode: WRSend, Inline: msg, Signaled: true}) }()

	<-gate.written // the last FPDU is in TCP, the transmitter is held
	require.Equal(t, segs, readULPDUs(t, peer, pp, segs), "the peer received every segment")
	peer.Close()
	testwatch.Until(t, "the endpoint to see the peer's FIN", func() bool { return ep.Err() != nil })
	gate.open()
	require.NoError(t, <-posted)
	c := wait(t, cq)
	require.Equal(t, uint64(3), c.ID)
	require.Equal(t, WCSuccess, c.Status, "a Send whose every octet TCP took completes with success, not %v", c.Status)
}

// TestSendNotHandedOverWhenPeerCloses: a Send that is still being framed
// when the peer's FIN is processed completes as flushed, and then none of
// its octets may reach the wire: the completion says what the peer got.
func TestSendNotHandedOverWhenPeerCloses(t *testing.T) {
	checkLeaks(t)
	cc, p, peer, pp := connectMPA(t, mpa.Config{}, mpa.Config{})
	f := p.Framer()
	fr := &gateFramer{f: &f, entered: make(chan struct{}), release: make(chan struct{})}
	ep, cq := raceEndpoint(t, cc, p, Config{Framer: fr})
	defer fr.open()
	posted := make(chan error, 1)
	go func() {
		posted <- ep.PostSend(SendWR{ID: 4, Opcode: WRSend, Inline: []byte("too late"), Signaled: true})
	}()

	<-fr.entered // the Send is being framed
	require.NoError(t, peer.(*net.TCPConn).CloseWrite())
	testwatch.Until(t, "the endpoint to see the peer's FIN", func() bool { return ep.Err() != nil })
	fr.open()
	require.NoError(t, <-posted)
	c := wait(t, cq)
	require.Equal(t, uint64(4), c.ID)
	require.Equal(t, WCFlushErr, c.Status, "the stream ended before the Send was handed to TCP")
	require.Zero(t, readULPDUs(t, peer, pp, 1), "a flushed Send reached the wire")
}

// countGate holds the transmitter just after its at-th Write has reached
// TCP, until the test opens it.
type countGate struct {
	net.Conn
	at               int
	n                int
	written, release chan struct{}
	once             sync.Once
}

func (g *countGate) Write(p []byte) (int, error) {
	n, err := g.Conn.Write(p)
	if len(p) > 0 {
		if g.n++; g.n == g.at {
			close(g.written)
			<-g.release
		}
	}
	return n, err
}

func (g *countGate) open() { g.once.Do(func() { close(g.release) }) }

// gateFramer holds the transmitter in its first AppendFPDU until opened.
type gateFramer struct {
	f                *mpa.Framer
	entered, release chan struct{}
	first, once      sync.Once
}

func (g *gateFramer) AppendFPDU(dst, ulpdu []byte) ([]byte, error) {
	g.first.Do(func() {
		close(g.entered)
		<-g.release
	})
	return g.f.AppendFPDU(dst, ulpdu)
}

func (g *gateFramer) open() { g.once.Do(func() { close(g.release) }) }

// readULPDUs reads up to max ULPDUs from the endpoint's stream, or until
// its FIN, and returns how many arrived.
func readULPDUs(t *testing.T, peer net.Conn, pp mpa.Params, max int) int {
	df := pp.Deframer(0)
	n := 0
	buf := make([]byte, 64<<10)
	peer.SetReadDeadline(testwatch.Deadline())
	for n < max {
		k, err := peer.Read(buf)
		if k > 0 {
			require.NoError(t, df.Feed(buf[:k], func(mpa.ULPDU) error { n++; return nil }))
		}
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	return n
}

// raceEndpoint starts an endpoint on conn with cfg, its PD and one CQ.
func raceEndpoint(t *testing.T, conn net.Conn, p mpa.Params, cfg Config) (*Endpoint, *CQ) {
	cfg.PD, cfg.SendCQ = mem.NewTable().AllocPD(), NewCQ(16)
	cfg.RecvCQ = cfg.SendCQ
	ep, err := New(conn, p, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { ep.Close() })
	return ep, cfg.SendCQ
}
