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

	"github.com/openiwarp/openiwarp/golden/ddp"
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

// Builders for hostile segments (DDP/RDMAP version 1).
func write(stag mem.STag, to uint64, last bool, p []byte) []byte {
	return append(ddp.TaggedFields{Last: last, Version: 1, RsvdULP: uint8(rdmap.NewControl(1, rdmap.OpWrite)), STag: uint32(stag), TO: to}.Append(nil), p...)
}

func readResp(stag mem.STag, to uint64, p []byte) []byte {
	return append(ddp.TaggedFields{Last: true, Version: 1, RsvdULP: uint8(rdmap.NewControl(1, rdmap.OpReadResponse)), STag: uint32(stag), TO: to}.Append(nil), p...)
}

func untagged(op rdmap.Opcode, qn, msn, mo uint32, last bool, inv uint32, p []byte) []byte {
	return append(ddp.UntaggedFields{Last: last, Version: 1, RsvdULP0: uint8(rdmap.NewControl(1, op)), RsvdULP1: inv, QN: qn, MSN: msn, MO: mo}.Append(nil), p...)
}

func readReq(msn uint32, rr rdmap.ReadRequestFields) []byte {
	return rr.Append(untagged(rdmap.OpReadRequest, 1, msn, 0, true, 0, nil))
}

// victimEnv is the victim's memory: a target region between guard bytes,
// a region in another PD, and a read-only one.
type victimEnv struct {
	arena    []byte
	target   *mem.MR // arena[guard:guard+targetLen], RemoteRead|RemoteWrite
	otherPD  *mem.MR
	readOnly *mem.MR
	noRead   *mem.MR
	recv     *mem.MR
	recvBuf  []byte
}

const (
	guard     = 256
	targetLen = 4096
	targetVA  = 0x7f0000001000
)

func setupVictim(t *testing.T, v *side) *victimEnv {
	e := &victimEnv{arena: make([]byte, 2*guard+targetLen), recvBuf: make([]byte, 64)}
	for i := range e.arena {
		e.arena[i] = 0xAA
	}
	e.target = v.reg(t, e.arena[guard:guard+targetLen:guard+targetLen], targetVA, mem.RemoteRead|mem.RemoteWrite|mem.LocalWrite)
	other := v.tab.AllocPD()
	var err error
	e.otherPD, err = other.RegisterMR(make([]byte, 64), 0, all, 0)
	require.NoError(t, err)
	e.readOnly = v.reg(t, make([]byte, 64), 0, mem.RemoteRead)
	e.noRead = v.reg(t, make([]byte, 64), 0, mem.RemoteWrite)
	e.recv = v.reg(t, e.recvBuf, 0, mem.LocalWrite)
	return e
}

// untouched checks that nothing in the arena changed.
func (e *victimEnv) untouched(t *testing.T) {
	for i, b := range e.arena {
		if b != 0xAA {
			t.Fatalf("victim memory changed at arena offset %d (target is [%d,%d))", i, guard, guard+targetLen)
		}
	}
}

