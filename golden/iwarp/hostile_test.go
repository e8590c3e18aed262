package iwarp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/iwarp/internal/matrix"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/internal/testwatch"
)

// hostile is a raw MPA peer that sends whatever ULPDUs a test crafts.
type hostile struct {
	conn net.Conn
	fr   mpa.Framer
	df   *mpa.Deframer
	p    mpa.Params
}

// hostilePair connects a raw MPA Initiator to an endpoint (the victim),
// which is the Responder and so must wait for the hostile peer's first FPDU.
func hostilePair(t *testing.T, o pairOpts) (*hostile, *side) {
	ln := listen(t)
	ctx, end := testwatch.Step(t, "the hostile peer's MPA startup")
	defer end()
	cfg := mpa.Config{Rev: mpa.Rev1, Markers: o.markers, NoCRC: o.noCRC}
	ch := make(chan *side, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			ch <- nil
			return
		}
		p, err := mpa.Respond(ctx, c, cfg)
		if err != nil {
			c.Close()
			ch <- nil
			return
		}
		ch <- newSide(t, c, p, o)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	p, err := mpa.Initiate(ctx, c, cfg)
	require.NoError(t, err)
	v := <-ch
	require.NotNil(t, v)
	t.Cleanup(func() { c.Close() }) // runs before the victim's Close: its FIN ends the Linger
	return &hostile{conn: c, fr: p.Framer(), df: p.Deframer(0), p: p}, v
}

func (h *hostile) frame(t *testing.T, ulpdus ...[]byte) []byte {
	var out []byte
	for _, u := range ulpdus {
		var err error
		out, err = h.fr.AppendFPDU(out, u)
		require.NoError(t, err)
	}
	return out
}

func (h *hostile) send(t *testing.T, ulpdus ...[]byte) {
	_, err := h.conn.Write(h.frame(t, ulpdus...))
	require.NoError(t, err)
}

// readAll reads the victim's stream to EOF and returns its ULPDUs.
func (h *hostile) readAll(t *testing.T) [][]byte {
	h.conn.SetReadDeadline(testwatch.Deadline())
	var got [][]byte
	buf := make([]byte, 1<<20)
	for {
		n, err := h.conn.Read(buf)
		if n > 0 {
			ferr := h.df.Feed(buf[:n], func(u mpa.ULPDU) error {
				got = append(got, append([]byte(nil), u.Data...))
				return nil
			})
			require.NoError(t, ferr)
		}
		if errors.Is(err, io.EOF) {
			h.conn.Close() // answer the victim's FIN, as a real peer does
			return got
		}
		require.NoError(t, err, "reading the victim's stream")
	}
}

// terminate reads to EOF and returns the one Terminate the victim sent,
// which must be its last message.
func (h *hostile) terminate(t *testing.T) rdmap.Terminate {
	got := h.readAll(t)
	require.NotEmpty(t, got, "no Terminate before the FIN")
	m, err := rdmap.Parse(got[len(got)-1])
	require.NoError(t, err)
	require.Equal(t, rdmap.OpTerminate, m.Opcode(), "last message")
	for _, u := range got[:len(got)-1] {
		mm, err := rdmap.Parse(u)
		require.NoError(t, err)
		require.NotEqual(t, rdmap.OpTerminate, mm.Opcode(), "only one Terminate per stream")
	}
	assert.Equal(t, uint32(rdmap.QNTerminate), m.Untagged().QN())
	assert.Equal(t, uint32(1), m.Untagged().MSN())
	assert.Equal(t, rdmap.LayoutRFC, m.Terminate.Layout)
	return *m.Terminate
}

// Builders for hostile segments (DDP/RDMAP version 1): the matrix's.
var (
	write    = matrix.Write
	readResp = matrix.ReadResp
	untagged = matrix.Untagged
	readReq  = matrix.ReadReq
)

// victimEnv is the victim's memory (matrix.Env).
type victimEnv struct{ *matrix.Env }

const (
	guard     = matrix.Guard
	targetLen = matrix.TargetLen
	targetVA  = matrix.TargetVA
)

