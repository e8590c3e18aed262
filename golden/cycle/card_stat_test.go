package cycle

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// statTB steps a CardStat behind an AXI slave that takes every address
// and beat at once and answers a write only when the test says.
type statTB struct {
	t      *testing.T
	c      *CardStat
	in     CardStatIn
	o      CardStatOut
	cycle  int      // the next cycle's number
	aw     []uint64 // burst addresses taken
	wlast  []int    // the cycles of the bursts' last beats
	data   []byte   // the W beats' strobed bytes, in order
	bursts int      // bursts complete and not answered
}

const statBase = 0x12_3456_7000

func newStatTB(t *testing.T, width int) *statTB {
	c, err := NewCardStat(DMAWrConfig{Width: width, IDBits: 4, Bursts: 32, TagBits: 8})
	require.NoError(t, err)
	b := &statTB{t: t, c: c}
	b.in.QPStatBase, b.in.AWReady, b.in.WReady = statBase, true, true
	b.in.CplReady, b.in.EvReady, b.in.EndReady = true, true, true
	b.in.Reset = true
	b.step()
	b.in.Reset = false
	b.cycle = 0
	return b
}

func (b *statTB) step() *CardStatOut {
	b.c.Step(&b.in, &b.o)
	o := &b.o
	if o.AWValid && b.in.AWReady {
		b.aw = append(b.aw, o.AWAddr)
	}
	if o.WValid && b.in.WReady {
		for i, v := range o.WData {
			if o.WStrb>>i&1 != 0 {
				b.data = append(b.data, v)
			}
		}
		if o.WLast {
			b.wlast = append(b.wlast, b.cycle)
			b.bursts++
		}
	}
	if b.in.BValid && o.BReady {
		b.bursts--
	}
	b.cycle++
	return o
}

// until steps until cond holds on an output (at most limit cycles) and
// returns the cycle it held in.
func (b *statTB) until(limit int, what string, cond func(*CardStatOut) bool) int {
	b.t.Helper()
	for i := 0; i < limit; i++ {
		if cond(b.step()) {
			return b.cycle - 1
		}
	}
	b.t.Fatalf("no %s within %d cycles (cycle %d)", what, limit, b.cycle)
	return 0
}

// wait is until's, returning that cycle's outputs (valid until the next
// step).
func (b *statTB) wait(limit int, what string, cond func(*CardStatOut) bool) *CardStatOut {
	b.t.Helper()
	b.until(limit, what, cond)
	return &b.o
}

// respond answers the oldest write (resp: AXI BRESP) in the coming cycle.
func (b *statTB) respond(resp uint8) int {
	b.t.Helper()
	require.Positive(b.t, b.bursts, "a write to answer")
	b.in.BValid, b.in.BResp = true, resp
	at := b.until(1, "bready", func(o *CardStatOut) bool { return o.BReady })
	b.in.BValid, b.in.BResp = false, 0
	return at
}

func (b *statTB) cmd(op cs.QPOp, qpn uint16) int {
	b.t.Helper()
	b.in.CmdValid, b.in.CmdOp, b.in.CmdQPN = true, op, qpn
	at := b.until(20, "qp_cmd_ready", func(o *CardStatOut) bool { return o.CmdReady })
	b.in.CmdValid = false
	return at
}

func (b *statTB) db(kind cs.DBKind, qpn uint16, v uint32) int {
	b.t.Helper()
	b.in.DBValid, b.in.DBKind, b.in.DBIndex, b.in.DBValue = true, kind, qpn, v
	at := b.until(20, "s_db_ready", func(o *CardStatOut) bool { return o.DBReady })
	b.in.DBValid = false
	return at
}

func (b *statTB) tx(r CardStatTx) int {
	b.t.Helper()
	b.in.TxValid, b.in.Tx = true, r
	at := b.until(20, "s_tx_ready", func(o *CardStatOut) bool { return o.TxReady })
	b.in.TxValid = false
	return at
}

// record is the i-th status write's 32 bytes.
func (b *statTB) record(i int) cs.QPStat {
	b.t.Helper()
	require.GreaterOrEqual(b.t, len(b.data), (i+1)*cs.QPStatSize, "status write %d", i)
	return cs.QPStat(b.data[i*cs.QPStatSize : (i+1)*cs.QPStatSize])
}

