package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// card_stat at 64 and 512 bits matches its cycle model (golden/cycle's
// CardStat) on every output of every cycle: QP commands, doorbells of
// every kind and the engines' records on a few QPs and on any, every event
// type (QP_ERROR with each INFO, DMA_FAULT), completions, stream-end
// records, refused status writes that stop the card (then reset),
// backpressure on every port (the queue full), junk on the data lines of
// ports not offered, resets at any time.
func TestCardStatCycleCosim(t *testing.T) {
	for _, w := range []int{64, 512} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			b, err := CardStatBench(w)
			require.NoError(t, err)
			var drv *cardStatCycleDriver
			var mdl *cardStatModel
			nd, nm := b.NewDriver, b.NewModel
			b.NewDriver = func(seed uint64) Driver { drv = nd(seed).(*cardStatCycleDriver); return drv }
			b.NewModel = func() (Model, error) {
				m, err := nm()
				if err == nil {
					mdl = m.(*cardStatModel)
				}
				return m, err
			}
			seed := seedFor(t.Name())
			st, err := b.Run(seed, *cosimCycles)
			require.NoError(t, err, "seed %d (rerun with -cosim.seed=%d)", seed, seed)
			require.NoError(t, drv.Err, "seed %d (rerun with -cosim.seed=%d)", seed, seed)
			require.Equal(t, *cosimCycles, st.Cycles)
			n := *cosimCycles / 1000
			for _, op := range []cs.QPOp{cs.QPOpCreate, cs.QPOpClose, cs.QPOpError, cs.QPOpDestroy} {
				assert.Greater(t, drv.Cmds[op], n/4, "QP commands %v", op)
			}
			assert.Positive(t, drv.Cmds[0]+drv.Cmds[5]+drv.Cmds[6]+drv.Cmds[15], "QP commands without effect")
			for _, k := range []cs.DBKind{cs.DBKindQPDBSQPI, cs.DBKindQPDBTXSCI, cs.DBKindQPDBRXSPI, cs.DBKindQPDBStream, cs.DBKindQPDBPush, cs.DBKindQPDBRQPI} {
				assert.Greater(t, drv.DBs[k], n, "doorbells %v", k)
			}
			assert.Greater(t, drv.Tx, 5*n, "transmit records")
			assert.Greater(t, drv.TxCQE, 2*n, "transmit records with a CQE")
			assert.Greater(t, drv.TxTerm, n/8, "Terminate records")
			assert.Greater(t, drv.Rx, 5*n, "RXS_CI records")
			assert.Greater(t, drv.RxErr, n/20, "RXS_CI records past a failed FPDU")
			assert.Greater(t, drv.Rc, 5*n, "receive completions")
			assert.Greater(t, drv.RcSilent, n/4, "silent receive completions")
			assert.Greater(t, drv.Cpls, 5*n, "completions passed on")
			for _, e := range []cs.EQEType{cs.EQETypeTXData, cs.EQETypeRXSpace, cs.EQETypeQPClosed, cs.EQETypeStreamEnd, cs.EQETypeQPError} {
				assert.Greater(t, drv.Events[e], n/10, "%v events", e)
			}
			for _, why := range []cs.QPErr{cs.QPErrHost, cs.QPErrLLPLost, cs.QPErrBadDoorbell, cs.QPErrStreamCut} {
				assert.Positive(t, drv.QPErrs[why], "QP_ERROR %v events", why)
			}
			assert.Greater(t, drv.Events[cs.EQETypeDMAFault], n/100, "DMA_FAULT events")
			assert.Equal(t, drv.Events[cs.EQETypeDMAFault], drv.Faults, "a DMA_FAULT taken is an m_fault pulse")
			assert.Greater(t, drv.Ends, n/10, "stream-end records")
			assert.Positive(t, drv.EndsLost, "stream-end records of RX_LOST")
			assert.Greater(t, drv.TakenStopped, n/10, "updates taken on a stopped card")
			assert.Greater(t, drv.Dones, n, "QPs reported CLOSED or ERROR")
			assert.Positive(t, drv.Closed, "QPs reported CLOSED")
			assert.Greater(t, drv.Resets, n/100, "resets")
			assert.Greater(t, drv.Held, drv.Offered/20, "cycles a record waits")
			assert.Greater(t, drv.CplWait, n, "cycles a completion waits")
			assert.Greater(t, drv.EvWait, n, "cycles an event waits")
			assert.Greater(t, mdl.Full, n, "cycles with the queue full")
			assert.Greater(t, drv.Refused, n/100, "status writes refused")
			t.Logf("%s: %d cycles, %.2f M cycles/s; %d status writes (%d refused), QP commands %v, doorbells %v, %d transmit records (%d CQEs, %d Terminates), %d RXS_CI records (%d failed), %d receive completions (%d silent), %d completions passed on",
				b.Module.Name, st.Cycles, st.CyclesPerSecond()/1e6, drv.Writes, drv.Refused, drv.Cmds, drv.DBs, drv.Tx, drv.TxCQE, drv.TxTerm, drv.Rx, drv.RxErr, drv.Rc, drv.RcSilent, drv.Cpls)
			t.Logf("events %v, QP_ERROR INFO %v, %d stream-end records (%d lost), %d faults, %d updates taken stopped, %d done, %d resets; %d of %d cycles with a record offered wait, %d a completion, %d an event, %d with the queue full",
				drv.Events, drv.QPErrs, drv.Ends, drv.EndsLost, drv.Faults, drv.TakenStopped, drv.Dones, drv.Resets, drv.Held, drv.Offered, drv.CplWait, drv.EvWait, mdl.Full)
		})
	}
}

// The DMA_FAULT of a refused status write names the record's address
// (INFO bits 31:0, m_fault_addr), the address written, as the card
// model's writeStatus reports it, even when the host has rewritten
// QPSTAT_BASE since the write was made (here it moves every 64 cycles or
// so, faults are frequent). The model keeps each write's address with its
// entry.
//
// This test found (28 Nov) that card_stat recomputed the address from
// the current QPSTAT_BASE and the head entry's QPN when the fault reached
// the head, naming an address never written; each entry now keeps its
// record's address (pend*_addr).
func TestCardStatCycleCosimBaseMoves(t *testing.T) {
	for _, w := range []int{64, 512} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			b, err := CardStatBench(w)
			require.NoError(t, err)
			var drv *cardStatCycleDriver
			nd := b.NewDriver
			b.NewDriver = func(seed uint64) Driver {
				drv = nd(seed).(*cardStatCycleDriver)
				drv.baseMoves = true
				return drv
			}
			seed := seedFor(t.Name())
			st, err := b.Run(seed, *cosimCycles/4)
			require.NoError(t, err, "seed %d (rerun with -cosim.seed=%d)", seed, seed)
			require.NoError(t, drv.Err, "seed %d", seed)
			assert.Positive(t, drv.Faults, "DMA_FAULTs")
			t.Logf("%s: %d cycles, %d faults, with QPSTAT_BASE moving", b.Module.Name, st.Cycles, drv.Faults)
		})
	}
}
