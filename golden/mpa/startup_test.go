package mpa

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/internal/testwatch"
)

// tcpPair returns the two ends of a real TCP connection on 127.0.0.1.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	server = <-accepted
	require.NotNil(t, server)
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

type outcome struct {
	p   Params
	err error
}

// startup runs Initiate and Respond against each other over TCP.
func startup(t *testing.T, icfg, rcfg Config) (ini, res outcome, ic, rc net.Conn) {
	t.Helper()
	ic, rc = tcpPair(t)
	ctx := context.Background()
	done := make(chan outcome, 1)
	go func() {
		p, err := Respond(ctx, rc, rcfg)
		done <- outcome{p, err}
	}()
	p, err := Initiate(ctx, ic, icfg)
	return outcome{p, err}, <-done, ic, rc
}

// TestNegotiation covers the M and C tables of RFC 5044 §7.1.1 (R53-R55,
// R31, R30) and the default of CRC on (R27).
func TestNegotiation(t *testing.T) {
	for _, tc := range []struct {
		name          string
		icfg, rcfg    Config
		iTx, iRx, crc bool
	}{
		{"defaults: CRC on, no markers", Config{}, Config{}, false, false, true},
		{"both no CRC", Config{NoCRC: true}, Config{NoCRC: true}, false, false, false},
		{"initiator wants CRC", Config{}, Config{NoCRC: true}, false, false, true},
		{"responder wants CRC", Config{NoCRC: true}, Config{}, false, false, true},
		{"initiator wants markers", Config{Markers: true}, Config{}, false, true, true},
		{"responder wants markers", Config{}, Config{Markers: true}, true, false, true},
		{"markers both ways", Config{Markers: true}, Config{Markers: true}, true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ini, res, _, _ := startup(t, tc.icfg, tc.rcfg)
			require.NoError(t, ini.err)
			require.NoError(t, res.err)
			require.Equal(t, Rev1, ini.p.Rev)
			require.Equal(t, tc.iTx, ini.p.TxMarkers)
			require.Equal(t, tc.iRx, ini.p.RxMarkers)
			require.Equal(t, tc.iTx, res.p.RxMarkers, "responder receives what initiator sends")
			require.Equal(t, tc.iRx, res.p.TxMarkers)
			require.Equal(t, tc.crc, ini.p.CRC)
			require.Equal(t, tc.crc, res.p.CRC)
			require.False(t, ini.p.WaitFirstFPDU)
			require.True(t, res.p.WaitFirstFPDU, "R73: responder waits for one FPDU")
			require.Equal(t, uint8(1), ini.p.DDPVersion())
		})
	}
}

// TestFullOperationAfterStartup frames ULPDUs both ways right after the
// exchange: nothing of the startup frames is over-read (R49, R75).
func TestFullOperationAfterStartup(t *testing.T) {
	ini, res, ic, rc := startup(t, Config{Markers: true, PrivateData: []byte("hi")}, Config{Markers: true})
	require.NoError(t, ini.err)
	require.NoError(t, res.err)
	require.Equal(t, []byte("hi"), res.p.PeerPD)
	fi := ini.p.Framer()
	wire, err := fi.AppendFPDU(nil, []byte("first FPDU from the initiator"))
	require.NoError(t, err)
	require.Equal(t, []byte{0, 0, 0, 0}, wire[:4], "R75: the first FPDU opens with a zero marker")
	_, err = ic.Write(wire)
	require.NoError(t, err)
	d := res.p.Deframer(0)
	buf := make([]byte, 4096)
	var got []byte
	for got == nil {
		n, err := rc.Read(buf)
		require.NoError(t, err)
		require.NoError(t, d.Feed(buf[:n], func(u ULPDU) error { got = append([]byte(nil), u.Data...); return nil }))
	}
	require.Equal(t, "first FPDU from the initiator", string(got))
}