// The timing of an update: one without a status write takes 3 cycles
// (taken, context read, acts); one with a write hands its record to
// dma_wr after those and is done once the last beat is handed on, so
// behind a slave that is always ready the next update is taken in the
// cycle the record's last W beat shows. The record: QPSTAT_BASE + 32 x
// QPN, CREATE's all zero with STATE RTS.
func TestCardStatTiming(t *testing.T) {
	for _, w := range []int{64, 512} {
		b := newStatTB(t, w)
		o := b.step()
		assert.False(t, o.Busy, "idle after reset")
		b.in.DBValid, b.in.DBKind, b.in.DBIndex, b.in.DBValue = true, cs.DBKindQPDBSQPI, 9, 4
		assert.True(t, b.step().DBReady, "a doorbell is taken in the cycle it is offered")
		b.in.DBValue = 5
		for i := 1; i <= 2; i++ {
			o := b.step()
			assert.False(t, o.DBReady, "width %d: cycle %d of the update", w, i)
			assert.True(t, o.Busy)
		}
		assert.True(t, b.step().DBReady, "width %d: the next update in the update's fourth cycle", w)
		b.in.DBValid = false
		b.step()
		b.step()

		at := b.cmd(cs.QPOpCreate, 5)
		b.in.DBValid, b.in.DBKind = true, cs.DBKindQPDBPush
		next := b.until(20, "the next update", func(o *CardStatOut) bool { return o.DBReady })
		b.in.DBValid = false
		require.Len(t, b.aw, 1)
		assert.Equal(t, uint64(statBase+5*32)&^uint64(w/8-1), b.aw[0], "width %d: the record's address (its beat's)", w)
		require.Len(t, b.wlast, 1)
		assert.Equal(t, b.wlast[0], next, "width %d: the next update is taken with the record's last beat", w)
		assert.Greater(t, next-at, 3, "width %d", w)
		r := b.record(0)
		assert.Equal(t, cs.QPStateRts, r.State())
		assert.Equal(t, [cs.QPStatSize]byte{12: 1}, [cs.QPStatSize]byte(r))
		assert.True(t, b.step().Busy, "the write waits for its response")
		b.respond(0)
		b.step()
		b.step()
		assert.False(t, b.step().Busy, "the write's entry left")
	}
}

// A completion waits for the write responses of every status write
// before it, its own record's included: it shows two cycles after the
// last of them is taken (dma_wr's completion, then the count).
func TestCardStatCompletionAfterWrites(t *testing.T) {
	b := newStatTB(t, 64)
	b.cmd(cs.QPOpCreate, 1)
	b.tx(CardStatTx{QPN: 1, SQCI: 3, TXSPI: 0x1234, CQE: true, CQ: 7, WRID: 0xfeed, Opcode: 1, Status: 5, ByteLen: 99, TermCause: 0x2a41})
	b.until(30, "the second record", func(*CardStatOut) bool { return len(b.wlast) == 2 })
	for i := 0; i < 10; i++ {
		assert.False(t, b.step().CplValid, "no response yet")
	}
	b.respond(0)
	for i := 0; i < 10; i++ {
		assert.False(t, b.step().CplValid, "the completion's own record has no response yet")
	}
	b.in.CplReady = false
	at := b.respond(0)
	assert.False(t, b.step().CplValid)
	o := b.step()
	require.True(t, o.CplValid, "two cycles after the response")
	assert.Equal(t, at+2, b.cycle-1)
	assert.Equal(t, CardStatCpl{CQ: 7, QPN: 1, WRID: 0xfeed, Opcode: 1, Status: 5, ByteLen: 99, TermLayer: 2, TermType: 0xa, TermCode: 0x41}, o.Cpl)
	assert.True(t, b.step().CplValid, "held until taken")
	b.in.CplReady = true
	assert.True(t, b.step().CplValid)
	assert.False(t, b.step().CplValid, "taken once")
	r := b.record(1)
	assert.Equal(t, uint32(0x1234), r.TXSPI())
	assert.Equal(t, uint16(3), r.SQCI())
	assert.Equal(t, cs.QPStateRts, r.State())
}

