package sim

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// wcBadSegments are the receive errors TestCardCosimTerminate has the
// peer send, one per QP: each is refused by card_rx's checks and answered
// with a Terminate (RFC 5040 §5.4, the headers its cause asks for); the
// tagged ones by placement's.
var wcBadSegments = []struct {
	name  string
	cause rdmap.Cause
}{
	{"Send with Invalidate and no receive posted", rdmap.DDPNoBuffer},
	{"Read Request out of MSN range", rdmap.DDPInvalidMSNRange},
	{"Read Request of a source with a wrong key", 0}, // the STag table's verdict (R: its RDMAP header is copied)
	{"Read Request with MO 4", rdmap.DDPInvalidMO},
	{"RDMA Write to an STag with a wrong key", 0}, // placement's verdict: a DDP tagged buffer error
	{"RDMA Write past its region's end", 0},       // placement's: base and bounds
}

// peerBad has the peer send QP q the bad segment of kind k.
func (b *wcBench) peerBad(q *wcQP, k int) {
	if q.peerRRMSN == 0 {
		q.peerRRMSN = 1
	}
	var ulp []byte
	switch k {
	case 0:
		ulp = ddp.UntaggedFields{Last: true, Version: ddp.Version1, RsvdULP0: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpSendInvalidate)),
			RsvdULP1: uint32(q.stag), QN: rdmap.QNSend, MSN: 1}.Append(nil)
		ulp = append(ulp, "a Send no one waits for"...)
	case 4, 5:
		stag, to := uint32(q.stag)^0x5a00, wcRegion+uint64(q.n)<<16
		if k == 5 {
			stag, to = uint32(q.stag), to+wcRegLen-8
		}
		ulp = ddp.TaggedFields{Last: true, Version: ddp.Version1, RsvdULP: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpWrite)),
			STag: stag, TO: to}.Append(nil)
		ulp = append(ulp, "sixteen bytes..."...)
	default:
		msn, stag, mo := q.peerRRMSN, uint32(q.stag), uint32(0)
		switch k {
		case 1:
			msn += 3
		case 2:
			stag ^= 0x5a // the key
		case 3:
			mo = 4
		}
		ulp = ddp.UntaggedFields{Last: true, Version: ddp.Version1, RsvdULP0: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpReadRequest)),
			QN: rdmap.QNReadRequest, MSN: msn, MO: mo}.Append(nil)
		ulp = rdmap.ReadRequestFields{SinkSTag: 0x1234_5678, SinkTO: 0x9abc_def0_1234, Size: 64, SrcSTag: stag,
			SrcTO: wcRegion + uint64(q.n)<<16}.Append(ulp)
	}
	stream, err := q.peer.AppendFPDU(nil, ulp)
	require.NoError(b.t, err)
	b.peerSend(q, stream)
}

// TestCardCosimTerminate runs the whole-card workload, then has the peer
// send each QP a segment the receive checks refuse (wcBadSegments): the
// RTL card must answer as the card model does, with TERM_SENT (its
// cause), the Terminate's FPDU on the transmit ring after the FPDUs
// before it, the QP in ERROR with TX_CLOSED, and every WQE posted after
// it flushed with WR_FLUSH_ERR.
func TestCardCosimTerminate(t *testing.T) {
	for _, w := range gen.CardTopWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			b := newWCBench(t, w, seed, wcTiming, len(wcBadSegments))
			for round := 0; round < 8; round++ {
				b.round(round)
			}
			tx := map[uint32]int{}
			for i, q := range b.qps {
				tx[q.n] = len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil))
				b.peerBad(q, i)
			}
			b.runModel()
			b.runRTL(3_000_000)
			for _, q := range b.qps {
				for k := 1 + b.rng.IntN(3); k > 0; k-- {
					if int(uint16(1)<<q.sqLog)-int(q.pi-b.rtlStat(q.n).SQCI()) < cs.MaxWQEBBs {
						break // the SQ has no room for the largest WQE
					}
					b.post(q)
				}
				b.ring(q)
			}
			b.runModel()
			b.runRTL(3_000_000)
			b.compare()
			// What compare cannot tell from equality alone: each QP did
			// send a Terminate with the expected cause and is in error.
			terms := map[uint32]rdmap.Cause{}
			for _, e := range b.rWrite[wcKey{"eqe", 0}] {
				if ev := cs.EQE(e); ev.Type() == cs.EQETypeTermSent {
					terms[ev.Obj()] = rdmap.NewCause(rdmap.Layer(ev.TermLayer()), ev.TermType(), ev.TermCode())
				}
			}
			for i, q := range b.qps {
				st := b.rtlStat(q.n)
				require.Equal(t, cs.QPStateError, st.State(), "seed %d QP %d (%s): state", seed, q.n, wcBadSegments[i].name)
				require.True(t, st.TXClosed(), "seed %d QP %d: TX_CLOSED", seed, q.n)
				c, ok := terms[q.n]
				require.True(t, ok, "seed %d QP %d (%s): no TERM_SENT", seed, q.n, wcBadSegments[i].name)
				if want := wcBadSegments[i].cause; want != 0 {
					require.Equal(t, want, c, "seed %d QP %d (%s): TERM_SENT cause", seed, q.n, wcBadSegments[i].name)
				} else if i >= 4 {
					require.Equal(t, rdmap.TypeDDPTaggedBuffer, c.Type(), "seed %d QP %d (%s): TERM_SENT cause %v", seed, q.n, wcBadSegments[i].name, c)
				} else {
					require.Equal(t, rdmap.TypeRDMAPRemoteProtection, c.Type(), "seed %d QP %d (%s): TERM_SENT cause %v", seed, q.n, wcBadSegments[i].name, c)
				}
				n := len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil)) - tx[q.n]
				require.Greater(t, n, 0, "seed %d QP %d: no Terminate on the transmit ring", seed, q.n)
				t.Logf("QP %d: %s: TERM_SENT %v, %d ring bytes", q.n, wcBadSegments[i].name, c, n)
			}
		})
	}
}
