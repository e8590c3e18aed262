package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// refuse makes both hosts refuse DMA to the window at iova from now on:
// the RTL's is unmapped, the model's host answers an error there.
func (b *wcBench) refuse(iova uint64) {
	b.t.Helper()
	m, ok := b.win[iova]
	require.True(b.t, ok, "no window at %#x", iova)
	require.NoError(b.t, b.ws.Unmap(iova))
	b.refused = append(b.refused, [2]uint64{iova, iova + uint64(len(m))})
}

func (b *wcBench) isRefused(a uint64) bool {
	for _, r := range b.refused {
		if a >= r[0] && a < r[1] {
			return true
		}
	}
	return false
}

// faultRegs reads STATUS and the DMA_FAULT_* registers of one card.
func faultRegs(t testing.TB, read func(uint32) (uint32, error)) [4]uint32 {
	var r [4]uint32
	for i, off := range []uint32{cs.Status, cs.DMAFaultAddrLo, cs.DMAFaultAddrHi, cs.DMAFaultInfo} {
		v, err := read(off)
		require.NoError(t, err)
		r[i] = v
	}
	return r
}

// writes counts the DMA writes a card made (payload writes by byte).
func writes(ws map[wcKey][][]byte) int {
	n := 0
	for _, l := range ws {
		n += len(l)
	}
	return n
}

// TestCardCosimFatal: a status record or an EQE that the host refuses to
// take stops the card as it stops the card model. After some traffic the
// status table (or the EQ) is unmapped, and a signaled Send (or a CQ
// doorbell that arms a CQ holding an unconsumed completion, whose
// CQ_NOTIFY is the EQE) runs into it: both cards must
// write the same things before the fault (for a status record: its
// DMA_FAULT event, OBJ 0, and not the Send's CQE), read STATUS.FATAL,
// and name the same write in DMA_FAULT_ADDR and DMA_FAULT_INFO. Then the
// stopped RTL card must start no DMA whatever it is given (a Send on the
// other QP, a CQ doorbell) but still decide commands (CMD_STATUS).
func TestCardCosimFatal(t *testing.T) {
	for _, w := range gen.CardTopWidths {
		for _, what := range []string{"status", "eqe"} {
			t.Run(fmt.Sprintf("%d/%s", w, what), func(t *testing.T) {
				seed := seedFor(t.Name())
				b := newWCBench(t, w, seed, wcTiming, 2)
				for round := 0; round < 3; round++ {
					b.round(round)
				}
				b.compare()
				q := b.qps[0]
				var wantAddr uint64
				switch what {
				case "status":
					b.refuse(wcStat)
					wantAddr = wcStat + uint64(q.n)*cs.QPStatSize
					b.postWQE(q, inlineSend(0xfa, 24))
					b.ring(q)
				case "eqe":
					// Arming a CQ with a completion past its CI writes
					// CQ_NOTIFY at once: the one EQE of this step.
					n, cqes := uint32(0), 0
					for c := uint32(1); c <= wcNCQ; c++ {
						if k := len(b.mWrite[wcKey{"cqe", c}]); k > cqes {
							n, cqes = c, k
						}
					}
					require.NotZero(t, cqes, "seed %d: no completion yet", seed)
					b.refuse(wcEQ)
					wantAddr = wcEQ + uint64(len(b.mWrite[wcKey{"eqe", 0}])%(1<<wcEQLog))*cs.EQESize
					b.w32(cs.CQDBBase+n*cs.CQDBStride+cs.CQDBCI, uint32(cqes-1)|1<<cs.CQDBCIArmShift)
				}
				b.runModel()
				ms := faultRegs(t, b.model.Read32)
				require.NotZero(t, ms[0]>>cs.StatusFatalShift&1, "seed %d: the model did not stop", seed)
				require.Equal(t, wantAddr, uint64(ms[2])<<32|uint64(ms[1]), "seed %d: the model's DMA_FAULT_ADDR", seed)
				b.runRTL(3_000_000)
				require.NoError(t, b.rtl.RunUntil(func() bool {
					s, err := b.rtl.RegRead(cs.Status)
					require.NoError(t, err)
					return s>>cs.StatusFatalShift&1 != 0
				}, 100_000), "seed %d: the RTL did not stop", seed)
				require.NoError(t, b.rtl.RunUntil(func() bool { return b.rtl.Outstanding() == 0 }, 100_000), "seed %d: DMA still outstanding", seed)
				rs := faultRegs(t, b.rtl.RegRead)
				require.Equal(t, ms, rs, "seed %d: STATUS, DMA_FAULT_ADDR_LO/HI, DMA_FAULT_INFO (RTL, model)", seed)
				require.NotEmpty(t, b.faults, "seed %d: no write was refused", seed)
				b.compare()
				if what == "status" {
					eqes := b.rWrite[wcKey{"eqe", 0}]
					require.NotEmpty(t, eqes, "seed %d", seed)
					e := cs.EQE(eqes[len(eqes)-1])
					require.Equal(t, cs.EQETypeDMAFault, e.Type(), "seed %d: the last event", seed)
					require.Zero(t, e.Obj(), "seed %d: DMA_FAULT's OBJ", seed)
					require.Equal(t, uint32(wantAddr), e.Info(), "seed %d: DMA_FAULT's INFO", seed)
				}

				// Stopped: no DMA for new work, but commands are decided.
				nw, nf, st := writes(b.rWrite), len(b.faults), b.rtl.Stats()
				o := b.qps[1]
				b.postWQE(o, inlineSend(0xfb, 8))
				b.ring(o)
				b.w32(cs.CQDBBase+o.sendCQ*cs.CQDBStride+cs.CQDBCI, uint32(len(b.mWrite[wcKey{"cqe", o.sendCQ}]))|1<<cs.CQDBCIArmShift)
				require.NoError(t, b.rtl.Step(20_000))
				require.Equal(t, nw, writes(b.rWrite), "seed %d: the stopped card wrote", seed)
				require.Equal(t, nf, len(b.faults), "seed %d: the stopped card tried to write", seed)
				require.Equal(t, st.ReadBursts, b.rtl.Stats().ReadBursts, "seed %d: the stopped card read", seed)
				b.w32(cs.QPNum, o.n)
				b.command("ERROR after the stop", cs.QPCmd, uint32(cs.QPOpError), cs.CmdWhyOk)
				t.Logf("seed %d: stopped at %#x (%d refused writes), then %d cycles without DMA", seed, wantAddr, len(b.faults), 20_000)
			})
		}
	}
}