// A status write whose response is an error: its entry gives, instead of
// its completion, a DMA_FAULT (OBJ 0, INFO the record's address) with the
// stop; m_fault names the QP and address when it is taken; from then on
// updates are taken but nothing is written or passed on.
func TestCardStatFault(t *testing.T) {
	b := newStatTB(t, 512)
	b.cmd(cs.QPOpCreate, 3)
	b.until(30, "the record", func(*CardStatOut) bool { return len(b.wlast) == 1 })
	b.tx(CardStatTx{QPN: 3, SQCI: 1, TXSPI: 10, CQE: true, CQ: 2})
	b.until(30, "the second record", func(*CardStatOut) bool { return len(b.wlast) == 2 })
	b.in.EvReady = false
	b.respond(AXISlvErr)
	b.respond(0)
	b.until(5, "the DMA_FAULT", func(o *CardStatOut) bool { return o.EvValid })
	addr := uint64(statBase + 3*32)
	assert.Equal(t, cs.EQETypeDMAFault, b.o.EvType)
	assert.Equal(t, uint16(0), b.o.EvQPN)
	assert.Equal(t, uint32(addr), b.o.EvInfo)
	assert.True(t, b.o.EvStop)
	assert.False(t, b.o.FaultValid, "not taken yet")
	assert.False(t, b.o.CplValid)
	b.in.EvReady = true
	o2 := b.step()
	assert.True(t, o2.FaultValid)
	assert.Equal(t, uint16(3), o2.FaultQPN)
	assert.Equal(t, addr, o2.FaultAddr)
	assert.False(t, o2.Fatal, "registered")
	for i := 0; i < 20; i++ {
		o := b.step()
		assert.True(t, o.Fatal)
		assert.False(t, o.CplValid || o.EvValid || o.FaultValid, "the completion behind the fault is not passed on")
	}
	// Updates are still taken; nothing is written.
	b.cmd(cs.QPOpCreate, 4)
	b.cmd(cs.QPOpError, 4)
	for i := 0; i < 30; i++ {
		o := b.step()
		assert.False(t, o.AWValid || o.EvValid)
		assert.True(t, o.Fatal)
	}
	assert.Len(t, b.aw, 2)
	b.in.Reset = true
	b.step()
	b.in.Reset = false
	assert.False(t, b.step().Fatal, "until reset")
}

// Events follow the records before them, one per update: RX_LOST on a
// live QP gives QP_ERROR LLP_LOST and card_tx's record after its status
// write, and keeps ARM_TX for a later TXS_CI doorbell's TX_DATA (an event
// without a write); CLOSE on a QP whose SQ_CI is at SQ_PI gives
// QP_CLOSED at once.
func TestCardStatEvents(t *testing.T) {
	b := newStatTB(t, 64)
	b.cmd(cs.QPOpCreate, 2)
	b.db(cs.DBKindQPDBStream, 2, 1<<cs.QPDBStreamArmTXShift)
	b.tx(CardStatTx{QPN: 2, TXSPI: 100})
	b.until(30, "the record", func(*CardStatOut) bool { return len(b.wlast) == 2 })
	b.db(cs.DBKindQPDBStream, 2, 1<<cs.QPDBStreamArmTXShift|1<<cs.QPDBStreamRXLostShift) // armed again before the TX_DATA is out
	b.until(30, "the record", func(*CardStatOut) bool { return len(b.wlast) == 3 })
	for i := 0; i < 5; i++ {
		assert.False(t, b.step().EvValid, "events wait for their records")
	}
	b.respond(0)
	b.respond(0)
	o := b.wait(5, "TX_DATA", func(o *CardStatOut) bool { return o.EvValid })
	assert.Equal(t, cs.EQETypeTXData, o.EvType)
	assert.Equal(t, uint16(2), o.EvQPN)
	b.in.EndReady = false
	for i := 0; i < 5; i++ {
		assert.False(t, b.step().EvValid, "QP_ERROR waits for its record")
	}
	b.respond(0)
	o = b.wait(5, "QP_ERROR", func(o *CardStatOut) bool { return o.EvValid })
	assert.Equal(t, cs.EQETypeQPError, o.EvType)
	assert.Equal(t, uint32(cs.QPErrLLPLost), o.EvInfo)
	assert.True(t, o.EndValid)
	assert.Equal(t, uint16(2), o.EndQPN)
	assert.True(t, o.EndLost)
	assert.True(t, b.step().EndValid, "held until card_tx takes it")
	b.in.EndReady = true
	b.step()
	o = b.step()
	assert.False(t, o.EvValid || o.EndValid)
	r := b.record(2)
	assert.Equal(t, cs.QPStateError, r.State())
	assert.True(t, r.TXClosed())
	// The arm survived: TXS_CI short of TXS_PI gives TX_DATA, no write.
	b.db(cs.DBKindQPDBTXSCI, 2, 60)
	o = b.wait(5, "TX_DATA", func(o *CardStatOut) bool { return o.EvValid })
	assert.Equal(t, cs.EQETypeTXData, o.EvType)
	assert.Len(t, b.aw, 3)

	b.cmd(cs.QPOpCreate, 8)
	b.until(30, "the record", func(*CardStatOut) bool { return len(b.wlast) == 4 })
	b.respond(0)
	b.cmd(cs.QPOpClose, 8)
	b.until(30, "the record", func(*CardStatOut) bool { return len(b.wlast) == 5 })
	b.respond(0)
	o = b.wait(5, "QP_CLOSED", func(o *CardStatOut) bool { return o.EvValid })
	assert.Equal(t, cs.EQETypeQPClosed, o.EvType)
	r = b.record(4)
	assert.Equal(t, cs.QPStateClosed, r.State())
	assert.True(t, r.TXClosed())
	assert.Equal(t, uint32(0), binary.LittleEndian.Uint32(r[0:]))
}