// TestReject: R=1 with private data; TCP stays open on both sides
// (R66, R67, R71).
func TestReject(t *testing.T) {
	rcfg := Config{Accept: func(p *Params) (bool, []byte) {
		return string(p.PeerPD) != "let me in", []byte("no")
	}}
	ini, res, ic, rc := startup(t, Config{PrivateData: []byte("please")}, rcfg)
	require.ErrorIs(t, ini.err, ErrRejected)
	require.ErrorIs(t, res.err, ErrRejected)
	require.Equal(t, []byte("no"), ini.p.PeerPD)
	require.True(t, ini.p.Peer.Reject)
	var me *Error
	require.ErrorAs(t, ini.err, &me)
	require.False(t, me.CloseTCP())
	// The connection is still usable by the ULPs.
	_, err := ic.Write([]byte("ok?"))
	require.NoError(t, err)
	buf := make([]byte, 3)
	_, err = io.ReadFull(rc, buf)
	require.NoError(t, err)
	require.Equal(t, "ok?", string(buf))
}

// TestRevisions: each peer gets the revision it can speak (R58, R59, R92,
// digest §6.3, §10).
func TestRevisions(t *testing.T) {
	t.Run("draft-01 initiator, RFC responder: RDMAC mode", func(t *testing.T) {
		ini, res, _, _ := startup(t, Config{Draft01: true, NoCRC: true}, Config{})
		require.NoError(t, ini.err)
		require.NoError(t, res.err)
		for _, p := range []Params{ini.p, res.p} {
			require.Equal(t, Rev0, p.Rev)
			require.True(t, p.TxMarkers && p.RxMarkers && p.CRC, "markers and CRC both ways")
			require.Equal(t, uint8(0), p.DDPVersion())
		}
		require.True(t, ini.p.Local.Markers && ini.p.Local.CRC, "a Rev 0 frame always says M=1 C=1")
		require.Equal(t, Rev0, res.p.Local.Rev)
	})
	t.Run("RFC initiator, draft-01 responder: closed", func(t *testing.T) {
		ini, res, _, _ := startup(t, Config{}, Config{Draft01: true})
		require.ErrorIs(t, res.err, ErrStartup)
		require.Error(t, ini.err)
	})
	t.Run("Rev 2 both: IRD/ORD exchanged", func(t *testing.T) {
		ini, res, _, _ := startup(t, Config{Rev: Rev2, IRD: 8, ORD: 4, PrivateData: []byte("ulp")},
			Config{IRD: 16, ORD: 16, PrivateData: []byte("ack")})
		require.NoError(t, ini.err)
		require.NoError(t, res.err)
		require.Equal(t, Rev2, ini.p.Rev)
		require.True(t, ini.p.Local.Enhanced && res.p.Local.Enhanced)
		require.Equal(t, []byte("ulp"), res.p.PeerPD)
		require.Equal(t, []byte("ack"), ini.p.PeerPD)
		require.Equal(t, uint16(8), res.p.PeerIRD)
		require.Equal(t, uint16(4), res.p.PeerORD)
		require.Equal(t, uint16(16), ini.p.PeerIRD)
		require.Equal(t, uint16(8), ini.p.PeerORD, "responder ORD clamped to the initiator's IRD")
	})
	t.Run("Rev 2 peer-to-peer RTR", func(t *testing.T) {
		ini, res, _, _ := startup(t, Config{Rev: Rev2, PeerToPeer: true, RTR: RTRSend | RTRRead},
			Config{PeerToPeer: true})
		require.NoError(t, ini.err)
		require.NoError(t, res.err)
		require.Equal(t, RTRSend, ini.p.RTR)
		require.Equal(t, RTRSend, res.p.RTR)
	})
	t.Run("Rev 2 peer-to-peer refused: no matching RTR", func(t *testing.T) {
		ini, res, _, _ := startup(t, Config{Rev: Rev2, PeerToPeer: true}, Config{})
		var me *Error
		require.ErrorAs(t, res.err, &me)
		require.Equal(t, CodeNoMatchingRTR, me.Code)
		require.Error(t, ini.err)
	})
	t.Run("Rev 2 initiator, Rev 1 responder: falls back", func(t *testing.T) {
		ini, res, _, _ := startup(t, Config{Rev: Rev2, ORD: 2}, Config{Rev: Rev1})
		require.NoError(t, ini.err)
		require.NoError(t, res.err)
		require.Equal(t, Rev1, ini.p.Rev)
		require.False(t, res.p.Local.Enhanced)
	})
}

// rawPeer writes raw octets to a Responder or Initiator and returns its
// error and how long it took.
func rawPeer(t *testing.T, role string, raw []byte, cfg Config) (time.Duration, net.Conn, error) {
	t.Helper()
	us, them := tcpPair(t)
	if raw != nil {
		go them.Write(raw)
	}
	start := time.Now()
	var err error
	if role == "responder" {
		_, err = Respond(context.Background(), us, cfg)
	} else {
		_, err = Initiate(context.Background(), us, cfg)
	}
	return time.Since(start), them, err
}