func setupVictim(t *testing.T, v *side) *victimEnv {
	e, err := matrix.Setup(v.pd)
	require.NoError(t, err)
	return &victimEnv{e}
}

// untouched checks that nothing in the arena changed.
func (e *victimEnv) untouched(t *testing.T) {
	require.NoError(t, e.Untouched())
}

// TestHostilePeer sends each row of the receive-side error matrix
// (matrix.Cases, which the core's tests feed to a QP directly) to an
// endpoint over TCP and checks that the row's Terminate reaches the wire
// as the stream's last message, that the victim's memory is untouched,
// that posted work is flushed and that nothing leaks.
func TestHostilePeer(t *testing.T) {
	for _, tc := range matrix.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			checkLeaks(t)
			h, v := hostilePair(t, pairOpts{cfg: Config{IRD: tc.IRD}})
			e := setupVictim(t, v)
			for i := 0; i < tc.Recvs; i++ {
				require.NoError(t, v.ep.PostRecv(RecvWR{ID: uint64(i), SGL: []SGE{{Addr: 0, Length: 64, LKey: e.Recv.STag}}}))
			}
			var msgs [][]byte
			if tc.Msgs != nil {
				msgs = tc.Msgs(e.Env)
			} else {
				// A 32 MiB response keeps the first Read in flight while the
				// hostile peer does not read: its IRD slot stays taken.
				big := v.reg(t, make([]byte, 32<<20), 0, mem.RemoteRead)
				msgs = matrix.BeyondIRD(big.STag, 32<<20)
			}
			h.send(t, msgs...)
			term := h.terminate(t)
			tc.CheckTerminate(t, &term, msgs[len(msgs)-1])
			<-v.ep.Done()
			var ee *Error
			require.ErrorAs(t, v.ep.Err(), &ee)
			assert.Equal(t, tc.Cause, ee.Cause)
			assert.False(t, ee.Remote)
			e.untouched(t)
			if tc.Cause == rdmap.DDPMessageTooLong && tc.Recvs > 0 {
				assert.Equal(t, make([]byte, len(e.RecvBuf)), e.RecvBuf, "nothing of an oversize Send is placed")
			}
			for i := 0; i < tc.Recvs; i++ {
				c := wait(t, v.rcq)
				if c.Status == WCSuccess {
					continue // an earlier, valid Send of the sequence
				}
				want := WCFlushErr
				if tc.Cause == rdmap.DDPMessageTooLong && i == 0 {
					want = WCLocLenErr // the receive the Send overflowed
				}
				assert.Equal(t, want, c.Status)
			}
			if tc.Cause == rdmap.RDMAPCannotInvalidate {
				if en, ok := v.tab.Lookup(e.Target.STag); assert.True(t, ok) {
					assert.True(t, en.Valid, "S7: the shared STag stays valid")
				}
			}
		})
	}
}

// TestHostileMPA covers the LLP rows: a CRC error and a marker error give
// a Terminate with layer LLP and no headers, also when the bad FPDU is the
// Initiator's first one (the Responder, which may send nothing before that
// FPDU, answers it with its Terminate) and when the peer half-closes right
// after it (it still reads).
func TestHostileMPA(t *testing.T) {
	for _, tc := range []struct {
		name    string
		markers bool
		corrupt func(b []byte, off uint32)
		cause   rdmap.Cause
	}{
		{"CRC", false, func(b []byte, off uint32) { b[len(b)-1] ^= 1 }, rdmap.MPACRC},
		// The FPDUPTR of the marker at stream offset 512.
		// with the CRC recomputed, so that only the framing disagrees.
		{"marker", true, func(b []byte, off uint32) {
			b[mpa.MarkerPeriod-off+3] ^= 0x04
			binary.LittleEndian.PutUint32(b[len(b)-4:], mpa.CRC32c(b[:len(b)-4]))
		}, rdmap.MPAMarker},
	} {
		for _, v := range []struct {
			name       string
			first, fin bool
		}{{"after-a-good-FPDU", false, false}, {"first-FPDU", true, false}, {"first-FPDU-then-FIN", true, true}} {
			t.Run(tc.name+"/"+v.name, func(t *testing.T) { hostileMPA(t, tc.markers, tc.corrupt, tc.cause, v.first, v.fin) })
		}
	}
}