// The rules of each update on a QP's context, as the card model has them.
func TestCardStatRules(t *testing.T) {
	rts := statCtx{state: cs.QPStateRts}
	for _, tc := range []struct {
		name string
		op   statOp
		x    statCtx
		want statCtx
		res  statResult
	}{
		{"CREATE resets", statOp{kind: statCreate}, statCtx{txsPI: 4, armTX: true, ended: true, state: cs.QPStateError}, rts, statResult{write: true}},
		{"ERROR of a QP in RESET", statOp{kind: statError}, statCtx{}, statCtx{}, statResult{}},
		{"ERROR BAD_DOORBELL", statOp{kind: statError, badDB: true, cut: true}, rts, statCtx{state: cs.QPStateError, txClosed: true},
			statResult{write: true, ev: true, evType: cs.EQETypeQPError, info: uint32(cs.QPErrBadDoorbell), done: true}},
		{"ERROR STREAM_CUT", statOp{kind: statError, cut: true}, statCtx{state: cs.QPStateClosed, txClosed: true}, statCtx{state: cs.QPStateError, txClosed: true},
			statResult{write: true, ev: true, evType: cs.EQETypeQPError, info: uint32(cs.QPErrStreamCut), done: true}},
		{"CLOSE waits for SQ_CI", statOp{kind: statClose}, statCtx{state: cs.QPStateRts, sqPI: 2}, statCtx{state: cs.QPStateClosing, sqPI: 2}, statResult{write: true}},
		{"the record that closes", statOp{kind: statTx, idx: 2, v: 9}, statCtx{state: cs.QPStateClosing, sqPI: 2, armTX: true},
			statCtx{state: cs.QPStateClosed, sqPI: 2, sqCI: 2, txsPI: 9, txClosed: true, armTX: true},
			statResult{write: true, ev: true, evType: cs.EQETypeQPClosed, done: true, closed: true}},
		{"a record while a Read Response is owed", statOp{kind: statTx, idx: 2, v: 9, owed: true}, statCtx{state: cs.QPStateClosing, sqPI: 2},
			statCtx{state: cs.QPStateClosing, sqPI: 2, sqCI: 2, txsPI: 9}, statResult{write: true}},
		{"CLOSE of a QP owing a Read Response", statOp{kind: statClose, owed: true}, statCtx{state: cs.QPStateRts, sqPI: 2, sqCI: 2},
			statCtx{state: cs.QPStateClosing, sqPI: 2, sqCI: 2}, statResult{write: true}},
		{"CLOSE of a QP with nothing left", statOp{kind: statClose}, statCtx{state: cs.QPStateRts, sqPI: 2, sqCI: 2},
			statCtx{state: cs.QPStateClosed, sqPI: 2, sqCI: 2, txClosed: true}, statResult{write: true, ev: true, evType: cs.EQETypeQPClosed, done: true, closed: true}},
		{"CLOSE of a closing QP", statOp{kind: statClose}, statCtx{state: cs.QPStateClosing}, statCtx{state: cs.QPStateClosing}, statResult{}},
		{"DESTROY of an RTS QP", statOp{kind: statDestroy}, rts, rts, statResult{}},
		{"DESTROY", statOp{kind: statDestroy}, statCtx{state: cs.QPStateError, txClosed: true, txsPI: 3}, statCtx{txsPI: 3}, statResult{}},
		{"Terminate record", statOp{kind: statTx, term: true, v: 5}, statCtx{state: cs.QPStateError, armTX: true},
			statCtx{state: cs.QPStateError, txClosed: true, txsPI: 5}, statResult{write: true, ev: true, evType: cs.EQETypeTXData, done: true}},
		{"failed FPDU", statOp{kind: statRx, term: true, v: 7}, statCtx{state: cs.QPStateRts, rxFin: true, rxsPI: 7, armRX: true},
			statCtx{state: cs.QPStateError, rxFin: true, rxsPI: 7, rxsCI: 7}, statResult{write: true, ev: true, evType: cs.EQETypeRXSpace, done: true}},
		{"stream end before RX_SPACE", statOp{kind: statRx, v: 7}, statCtx{state: cs.QPStateRts, rxFin: true, rxsPI: 7, armRX: true},
			statCtx{state: cs.QPStateRts, rxFin: true, rxsPI: 7, rxsCI: 7, armRX: true, ended: true},
			statResult{write: true, ev: true, evType: cs.EQETypeStreamEnd, end: true}},
		{"stream end once", statOp{kind: statRXSPI, v: 7}, statCtx{state: cs.QPStateRts, rxFin: true, rxsCI: 7, ended: true},
			statCtx{state: cs.QPStateRts, rxFin: true, rxsCI: 7, rxsPI: 7, ended: true}, statResult{}},
		{"RX_FIN", statOp{kind: statStream, v: 1}, statCtx{state: cs.QPStateClosed, rxsCI: 7, rxsPI: 7},
			statCtx{state: cs.QPStateClosed, rxsCI: 7, rxsPI: 7, rxFin: true, ended: true}, statResult{ev: true, evType: cs.EQETypeStreamEnd, end: true}},
		{"RX_LOST of a QP in error", statOp{kind: statStream, v: 2 | 1<<8}, statCtx{state: cs.QPStateError, txsPI: 1},
			statCtx{state: cs.QPStateError, txsPI: 1}, statResult{ev: true, evType: cs.EQETypeTXData}},
		{"PUSH", statOp{kind: statPush}, statCtx{sqPI: 0xffff}, statCtx{}, statResult{}},
		{"receive completion", statOp{kind: statRc, idx: 4}, rts, statCtx{state: cs.QPStateRts, rqCI: 4}, statResult{write: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, r := statUpdate(&tc.op, tc.x)
			assert.Equal(t, tc.want, n)
			assert.Equal(t, tc.res, r)
		})
	}
}

