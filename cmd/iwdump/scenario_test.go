package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/internal/pcapio"
	"github.com/openiwarp/openiwarp/internal/testwatch"
)

// The committed captures in testdata/ are real exchanges between two
// golden/mpa endpoints over TCP on 127.0.0.1, recorded with pcapio's
// RecordPair: every Write of either side is one segment, so each FPDU starts
// a segment. The ephemeral client port is written as a fixed one, and the
// clock and initial sequence numbers are fixed, so regenerating a capture
// gives the same bytes (TestCapturesReproducible).

// step is one FPDU of a scenario after the startup.
type step struct {
	fromResponder bool
	ulpdu         []byte
	corrupt       bool // flip a ULPDU bit after framing: the receiver sees a CRC error
}

type scenario struct {
	name       string
	ini, res   mpa.Config
	steps      []step
	notMPA     bool // plain TCP instead of MPA
	terminate  bool // the receiver of a corrupt FPDU answers with a Terminate
	clientPort uint16
	// isn overrides the initial sequence numbers (client, server). By
	// default the server's wrap past 2^32 a few FPDUs in.
	isn [2]uint32
	// ipv6 runs the exchange over [::1] instead of 127.0.0.1.
	ipv6 bool
}

// ULPDU builders, from golden/ddp and golden/rdmap encoders.
func untagged(v uint8, op rdmap.Opcode, last bool, qn, msn, mo uint32, payload []byte) []byte {
	b := ddp.UntaggedFields{Last: last, Version: ddp.Version(v), RsvdULP0: uint8(rdmap.NewControl(rdmap.Version(v), op)),
		QN: qn, MSN: msn, MO: mo}.Append(nil)
	return append(b, payload...)
}

func tagged(v uint8, op rdmap.Opcode, last bool, stag uint32, to uint64, payload []byte) []byte {
	b := ddp.TaggedFields{Last: last, Version: ddp.Version(v), RsvdULP: uint8(rdmap.NewControl(rdmap.Version(v), op)),
		STag: stag, TO: to}.Append(nil)
	return append(b, payload...)
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

// rdmaSteps is a small RDMA conversation in DDP/RDMAP version v: a Send,
// an RDMA Write that crosses marker positions, a Read Request and its
// two-segment Read Response, a Send with Invalidate and a full-size Send
// (MULPDU for EMSS 1460 with markers).
func rdmaSteps(v uint8) []step {
	rr := rdmap.ReadRequestFields{SinkSTag: 0x1000, SinkTO: 0x2000, Size: 600, SrcSTag: 0xabcd, SrcTO: 0x10}.Append(nil)
	return []step{
		{ulpdu: untagged(v, rdmap.OpSend, true, rdmap.QNSend, 1, 0, []byte("hello, iWARP"))},
		{fromResponder: true, ulpdu: untagged(v, rdmap.OpSend, true, rdmap.QNSend, 1, 0, []byte("hi"))},
		{ulpdu: tagged(v, rdmap.OpWrite, true, 0xabcd, 0x10, pattern(1000, 1))},
		{ulpdu: untagged(v, rdmap.OpReadRequest, true, rdmap.QNReadRequest, 1, 0, rr)},
		{fromResponder: true, ulpdu: tagged(v, rdmap.OpReadResponse, false, 0x1000, 0x2000, pattern(400, 2))},
		{fromResponder: true, ulpdu: tagged(v, rdmap.OpReadResponse, true, 0x1000, 0x2000+400, pattern(200, 3))},
		{ulpdu: func() []byte {
			b := ddp.UntaggedFields{Last: true, Version: ddp.Version(v), RsvdULP0: uint8(rdmap.NewControl(rdmap.Version(v), rdmap.OpSendInvalidate)),
				RsvdULP1: 0x1000, QN: rdmap.QNSend, MSN: 2}.Append(nil)
			return append(b, "bye"...)
		}()},
		{ulpdu: untagged(v, rdmap.OpSend, true, rdmap.QNSend, 3, 0, pattern(1442-ddp.UntaggedHeaderLen, 4))},
	}
}

func scenarios() []scenario {
	return []scenario{
		{name: "markers-crc", clientPort: 40001,
			ini: mpa.Config{Markers: true, PrivateData: []byte("openiwarp initiator")},
			res: mpa.Config{Markers: true, PrivateData: []byte("responder ok")}, steps: rdmaSteps(1)},
		{name: "crc-only", clientPort: 40002,
			ini: mpa.Config{}, res: mpa.Config{}, steps: rdmaSteps(1)},
		{name: "rev0", clientPort: 40003,
			ini: mpa.Config{Draft01: true}, res: mpa.Config{Draft01: true}, steps: rdmaSteps(0)},
		{name: "rev2-siw", clientPort: 40004,
			ini:   mpa.Config{Rev: mpa.Rev2, NoCRC: true, IRD: 16, ORD: 16, PeerToPeer: true, RTR: mpa.RTRWrite},
			res:   mpa.Config{Rev: mpa.Rev2, NoCRC: true, IRD: 16, ORD: 8, PeerToPeer: true},
			steps: append([]step{{ulpdu: tagged(1, rdmap.OpWrite, true, 0, 0, nil)}}, rdmaSteps(1)[:3]...)},
		{name: "rejected", clientPort: 40005,
			ini: mpa.Config{PrivateData: []byte("let me in")},
			res: mpa.Config{Accept: func(*mpa.Params) (bool, []byte) { return true, []byte("no thanks") }}},
		{name: "not-mpa", clientPort: 40006, notMPA: true},
		{name: "bad-crc", clientPort: 40007, terminate: true,
			ini: mpa.Config{Markers: true}, res: mpa.Config{Markers: true},
			steps: []step{
				{ulpdu: untagged(1, rdmap.OpSend, true, rdmap.QNSend, 1, 0, []byte("good"))},
				{ulpdu: tagged(1, rdmap.OpWrite, true, 0x77, 0, pattern(600, 9)), corrupt: true},
			}},
	}
}

var captureEpoch = time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)

