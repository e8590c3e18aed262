package verbstest

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/host/verbs"
	"github.com/openiwarp/openiwarp/internal/testwatch"
)

// A bad FPDU of one kind: bad returns its octets, framed by f (whose
// Offset is the stream offset the FPDU starts at); msn is the MSN a Send
// on the victim's queue 0 takes next.
type badFPDU struct {
	name    string
	markers bool // the victim asks for markers
	cause   rdmap.Cause
	bad     func(t testing.TB, f *mpa.Framer, victim *verbs.MR, msn uint32) []byte
}

func frame(t testing.TB, f *mpa.Framer, ulpdu []byte) []byte {
	b, err := f.AppendFPDU(nil, ulpdu)
	require.NoError(t, err)
	return b
}

func sendSeg(msn uint32, p []byte) []byte {
	return append(ddp.UntaggedFields{Last: true, Version: 1, RsvdULP0: uint8(rdmap.NewControl(1, rdmap.OpSend)), QN: rdmap.QNSend, MSN: msn}.Append(nil), p...)
}

func writeSeg(stag verbs.STag, to uint64, p []byte) []byte {
	return append(ddp.TaggedFields{Last: true, Version: 1, RsvdULP: uint8(rdmap.NewControl(1, rdmap.OpWrite)), STag: uint32(stag), TO: to}.Append(nil), p...)
}

// badFPDUs is one FPDU per kind of error a peer can cause: the LLP rows
// (CRC, marker) and DDP/RDMAP rows of the receive-side error matrix.
var badFPDUs = []badFPDU{
	{"CRC", false, rdmap.MPACRC, func(t testing.TB, f *mpa.Framer, v *verbs.MR, msn uint32) []byte {
		b := frame(t, f, sendSeg(msn, []byte("bad crc")))
		b[len(b)-1] ^= 0x10
		return b
	}},
	{"marker", true, rdmap.MPAMarker, func(t testing.TB, f *mpa.Framer, v *verbs.MR, msn uint32) []byte {
		off := f.Offset
		b := frame(t, f, writeSeg(v.RKey(), v.Addr(), make([]byte, 1000)))
		// The FPDUPTR of the next marker, with the CRC recomputed so that
		// only the framing disagrees.
		at := (off/mpa.MarkerPeriod+1)*mpa.MarkerPeriod - off
		b[at+3] ^= 0x04
		binary.LittleEndian.PutUint32(b[len(b)-4:], mpa.CRC32c(b[:len(b)-4]))
		return b
	}},
	{"DDP-version", false, rdmap.DDPTaggedInvalidVersion, func(t testing.TB, f *mpa.Framer, v *verbs.MR, msn uint32) []byte {
		s := writeSeg(v.RKey(), v.Addr(), []byte("x"))
		s[0] = 0xC2
		return frame(t, f, s)
	}},
	{"RDMAP-version", false, rdmap.RDMAPInvalidVersion, func(t testing.TB, f *mpa.Framer, v *verbs.MR, msn uint32) []byte {
		s := sendSeg(msn, []byte("x"))
		s[1] = 0x83
		return frame(t, f, s)
	}},
	{"invalid-QN", false, rdmap.DDPInvalidQN, func(t testing.TB, f *mpa.Framer, v *verbs.MR, msn uint32) []byte {
		s := sendSeg(msn, []byte("x"))
		binary.BigEndian.PutUint32(s[6:], 7)
		return frame(t, f, s)
	}},
	{"MSN", false, rdmap.DDPInvalidMSNRange, func(t testing.TB, f *mpa.Framer, v *verbs.MR, msn uint32) []byte {
		return frame(t, f, sendSeg(msn+5, []byte("x")))
	}},
	{"Send-too-long", false, rdmap.DDPMessageTooLong, func(t testing.TB, f *mpa.Framer, v *verbs.MR, msn uint32) []byte {
		return frame(t, f, sendSeg(msn, make([]byte, 65)))
	}},
	{"Write-bad-STag", false, rdmap.DDPInvalidSTag, func(t testing.TB, f *mpa.Framer, v *verbs.MR, msn uint32) []byte {
		return frame(t, f, writeSeg(v.RKey()^0x100, v.Addr(), []byte("x")))
	}},
	{"Write-bounds", false, rdmap.DDPBaseBounds, func(t testing.TB, f *mpa.Framer, v *verbs.MR, msn uint32) []byte {
		return frame(t, f, writeSeg(v.RKey(), v.Addr()+4095, []byte("xy")))
	}},
	{"Read-bad-STag", false, rdmap.RDMAPInvalidSTag, func(t testing.TB, f *mpa.Framer, v *verbs.MR, msn uint32) []byte {
		rr := rdmap.ReadRequestFields{SinkSTag: 0x1234, Size: 8, SrcSTag: uint32(v.RKey() ^ 0x100), SrcTO: v.Addr()}
		s := ddp.UntaggedFields{Last: true, Version: 1, RsvdULP0: uint8(rdmap.NewControl(1, rdmap.OpReadRequest)), QN: rdmap.QNReadRequest, MSN: 1}.Append(nil)
		return frame(t, f, rr.Append(s))
	}},
	{"Read-Response-unasked", false, rdmap.DDPLocalCatastrophic, func(t testing.TB, f *mpa.Framer, v *verbs.MR, msn uint32) []byte {
		s := ddp.TaggedFields{Last: true, Version: 1, RsvdULP: uint8(rdmap.NewControl(1, rdmap.OpReadResponse)), STag: uint32(v.RKey()), TO: v.Addr()}.Append(nil)
		return frame(t, f, append(s, 'x'))
	}},
}