func hostileMPA(t *testing.T, markers bool, corrupt func(b []byte, off uint32), cause rdmap.Cause, first, fin bool) {
	checkLeaks(t)
	h, v := hostilePair(t, pairOpts{markers: markers})
	e := setupVictim(t, v)
	if !first {
		// A valid first FPDU: until it arrives the MPA Responder may send nothing.
		h.send(t, write(1, 0, true, nil))
	}
	off := h.fr.Offset
	b := h.frame(t, write(e.Target.STag, targetVA, true, make([]byte, 1000)))
	corrupt(b, off)
	_, err := h.conn.Write(b)
	require.NoError(t, err)
	if fin {
		require.NoError(t, h.conn.(*net.TCPConn).CloseWrite())
	}
	term := h.terminate(t)
	assert.Equal(t, cause, term.Cause, "%v", term.Cause)
	assert.False(t, term.M || term.D || term.R)
	<-v.ep.Done()
	var ee *Error
	require.ErrorAs(t, v.ep.Err(), &ee)
	assert.Equal(t, cause, ee.Cause)
	e.untouched(t)
}

// TestReceiveTerminate: a peer's Terminate is delivered to the ULP as the
// stream's error, every posted WR is flushed, and no Terminate answers it.
func TestReceiveTerminate(t *testing.T) {
	checkLeaks(t)
	h, v := hostilePair(t, pairOpts{})
	e := setupVictim(t, v)
	require.NoError(t, v.ep.PostRecv(RecvWR{ID: 7, SGL: []SGE{{Addr: 0, Length: 64, LKey: e.Recv.STag}}}))
	require.NoError(t, v.ep.PostSend(SendWR{ID: 8, Opcode: WRSend, Inline: []byte("x"), Signaled: true}))
	copied := write(0x99, 5, true, nil)
	t1 := rdmap.Terminate{Cause: rdmap.DDPBaseBounds, M: true, D: true, SegLen: 14, DDPHeader: copied[:14]}
	h.send(t, write(1, 0, true, nil), t1.AppendMessage(nil, 1, 1, 1))
	got := h.readAll(t)
	for _, u := range got {
		m, err := rdmap.Parse(u)
		require.NoError(t, err)
		assert.NotEqual(t, rdmap.OpTerminate, m.Opcode(), "a Terminate is never answered with a Terminate")
	}
	<-v.ep.Done()
	var ee *Error
	require.ErrorAs(t, v.ep.Err(), &ee)
	assert.True(t, ee.Remote)
	assert.Equal(t, rdmap.DDPBaseBounds, ee.Cause)
	require.NotNil(t, ee.Terminate)
	assert.Equal(t, copied[:14], ee.Terminate.DDPHeader)
	c := wait(t, v.rcq)
	assert.Equal(t, WCFlushErr, c.Status)
	c = wait(t, v.scq)
	assert.Equal(t, uint64(8), c.ID)
	// Sent before the Terminate arrived, flushed, or hit by the peer's error.
	assert.Contains(t, []Status{WCSuccess, WCFlushErr, WCRemAccessErr}, c.Status)
	assert.ErrorIs(t, v.ep.PostSend(SendWR{Opcode: WRSend}), ErrTerminated)
}

// TestReceiveSiwTerminate: siw 6.1's swapped Terminate layout is decoded.
func TestReceiveSiwTerminate(t *testing.T) {
	checkLeaks(t)
	h, v := hostilePair(t, pairOpts{})
	msg := untagged(rdmap.OpTerminate, 2, 1, 0, true, 0, []byte{0x21, 0x01, 0x03, 0x00, 0, 20})
	msg = append(msg, untagged(rdmap.OpSend, 9, 1, 0, true, 0, nil)...)
	h.send(t, msg)
	h.readAll(t)
	<-v.ep.Done()
	var ee *Error
	require.ErrorAs(t, v.ep.Err(), &ee)
	assert.Equal(t, rdmap.DDPInvalidQN, ee.Cause)
	assert.Equal(t, rdmap.LayoutSiw, ee.Terminate.Layout)
}