func TestCardStatWidth(t *testing.T) {
	_, err := NewCardStat(DMAWrConfig{Width: 128, IDBits: 4, Bursts: 32, TagBits: 8})
	assert.ErrorIs(t, err, ErrConfig)
}

// The queue holds CardStatPend entries: with that many status writes
// unanswered the next update waits. A response frees the head's entry
// and the update is taken three cycles after it (dma_wr's completion, the
// count, the pop); a faulted one stops the card, which then takes the
// update as well, at the same cycle.
func TestCardStatQueueFull(t *testing.T) {
	for _, resp := range []uint8{0, AXISlvErr} {
		b := newStatTB(t, 64)
		for n := uint16(1); n <= CardStatPend; n++ {
			b.cmd(cs.QPOpCreate, n)
		}
		b.in.DBValid, b.in.DBKind, b.in.DBIndex, b.in.DBValue = true, cs.DBKindQPDBTXSCI, 1, 1
		for i := 0; i < 60; i++ {
			o := b.step()
			require.False(t, o.DBReady, "the queue is full")
			require.True(t, o.Busy)
		}
		require.Equal(t, CardStatPend, b.bursts, "every record written")
		at := b.respond(resp)
		taken := b.until(10, "the doorbell", func(o *CardStatOut) bool { return o.DBReady })
		assert.Equal(t, at+3, taken, "response %d", resp)
		assert.Equal(t, resp != 0, b.o.Fatal)
	}
}