// terminateBeforeFIN: a raw Initiator sends, as its first FPDU or after a
// good Send, one FPDU of each kind of error; the application on the card
// destroys its QP as soon as it sees an error completion (rping does).
// The Terminate the card decided must be on the wire before its FIN
// (RFC 5040 §7.1, RFC 5044 §8), with the cause of the error.
func (s *suite) terminateBeforeFIN(t *testing.T) {
	for _, k := range badFPDUs {
		for _, mid := range []bool{false, true} {
			for _, fin := range []bool{false, true} {
				name := k.name + "/first-FPDU"
				if mid {
					name = k.name + "/mid-stream"
				}
				if fin {
					name += "/then-FIN" // the peer half-closes at once: it still reads
				}
				t.Run(name, func(t *testing.T) { s.terminateCase(t, k, mid, fin) })
			}
		}
	}
}

func (s *suite) terminateCase(t *testing.T, k badFPDU, mid, fin bool) {
	v, _ := Setup(t, s.dev, 4096, verbs.QPInitAttr{}) // may build the sim card's RTL first: not under the watchdog
	ctx := timeout(t)
	for i := range 2 {
		require.NoError(t, v.QP.PostRecv(verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{v.MR.SGE(i*64, 64)}}))
	}
	ln, err := verbs.Listen("127.0.0.1:0", verbs.ListenConfig{Markers: k.markers})
	require.NoError(t, err)
	defer ln.Close()
	// The application: accept, then destroy the QP at its first error completion.
	app := make(chan error, 1)
	go func() {
		req, err := ln.Accept(ctx)
		if err == nil {
			err = req.Accept(v.QP, nil)
		}
		for err == nil {
			var wc verbs.WC
			if wc, err = v.CQ.Wait(ctx); err == nil && wc.Status != verbs.WCSuccess {
				err = v.QP.Destroy()
				break
			}
		}
		app <- err
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	p, err := mpa.Initiate(ctx, conn, mpa.Config{Rev: mpa.Rev1})
	require.NoError(t, err)
	require.Equal(t, k.markers, p.TxMarkers)
	f := p.Framer()
	msn := uint32(1)
	var out []byte
	if mid {
		out = frame(t, &f, sendSeg(msn, []byte("good")))
		msn++
	}
	out = append(out, k.bad(t, &f, v.MR, msn)...)
	_, err = conn.Write(out)
	require.NoError(t, err)
	if fin {
		require.NoError(t, conn.(*net.TCPConn).CloseWrite())
	}

	// Read the card's stream up to its FIN.
	df := p.Deframer(0)
	var got [][]byte
	buf := make([]byte, 64<<10)
	conn.SetReadDeadline(testwatch.Deadline()) // a watchdog: the card closes within its Linger
	for {
		n, err := conn.Read(buf)
		if n > 0 {
			require.NoError(t, df.Feed(buf[:n], func(u mpa.ULPDU) error {
				got = append(got, append([]byte(nil), u.Data...))
				return nil
			}), "the card's stream")
		}
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "reading the card's stream until its FIN")
	}
	conn.Close()
	require.NoError(t, <-app, "the application")
	require.NotEmpty(t, got, "no Terminate before the FIN (the card ended with %v)", v.QP.Err())
	m, err := rdmap.Parse(got[len(got)-1])
	require.NoError(t, err)
	require.Equal(t, rdmap.OpTerminate, m.Opcode(), "the last message before the FIN")
	require.Equal(t, k.cause, m.Terminate.Cause, "Terminate cause %v", m.Terminate.Cause)
	var ie *iwarp.Error
	require.ErrorAs(t, v.QP.Err(), &ie)
	require.Equal(t, k.cause, ie.Cause)
	if mid {
		require.Equal(t, "good", string(v.Buf[:4]), "the good Send before the error")
	}
}