// TestLocalProtectionError: a WR whose memory is deregistered before it is
// sent completes with a local protection error and the stream ends with a
// Local Catastrophic Terminate without headers (RFC 5040 §7.1 case 1).
func TestLocalProtectionError(t *testing.T) {
	checkLeaks(t)
	h, v := hostilePair(t, pairOpts{})
	buf := make([]byte, 128)
	mr := v.reg(t, buf, 0, all)
	// The victim is the MPA Responder: it cannot send before the first FPDU.
	require.NoError(t, v.ep.PostSend(SendWR{ID: 1, Opcode: WRSend, SGL: []SGE{{Addr: 0, Length: 128, LKey: mr.STag}}, Signaled: true}))
	require.NoError(t, mr.Deregister())
	h.send(t, write(1, 0, true, nil)) // zero-length Write: STag not checked (RFC 5041 §5.2)
	term := h.terminate(t)
	assert.Equal(t, rdmap.RDMAPLocalCatastrophic, term.Cause)
	assert.False(t, term.M || term.D || term.R)
	c := wait(t, v.scq)
	assert.Equal(t, WCLocProtErr, c.Status)
	<-v.ep.Done()
}

// TestHostileNoBytesOutside writes many random tagged segments at a region
// and checks, against a shadow copy, that the only bytes that ever change
// are those of segments that passed every check.
func TestHostileNoBytesOutside(t *testing.T) {
	checkLeaks(t)
	h, v := hostilePair(t, pairOpts{})
	e := setupVictim(t, v)
	shadow := bytes.Clone(e.Arena)
	var msgs [][]byte
	for i := 0; i < 200; i++ {
		to := targetVA + uint64(i*17%targetLen)
		n := min(37, targetLen-int(to-targetVA))
		p := bytes.Repeat([]byte{byte(i)}, n)
		msgs = append(msgs, write(e.Target.STag, to, true, p))
		copy(shadow[guard+int(to-targetVA):], p)
	}
	msgs = append(msgs, write(e.Target.STag, targetVA+targetLen-10, true, make([]byte, 11)))
	h.send(t, msgs...)
	term := h.terminate(t)
	assert.Equal(t, rdmap.DDPBaseBounds, term.Cause)
	<-v.ep.Done()
	assert.Equal(t, shadow, e.Arena)
}

// TestReadSourceRevoked: the source of a Read is invalidated while the
// response is being sent; the response stops, and the Terminate carries
// the Read Request header updated to where it stopped (RFC 5040 §4.8).
func TestReadSourceRevoked(t *testing.T) {
	checkLeaks(t)
	h, v := hostilePair(t, pairOpts{})
	const size = 32 << 20
	src := v.reg(t, make([]byte, size), 0x10000000, mem.RemoteRead)
	rr := rdmap.ReadRequestFields{SinkSTag: 0x99, SinkTO: 0x5000, Size: size, SrcSTag: uint32(src.STag), SrcTO: 0x10000000}
	h.send(t, readReq(1, rr))
	// The peer does not read: the response stalls in TCP. Revoke the source.
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, v.tab.Invalidate(src.STag, v.pd.ID))
	got := h.readAll(t)
	require.NotEmpty(t, got)
	var placed uint64
	for _, u := range got[:len(got)-1] {
		m, err := rdmap.Parse(u)
		require.NoError(t, err)
		require.Equal(t, rdmap.OpReadResponse, m.Opcode())
		require.Equal(t, rr.SinkTO+placed, m.Tagged().TO())
		placed += uint64(len(m.Payload))
	}
	require.Less(t, placed, uint64(size), "the response stopped early")
	m, err := rdmap.Parse(got[len(got)-1])
	require.NoError(t, err)
	require.Equal(t, rdmap.OpTerminate, m.Opcode())
	term := m.Terminate
	assert.Equal(t, rdmap.RDMAPInvalidSTag, term.Cause)
	assert.True(t, term.M && term.D && term.R)
	require.Len(t, term.RDMAHeader, rdmap.ReadRequestLen)
	assert.Equal(t, rr.Advance(uint32(placed)), rdmap.ReadRequest(term.RDMAHeader).Fields(), "updated to the progress made")
}