// TestHostilePeer sends one malformed or forbidden message per row of the
// receive-side error matrix (digest §3.7) and checks the Terminate's
// layer/type/code, its M/D/R flags and copied headers, that the victim's
// memory is untouched, that posted work is flushed and that nothing leaks.
func TestHostilePeer(t *testing.T) {
	rr := func(e *victimEnv, stag mem.STag, to uint64, size uint32) rdmap.ReadRequestFields {
		return rdmap.ReadRequestFields{SinkSTag: 0x1234, SinkTO: 0, Size: size, SrcSTag: uint32(stag), SrcTO: to}
	}
	for _, tc := range []struct {
		name    string
		recvs   int // receives to post
		ird     int
		msgs    func(e *victimEnv) [][]byte // the last one is the offender
		cause   rdmap.Cause
		m, d, r bool
		rdmaHdr bool // a Read Request header is copied
	}{
		{"DDP version tagged", 0, 0, func(e *victimEnv) [][]byte {
			b := write(e.target.STag, targetVA, true, []byte("x"))
			b[0] = 0xC2
			return [][]byte{b}
		}, rdmap.DDPTaggedInvalidVersion, false, false, false, false},
		{"DDP version untagged", 1, 0, func(e *victimEnv) [][]byte {
			b := untagged(rdmap.OpSend, 0, 1, 0, true, 0, []byte("x"))
			b[0] = 0x40
			return [][]byte{b}
		}, rdmap.DDPUntaggedInvalidVersion, false, false, false, false},
		{"RDMAP version", 1, 0, func(e *victimEnv) [][]byte {
			b := untagged(rdmap.OpSend, 0, 1, 0, true, 0, []byte("x"))
			b[1] = 0x83
			return [][]byte{b}
		}, rdmap.RDMAPInvalidVersion, false, false, false, false},
		{"reserved opcode", 1, 0, func(e *victimEnv) [][]byte {
			return [][]byte{untagged(rdmap.Opcode(0xA), 0, 1, 0, true, 0, []byte("x"))}
		}, rdmap.RDMAPUnexpectedOpcode, false, false, false, false},
		{"Send on a tagged segment", 1, 0, func(e *victimEnv) [][]byte {
			b := write(e.target.STag, targetVA, true, []byte("x"))
			b[1] = byte(rdmap.NewControl(1, rdmap.OpSend))
			return [][]byte{b}
		}, rdmap.RDMAPUnexpectedOpcode, false, false, false, false},
		{"Send on QN 1", 1, 0, func(e *victimEnv) [][]byte {
			return [][]byte{untagged(rdmap.OpSend, 1, 1, 0, true, 0, []byte("x"))}
		}, rdmap.RDMAPUnexpectedOpcode, false, false, false, false},
		{"invalid QN", 1, 0, func(e *victimEnv) [][]byte {
			return [][]byte{untagged(rdmap.OpSend, 7, 1, 0, true, 0, []byte("x"))}
		}, rdmap.DDPInvalidQN, true, true, false, false},
		{"Send with no receive posted", 0, 0, func(e *victimEnv) [][]byte {
			return [][]byte{untagged(rdmap.OpSend, 0, 1, 0, true, 0, []byte("x"))}
		}, rdmap.DDPNoBuffer, true, true, false, false},
		{"stale MSN", 2, 0, func(e *victimEnv) [][]byte {
			return [][]byte{untagged(rdmap.OpSend, 0, 1, 0, true, 0, []byte("a")), untagged(rdmap.OpSend, 0, 1, 0, true, 0, []byte("b"))}
		}, rdmap.DDPInvalidMSNRange, true, true, false, false},
		{"skipped MSN", 2, 0, func(e *victimEnv) [][]byte {
			return [][]byte{untagged(rdmap.OpSend, 0, 2, 0, true, 0, []byte("a"))}
		}, rdmap.DDPInvalidMSNRange, true, true, false, false},
		{"new message before L", 2, 0, func(e *victimEnv) [][]byte {
			return [][]byte{untagged(rdmap.OpSend, 0, 1, 0, false, 0, []byte("a")), untagged(rdmap.OpSend, 0, 2, 0, true, 0, []byte("b"))}
		}, rdmap.DDPInvalidMSNRange, true, true, false, false},
		{"MO gap", 1, 0, func(e *victimEnv) [][]byte {
			return [][]byte{untagged(rdmap.OpSend, 0, 1, 0, false, 0, []byte("a")), untagged(rdmap.OpSend, 0, 1, 2, true, 0, []byte("b"))}
		}, rdmap.DDPInvalidMO, true, true, false, false},
		{"MO outside the buffer", 1, 0, func(e *victimEnv) [][]byte {
			return [][]byte{untagged(rdmap.OpSend, 0, 1, 1000, true, 0, []byte("a"))}
		}, rdmap.DDPInvalidMO, true, true, false, false},
		{"Send longer than the receive", 1, 0, func(e *victimEnv) [][]byte {
			return [][]byte{untagged(rdmap.OpSend, 0, 1, 0, true, 0, make([]byte, 65))}
		}, rdmap.DDPMessageTooLong, true, true, false, false},
		{"unknown STag", 0, 0, func(e *victimEnv) [][]byte {
			return [][]byte{write(e.target.STag^0x100, targetVA, true, []byte("x"))}
		}, rdmap.DDPInvalidSTag, true, true, false, false},
		{"wrong key", 0, 0, func(e *victimEnv) [][]byte {
			return [][]byte{write(e.target.STag^1, targetVA, true, []byte("x"))}
		}, rdmap.DDPInvalidSTag, true, true, false, false},
		{"STag of another PD", 0, 0, func(e *victimEnv) [][]byte {
			return [][]byte{write(e.otherPD.STag, 0, true, []byte("x"))}
		}, rdmap.DDPSTagNotAssociated, true, true, false, false},
		{"TO below base", 0, 0, func(e *victimEnv) [][]byte {
			return [][]byte{write(e.target.STag, targetVA-1, true, []byte("xy"))}
		}, rdmap.DDPBaseBounds, true, true, false, false},
		{"TO+len past end", 0, 0, func(e *victimEnv) [][]byte {
			return [][]byte{write(e.target.STag, targetVA+targetLen-1, true, []byte("xy"))}
		}, rdmap.DDPBaseBounds, true, true, false, false},
		{"TO wrap", 0, 0, func(e *victimEnv) [][]byte {
			return [][]byte{write(e.target.STag, ^uint64(0), true, []byte("xy"))}
		}, rdmap.DDPTOWrap, true, true, false, false},
		{"Write without REMOTE_WRITE", 0, 0, func(e *victimEnv) [][]byte {
			return [][]byte{write(e.readOnly.STag, 0, true, []byte("x"))}
		}, rdmap.DDPInvalidSTag, true, true, false, false},
		{"Read Response with no Read", 0, 0, func(e *victimEnv) [][]byte {
			return [][]byte{readResp(e.target.STag, targetVA, []byte("x"))}
		}, rdmap.DDPLocalCatastrophic, false, false, false, false},
		{"Read Request: invalid SrcSTag", 0, 0, func(e *victimEnv) [][]byte {
			return [][]byte{readReq(1, rr(e, e.target.STag^0x100, targetVA, 8))}
		}, rdmap.RDMAPInvalidSTag, true, true, true, true},
		{"Read Request: SrcSTag of another PD", 0, 0, func(e *victimEnv) [][]byte {
			return [][]byte{readReq(1, rr(e, e.otherPD.STag, 0, 8))}
		}, rdmap.RDMAPSTagNotAssociated, true, true, true, true},
		{"Read Request: no REMOTE_READ", 0, 0, func(e *victimEnv) [][]byte {
			return [][]byte{readReq(1, rr(e, e.noRead.STag, 0, 8))}
		}, rdmap.RDMAPAccessRights, true, true, true, true},
		{"Read Request: bounds", 0, 0, func(e *victimEnv) [][]byte {
			return [][]byte{readReq(1, rr(e, e.target.STag, targetVA+targetLen-4, 8))}
		}, rdmap.RDMAPBaseBounds, true, true, true, true},
		{"Read Request: SrcTO+size wraps", 0, 0, func(e *victimEnv) [][]byte {
			return [][]byte{readReq(1, rr(e, e.target.STag, ^uint64(0)-2, 8))}
		}, rdmap.RDMAPTOWrap, true, true, true, true},
		{"Read Request: wrong MSN", 0, 0, func(e *victimEnv) [][]byte {
			return [][]byte{readReq(2, rr(e, e.target.STag, targetVA, 8))}
		}, rdmap.DDPInvalidMSNRange, true, true, false, false},
		{"Read Request with payload", 0, 0, func(e *victimEnv) [][]byte {
			return [][]byte{append(readReq(1, rr(e, e.target.STag, targetVA, 8)), 1, 2, 3, 4)}
		}, rdmap.DDPMessageTooLong, true, true, false, false},
		{"Read Requests beyond IRD", 0, 1, nil, rdmap.RDMAPCatastrophicStream, true, true, false, false},
		{"Send with Invalidate of a PD-shared STag", 1, 0, func(e *victimEnv) [][]byte {
			return [][]byte{untagged(rdmap.OpSendInvalidate, 0, 1, 0, true, uint32(e.target.STag), []byte("x"))}
		}, rdmap.RDMAPCannotInvalidate, true, true, true, false},
		{"Send with SE and Invalidate of an unknown STag", 1, 0, func(e *victimEnv) [][]byte {
			return [][]byte{untagged(rdmap.OpSendSEInvalidate, 0, 1, 0, true, 0x77, []byte("x"))}
		}, rdmap.RDMAPCannotInvalidate, true, true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			h, v := hostilePair(t, pairOpts{cfg: Config{IRD: tc.ird}})
			e := setupVictim(t, v)
			for i := 0; i < tc.recvs; i++ {
				require.NoError(t, v.ep.PostRecv(RecvWR{ID: uint64(i), SGL: []SGE{{Addr: 0, Length: 64, LKey: e.recv.STag}}}))
			}
			var msgs [][]byte
			if tc.msgs != nil {
				msgs = tc.msgs(e)
			}
			if tc.ird > 0 {
				// A 32 MiB response keeps the first Read in flight while the
				// hostile peer does not read: its IRD slot stays taken.
				big := v.reg(t, make([]byte, 32<<20), 0, mem.RemoteRead)
				msgs = [][]byte{
					readReq(1, rdmap.ReadRequestFields{SinkSTag: 1, Size: 32 << 20, SrcSTag: uint32(big.STag)}),
					readReq(2, rdmap.ReadRequestFields{SinkSTag: 1, Size: 8, SrcSTag: uint32(big.STag)}),
				}
			}
			h.send(t, msgs...)
			term := h.terminate(t)
			offender := msgs[len(msgs)-1]
			assert.Equal(t, tc.cause, term.Cause, "got %v", term.Cause)
			assert.Equal(t, []bool{tc.m, tc.d, tc.r}, []bool{term.M, term.D, term.R}, "M D R")
			if tc.d {
				assert.Equal(t, uint16(len(offender)), term.SegLen, "DDP Segment Length")
				hl := ddp.Control(offender[0]).HeaderLen()
				assert.Equal(t, offender[:hl], term.DDPHeader, "copied DDP header")
			}
			if tc.rdmaHdr {
				assert.Equal(t, offender[ddp.UntaggedHeaderLen:ddp.UntaggedHeaderLen+rdmap.ReadRequestLen], term.RDMAHeader, "copied Read Request header")
			} else {
				assert.Nil(t, term.RDMAHeader)
			}
			<-v.ep.Done()
			var ee *Error
			require.ErrorAs(t, v.ep.Err(), &ee)
			assert.Equal(t, tc.cause, ee.Cause)
			assert.False(t, ee.Remote)
			e.untouched(t)
			if tc.cause == rdmap.DDPMessageTooLong && tc.recvs > 0 {
				assert.Equal(t, make([]byte, len(e.recvBuf)), e.recvBuf, "nothing of an oversize Send is placed")
			}
			for i := 0; i < tc.recvs; i++ {
				c := wait(t, v.rcq)
				if c.Status == WCSuccess {
					continue // an earlier, valid Send of the sequence
				}
				want := WCFlushErr
				if tc.cause == rdmap.DDPMessageTooLong && i == 0 {
					want = WCLocLenErr // the receive the Send overflowed
				}
				assert.Equal(t, want, c.Status)
			}
			if tc.cause == rdmap.RDMAPCannotInvalidate {
				if en, ok := v.tab.Lookup(e.target.STag); assert.True(t, ok) {
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
	b := h.frame(t, write(e.target.STag, targetVA, true, make([]byte, 1000)))
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
	require.NoError(t, v.ep.PostRecv(RecvWR{ID: 7, SGL: []SGE{{Addr: 0, Length: 64, LKey: e.recv.STag}}}))
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
	shadow := bytes.Clone(e.arena)
	var msgs [][]byte
	for i := 0; i < 200; i++ {
		to := targetVA + uint64(i*17%targetLen)
		n := min(37, targetLen-int(to-targetVA))
		p := bytes.Repeat([]byte{byte(i)}, n)
		msgs = append(msgs, write(e.target.STag, to, true, p))
		copy(shadow[guard+int(to-targetVA):], p)
	}
	msgs = append(msgs, write(e.target.STag, targetVA+targetLen-10, true, make([]byte, 11)))
	h.send(t, msgs...)
	term := h.terminate(t)
	assert.Equal(t, rdmap.DDPBaseBounds, term.Cause)
	<-v.ep.Done()
	assert.Equal(t, shadow, e.arena)
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
