//go:build cosim

package sim_test

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/host/driver/sim"
	"github.com/openiwarp/openiwarp/host/verbs"
	"github.com/openiwarp/openiwarp/internal/testwatch"
)

// TestRTLDecidesCRC sends the sim card's QP one hand-made FPDU from a raw
// socket. With a correct CRC the FPDU passes the RTL's residue check and
// its (garbage) DDP header is what fails; with one bit of the CRC flipped
// the RTL check fails it first, as an MPA CRC error (Terminate 2/0/0x02).
func TestRTLDecidesCRC(t *testing.T) {
	for _, c := range []struct {
		name    string
		corrupt bool
		layer   rdmap.Layer
	}{{"good-crc", false, rdmap.LayerDDP}, {"bad-crc", true, rdmap.LayerLLP}} {
		t.Run(c.name, func(t *testing.T) {
			dev, err := verbs.Open("sim") // may build the Verilated blocks first: not under the deadline
			require.NoError(t, err)
			defer dev.Close()
			ctx := testwatch.Context(t, t.Name())
			pd, _ := dev.AllocPD()
			cq, _ := dev.CreateCQ(8)
			qp, err := pd.CreateQP(verbs.QPInitAttr{SendCQ: cq, RecvCQ: cq})
			require.NoError(t, err)
			ln, err := verbs.Listen("127.0.0.1:0", verbs.ListenConfig{})
			require.NoError(t, err)
			defer ln.Close()
			accepted := make(chan error, 1)
			go func() {
				req, err := ln.Accept(ctx)
				if err == nil {
					err = req.Accept(qp, nil)
				}
				accepted <- err
			}()
			conn, err := net.Dial("tcp", ln.Addr().String())
			require.NoError(t, err)
			defer conn.Close()
			p, err := mpa.Initiate(ctx, conn, mpa.Config{})
			require.NoError(t, err)
			f := p.Framer()
			// A tagged DDP header with version 3: the DDP layer rejects it.
			ulpdu := append([]byte{0x80 | 0x40 | 3, 0x40}, make([]byte, 20)...)
			fpdu, err := f.AppendFPDU(nil, ulpdu)
			require.NoError(t, err)
			if c.corrupt {
				fpdu[len(fpdu)-1] ^= 0x10
			}
			c0 := sim.CheckedCycles()
			_, err = conn.Write(fpdu)
			require.NoError(t, err)
			require.NoError(t, <-accepted, "accepting the connection")
			select {
			case <-qp.Done():
			case <-ctx.Done():
				t.Fatal("the QP did not end on a bad FPDU")
			}
			var ie *iwarp.Error
			require.ErrorAs(t, qp.Err(), &ie)
			require.Equal(t, c.layer, ie.Cause.Layer(), "%v", ie)
			if c.corrupt {
				require.Equal(t, rdmap.NewCause(rdmap.LayerLLP, 0, uint8(mpa.CodeCRC)), ie.Cause)
			}
			require.Greater(t, sim.CheckedCycles(), c0, "the FPDU went through the RTL")
		})
	}
}