// record runs sc between two golden/mpa endpoints over TCP on 127.0.0.1
// and returns the pcap.
func record(t testing.TB, sc scenario) []byte {
	addr := "127.0.0.1:0"
	if sc.ipv6 {
		addr = "[::1]:0"
	}
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() { c, _ := ln.Accept(); acc <- c }()
	cconn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	sconn := <-acc
	require.NotNil(t, sconn)
	defer cconn.Close()
	defer sconn.Close()

	var file bytes.Buffer
	w, err := pcapio.NewWriter(&file, pcapio.LinkEthernet)
	require.NoError(t, err)
	tick := captureEpoch
	isn := sc.isn
	if isn == [2]uint32{} {
		isn = [2]uint32{1000000 * uint32(sc.clientPort%100), 0xfffff000}
	}
	srv := ln.Addr().(*net.TCPAddr).AddrPort()
	opt := &pcapio.RecordOptions{
		Client: netip.AddrPortFrom(srv.Addr(), sc.clientPort), Server: netip.AddrPortFrom(srv.Addr(), 5001),
		ISN:   isn,
		Clock: func() time.Time { tick = tick.Add(100 * time.Microsecond); return tick },
	}
	ic, rc, err := pcapio.RecordPair(w, cconn, sconn, opt)
	require.NoError(t, err)

	if sc.notMPA {
		exchange(t, ic, rc, []byte("GET / HTTP/1.0\r\n\r\n"))
		exchange(t, rc, ic, []byte("HTTP/1.0 200 OK\r\n\r\nnot iWARP"))
	} else {
		runMPA(t, sc, ic, rc)
	}
	require.NoError(t, ic.Close())
	require.NoError(t, rc.Close())
	return file.Bytes()
}

func exchange(t testing.TB, from, to net.Conn, b []byte) {
	_, err := from.Write(b)
	require.NoError(t, err)
	got := make([]byte, len(b))
	_, err = io.ReadFull(to, got)
	require.NoError(t, err)
}

func runMPA(t testing.TB, sc scenario, ic, rc net.Conn) {
	ctx, end := testwatch.Step(t, "the scenario's MPA startup")
	defer end()
	type result struct {
		p   mpa.Params
		err error
	}
	resc := make(chan result, 1)
	go func() { p, err := mpa.Respond(ctx, rc, sc.res); resc <- result{p, err} }()
	ip, ierr := mpa.Initiate(ctx, ic, sc.ini)
	r := <-resc
	if r.err != nil || ierr != nil {
		require.ErrorIs(t, r.err, mpa.ErrRejected, "responder")
		require.ErrorIs(t, ierr, mpa.ErrRejected, "initiator")
		require.Empty(t, sc.steps)
		return
	}
	rp := r.p
	ends := [2]struct {
		conn net.Conn
		f    mpa.Framer
		d    *mpa.Deframer
	}{{ic, ip.Framer(), ip.Deframer(0)}, {rc, rp.Framer(), rp.Deframer(0)}}
	for i, st := range sc.steps {
		from, to := &ends[0], &ends[1]
		if st.fromResponder {
			from, to = &ends[1], &ends[0]
		}
		fpdu, err := from.f.AppendFPDU(nil, st.ulpdu)
		require.NoError(t, err)
		if st.corrupt {
			fpdu[len(fpdu)-8] ^= 0x01
		}
		_, err = from.conn.Write(fpdu)
		require.NoError(t, err)
		got, err := receive(to.conn, to.d)
		if st.corrupt {
			require.ErrorIs(t, err, mpa.ErrCRC, "step %d", i)
			if sc.terminate {
				// The receiver reports the CRC error to its peer with a
				// Terminate (layer LLP, MPA error code 2) and keeps TX.
				term := rdmap.Terminate{Cause: rdmap.MPACRC}
				ulpdu := term.AppendMessage(nil, rdmap.Version1, ddp.Version1, 1)
				fpdu, err := to.f.AppendFPDU(nil, ulpdu)
				require.NoError(t, err)
				_, err = to.conn.Write(fpdu)
				require.NoError(t, err)
				got, err := receive(from.conn, from.d)
				require.NoError(t, err)
				require.Equal(t, ulpdu, got)
			}
			return
		}
		require.NoError(t, err, "step %d", i)
		require.Equal(t, st.ulpdu, got, "step %d", i)
	}
}

// receive reads until d delivers one ULPDU.
func receive(c net.Conn, d *mpa.Deframer) ([]byte, error) {
	var got []byte
	buf := make([]byte, 4096)
	for got == nil {
		if err := c.SetReadDeadline(testwatch.Deadline()); err != nil {
			return nil, err
		}
		n, err := c.Read(buf)
		if err != nil {
			return nil, fmt.Errorf("reading: %w", err)
		}
		if err := d.Feed(buf[:n], func(u mpa.ULPDU) error {
			if got != nil {
				return errors.New("two ULPDUs where one was sent")
			}
			got = append([]byte{}, u.Data...)
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return got, nil
}