func frameBytes(t *testing.T, f Frame) []byte {
	b, err := f.Append(nil)
	require.NoError(t, err)
	return b
}

// TestMalformedStartup: every malformed frame closes the connection with a
// typed error within a bounded time (R52, R59, R61, R65, R70, R74, R76-R79,
// R87, S4).
func TestMalformedStartup(t *testing.T) {
	req := frameBytes(t, Frame{CRC: true, Rev: Rev1})
	bigPD := frameBytes(t, Frame{CRC: true, Rev: Rev0, PrivateData: make([]byte, 600)})
	badKey := append([]byte(nil), req...)
	badKey[3] = 'X'
	rev9 := append([]byte(nil), req...)
	rev9[17] = 9
	fast := Config{Timeout: 300 * time.Millisecond}
	for _, tc := range []struct {
		name     string
		role     string
		raw      []byte
		sentinel error
	}{
		{"bad key", "responder", badKey, ErrStartup},
		{"Reply sent to a Responder", "responder", frameBytes(t, Frame{Reply: true, Rev: Rev1}), ErrStartup},
		{"Request sent to an Initiator (initiator/initiator)", "initiator", req, ErrStartup},
		{"PD_Length over 512", "responder", bigPD, ErrStartup},
		{"unknown revision", "responder", rev9, ErrStartup},
		{"half a frame, then silence", "responder", req[:11], ErrTimeout},
		{"nothing at all (responder/responder)", "responder", nil, ErrTimeout},
		{"enhanced frame without its prefix", "responder", frameBytes(t, Frame{Rev: Rev2, Enhanced: true}), ErrStartup},
	} {
		t.Run(tc.name, func(t *testing.T) {
			took, them, err := rawPeer(t, tc.role, tc.raw, fast)
			require.ErrorIs(t, err, tc.sentinel)
			var me *Error
			require.ErrorAs(t, err, &me)
			require.True(t, me.CloseTCP(), "code 4: close at once")
			require.Less(t, took, testwatch.Patience(), "the startup ended by itself")
			// The peer sees the close: EOF or reset, never a hang.
			require.NoError(t, them.SetReadDeadline(testwatch.Deadline()))
			_, rerr := io.Copy(io.Discard, them)
			if rerr != nil {
				require.NotErrorIs(t, rerr, context.DeadlineExceeded)
				var ne net.Error
				if errors.As(rerr, &ne) {
					require.False(t, ne.Timeout(), "peer was not closed")
				}
			}
		})
	}
}

// TestRevZeroAllowsLargePrivateData: a draft-01 side accepts up to 65535
// octets of private data (digest §6.2 D2), an RFC side at most 512 (R62).
func TestRevZeroAllowsLargePrivateData(t *testing.T) {
	ini, res, _, _ := startup(t, Config{Draft01: true, PrivateData: make([]byte, 4000)}, Config{MaxPrivateData: 8192})
	require.NoError(t, ini.err)
	require.NoError(t, res.err)
	require.Len(t, res.p.PeerPD, 4000)
	_, err := (&Frame{Rev: Rev1, PrivateData: make([]byte, 513)}).Append(nil)
	require.Error(t, err)
}

func TestStartupContextCancel(t *testing.T) {
	us, _ := tcpPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := Respond(ctx, us, Config{Timeout: time.Minute})
	require.ErrorIs(t, err, ErrTimeout)
	require.ErrorIs(t, err, context.Canceled)
}

// TestResFlagsNotChecked: reserved bits are ignored on receive (R57) and
// the Request's R bit is not checked.
func TestResFlagsNotChecked(t *testing.T) {
	req := frameBytes(t, Frame{CRC: true, Rev: Rev1})
	req[16] |= flagReserved | flagReject
	us, them := tcpPair(t)
	go func() {
		them.Write(req)
		ReadFrame(them, MaxPrivateData)
	}()
	p, err := Respond(context.Background(), us, Config{})
	require.NoError(t, err)
	require.Equal(t, uint8(flagReserved), p.Peer.Reserved)
	require.False(t, p.Local.Reject)
}
