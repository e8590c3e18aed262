package cycle

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// cqWrite is one DMA write card_cq made, as the slave saw it.
type cqWrite struct {
	addr   uint64
	data   []byte
	awAt   int // cycle its address was taken
	respAt int // cycle its response was taken
}

// cqBench runs the model against an AXI slave that is always ready and
// answers each write lat cycles after its last beat, with SLVERR for the
// writes (counted from 0) in bad.
type cqBench struct {
	t      *testing.T
	m      *CardCQ
	in     CardCQIn
	out    CardCQOut
	cycle  int
	lat    int
	bad    map[int]bool
	writes []*cqWrite
	aw     []*cqWrite // addressed, data not complete
	wBeat  int
	resp   []*cqWrite // complete, response pending
	due    []int
}

func newCQBench(t *testing.T, width int) *cqBench {
	m, err := NewCardCQ(CardCQConfig{Width: width, Sources: 2})
	require.NoError(t, err)
	b := &cqBench{t: t, m: m, lat: 4, bad: map[int]bool{}}
	b.in.AWReady, b.in.WReady, b.in.IRQReady, b.in.OverrunReady = true, true, true, true
	return b
}

// step runs one cycle.
func (b *cqBench) step() *CardCQOut {
	b.cycle++
	in, out := &b.in, &b.out
	in.BValid = len(b.due) > 0 && b.due[0] <= b.cycle
	in.BResp = 0
	if in.BValid && b.bad[b.resp[0].index(b)] {
		in.BResp = 2
	}
	b.m.Step(in, out)
	L := b.m.lanes
	if out.AWValid && in.AWReady {
		b.aw = append(b.aw, &cqWrite{addr: out.AWAddr, awAt: b.cycle})
	}
	if out.WValid && in.WReady {
		w := b.aw[0]
		for i := 0; i < L; i++ {
			if out.WStrb>>i&1 != 0 {
				if len(w.data) == 0 {
					w.addr += uint64(b.wBeat*L + i)
				}
				w.data = append(w.data, out.WData[i])
			}
		}
		b.wBeat++
		if out.WLast {
			b.aw, b.wBeat = b.aw[1:], 0
			b.writes = append(b.writes, w)
			b.resp = append(b.resp, w)
			b.due = append(b.due, b.cycle+b.lat)
		}
	}
	if in.BValid && out.BReady {
		b.resp[0].respAt = b.cycle
		b.resp, b.due = b.resp[1:], b.due[1:]
	}
	return out
}

func (w *cqWrite) index(b *cqBench) int {
	for i, x := range b.writes {
		if x == w {
			return i
		}
	}
	return -1
}

// until steps until cond holds on an output (at most limit cycles) and
// returns that cycle.
func (b *cqBench) until(limit int, what string, cond func(*CardCQOut) bool) int {
	b.t.Helper()
	for i := 0; i < limit; i++ {
		if cond(b.step()) {
			return b.cycle
		}
	}
	b.t.Fatalf("%s: not within %d cycles", what, limit)
	return 0
}

// idle runs n cycles.
func (b *cqBench) idle(n int) {
	for i := 0; i < n; i++ {
		b.step()
	}
}

// start waits for the context clearing, enables a 16-entry EQ at eqAt with
// vector 7 and creates CQ 3 (2 entries) at cqAt.
const (
	eqAt = 0x8000_0000
	cqAt = 0x1_0000
)

func (b *cqBench) start() {
	b.t.Helper()
	n := b.until(2000, "init_done", func(o *CardCQOut) bool { return o.InitDone })
	assert.Equal(b.t, CardCQClearCycles+1, n, "init_done rises after the clearing")
	b.in.EQCfgWrite = true
	b.step()
	b.in.EQCfgWrite, b.in.EQBase, b.in.EQLog, b.in.EQVector, b.in.EQEnable = false, eqAt, 4, 7, true
	b.command(cs.CQOpCreate, 3, cqAt, 1)
}

func (b *cqBench) command(op cs.CQOp, n uint16, base uint64, lg uint8) {
	b.t.Helper()
	b.in.CmdValid, b.in.CmdOp, b.in.CmdNum, b.in.CmdBase, b.in.CmdLog = true, uint8(op), n, base, lg
	b.until(1000, "CQ_CMD taken", func(o *CardCQOut) bool { return o.CmdReady })
	b.in.CmdValid = false
}

// complete offers a completion on engine 1's port until it is taken and
// returns the cycle.
func (b *cqBench) complete(cq uint16, wrid uint64) int {
	b.t.Helper()
	b.in.Cpl[1] = CardCQCpl{Valid: true, CQ: cq, QPN: 0x1234, WRID: wrid, ByteLen: 100, Opcode: uint8(cs.WCOpcodeRecv), InvSTag: 0xabcd}
	n := b.until(20, "completion taken", func(o *CardCQOut) bool { return o.CplReady[1] })
	b.in.Cpl[1].Valid = false
	return n
}

func (b *cqBench) doorbell(cq uint16, v uint32) {
	b.t.Helper()
	b.in.CQDBValid, b.in.CQDBIndex, b.in.CQDBValue = true, cq, v
	b.until(20, "CQ doorbell taken", func(o *CardCQOut) bool { return o.CQDBReady })
	b.in.CQDBValid = false
}

func (b *cqBench) eqDoorbell(ci uint32, arm bool) {
	b.t.Helper()
	b.in.EQDBValid, b.in.EQDBCI, b.in.EQDBArm = true, ci, arm
	b.until(20, "EQ doorbell taken", func(o *CardCQOut) bool { return o.EQDBReady })
	b.in.EQDBValid = false
}

func (b *cqBench) event(typ cs.EQEType, obj uint32, stop bool) int {
	b.t.Helper()
	b.in.Ev[0] = CardCQEv{Valid: true, Type: uint8(typ), Obj: obj, Info: 0x55, Stop: stop}
	n := b.until(20, "event taken", func(o *CardCQOut) bool { return o.EvReady[0] })
	b.in.Ev[0].Valid = false
	return n
}

func TestCardCQConfig(t *testing.T) {
	for _, cfg := range []CardCQConfig{{64, 0}, {64, 5}, {48, 2}, {1024, 2}} {
		_, err := NewCardCQ(cfg)
		assert.True(t, errors.Is(err, ErrConfig), "%+v", cfg)
	}
}

// A CQE's write, 6 cycles after its completion was taken, with owner bit
// 1 on the ring's first pass and 0 on its second; the third completion on
// a 2-entry CQ overruns (m_overrun and a CQ_OVERRUN EQE), the fourth is
// lost without a word, and a doorbell that frees an entry clears the
// overrun.
func TestCardCQCompletions(t *testing.T) {
	for _, w := range []int{64, 512} {
		b := newCQBench(t, w)
		assert.False(t, b.step().InitDone)
		b.in.Cpl[1] = CardCQCpl{Valid: true, CQ: 3}
		assert.False(t, b.step().CplReady[1], "nothing is taken while the contexts are cleared")
		b.in.Cpl[1].Valid = false
		b.start()
		b.idle(4)
		assert.NotZero(t, b.out.Tight[0]&(1<<3), "a 2-entry CQ is tight")

		took := b.complete(3, 0x1122334455667788)
		assert.False(t, b.out.CplBusy, "cpl_busy rises the cycle after the take")
		for i := 1; i <= 3; i++ {
			assert.True(t, b.step().CplBusy, "stages B to D, cycle %d", i)
		}
		assert.False(t, b.step().CplBusy)
		aw := b.until(20, "the CQE's address", func(o *CardCQOut) bool { return o.AWValid })
		assert.Equal(t, took+6, aw, "the address 6 cycles after the take")
		wantLen := uint8(3)
		if w == 512 {
			wantLen = 0
		}
		assert.Equal(t, wantLen, b.out.AWLen)
		assert.Equal(t, uint64(cqAt), b.out.AWAddr)
		b.idle(16)
		require.Len(t, b.writes, 1)
		cqe := cs.CQE(b.writes[0].data)
		require.Len(t, b.writes[0].data, cs.CQESize)
		assert.Equal(t, uint64(cqAt), b.writes[0].addr)
		assert.Equal(t, uint64(0x1122334455667788), cqe.WRID())
		assert.Equal(t, uint16(0x1234), cqe.QPN())
		assert.Equal(t, uint32(0xabcd), cqe.InvSTag())
		assert.Equal(t, byte(0x80), b.writes[0].data[31], "the owner bit is the last bit, 1 on the first pass")

		b.complete(3, 2)
		b.idle(16)
		require.Len(t, b.writes, 2)
		assert.Equal(t, uint64(cqAt+32), b.writes[1].addr)
		assert.True(t, cs.CQE(b.writes[1].data).Owner())

		// Full: the overrun is reported once.
		b.complete(3, 3)
		b.until(10, "m_overrun", func(o *CardCQOut) bool { return o.OverrunValid })
		assert.Equal(t, uint16(3), b.out.OverrunCQ)
		assert.False(t, b.step().OverrunValid, "taken")
		b.idle(16)
		require.Len(t, b.writes, 3)
		eqe := cs.EQE(b.writes[2].data)
		assert.Equal(t, uint64(eqAt), b.writes[2].addr)
		assert.Equal(t, cs.EQETypeCQOverrun, eqe.Type())
		assert.Equal(t, uint32(3), eqe.Obj())
		assert.True(t, eqe.Owner())
		b.complete(3, 4)
		for i := 0; i < 20; i++ {
			assert.False(t, b.step().OverrunValid, "reported once")
		}
		assert.Len(t, b.writes, 3, "the completion on a full CQ is lost")

		// A doorbell frees an entry: the next CQE takes slot 0, owner 0.
		b.doorbell(3, 1)
		b.complete(3, 5)
		b.idle(20)
		require.Len(t, b.writes, 4)
		assert.Equal(t, uint64(cqAt), b.writes[3].addr)
		assert.False(t, cs.CQE(b.writes[3].data).Owner(), "second pass")
		assert.Equal(t, uint64(5), cs.CQE(b.writes[3].data).WRID())
		assert.Zero(t, b.out.EventsLost)
	}
}

// An armed CQ writes CQ_NOTIFY after the CQE; the interrupt of an armed EQ
// rises 3 cycles after the EQE's write response is taken (dma_wr's
// completion, the count of EQEs written, irq_valid), and the next one no
// sooner than IRQ_MODERATION cycles after the previous one was taken: two
// events due meanwhile make one.
func TestCardCQInterrupt(t *testing.T) {
	b := newCQBench(t, 64)
	b.lat = 20
	b.start()
	b.in.IRQModeration = 100
	b.eqDoorbell(0, true)
	b.doorbell(3, 1<<cs.CQDBCIArmShift)
	b.complete(3, 9)
	b.idle(20)
	require.Len(t, b.writes, 2, "the CQE, then its CQ_NOTIFY")
	assert.Equal(t, uint64(cqAt), b.writes[0].addr)
	assert.Equal(t, cs.EQETypeCQNotify, cs.EQE(b.writes[1].data).Type())
	up := b.until(40, "irq_valid", func(o *CardCQOut) bool { return o.IRQValid })
	require.NotZero(t, b.writes[1].respAt, "no interrupt before the EQE's response")
	assert.Equal(t, b.writes[1].respAt+3, up)
	assert.Equal(t, uint8(7), b.out.IRQVector)
	taken := up // irq_ready is high

	// Two interrupts due within the moderation make one.
	for i := uint32(1); i <= 2; i++ {
		b.eqDoorbell(i, true)
		b.event(cs.EQETypeQPError, i, false)
		b.idle(30)
	}
	assert.False(t, b.out.IRQValid)
	up = b.until(200, "moderated irq_valid", func(o *CardCQOut) bool { return o.IRQValid })
	assert.Equal(t, taken+102, up, "IRQ_MODERATION (100) counted from the cycle after the take")
	for i := 0; i < 300; i++ {
		assert.False(t, b.step().IRQValid, "one interrupt for both")
	}
	// Arming an EQ that holds entries past CI raises it at once (once the
	// EQEs written so far have their responses).
	b.eqDoorbell(2, true)
	b.until(20, "irq_valid of the arming", func(o *CardCQOut) bool { return o.IRQValid })
	assert.Zero(t, b.out.EventsLost)
}

// Error responses: a CQE's puts its CQ in error (stage A takes the fault
// from its queue, stage D acts): m_fault_* name it the cycle after, with
// its QP, CQ_ERROR is written (INFO the CQE's address) and the overrun
// record says DMA; later completions on that CQ are lost. An EQE's stops
// the card (fatal: nothing written after), as does an event with stop.
func TestCardCQFaults(t *testing.T) {
	b := newCQBench(t, 512)
	b.bad[0], b.bad[2] = true, true
	b.start()
	b.complete(3, 1)
	ov := false
	f := b.until(30, "m_fault", func(o *CardCQOut) bool {
		ov = ov || o.OverrunValid && o.OverrunDMA && o.OverrunCQ == 3
		return o.FaultValid
	})
	assert.Equal(t, b.writes[0].respAt+7, f, "response, fault RAM, the queue, stages A to D, m_fault")
	assert.Equal(t, uint64(cqAt), b.out.FaultAddr)
	assert.Equal(t, uint16(0x1234), b.out.FaultQPN)
	assert.False(t, b.out.FaultEQE)
	assert.True(t, ov || b.out.OverrunValid && b.out.OverrunDMA, "the overrun record of a CQ in error")
	assert.False(t, b.step().FaultValid, "a pulse")
	assert.False(t, b.out.Fatal)
	b.idle(10)
	require.Len(t, b.writes, 2)
	e := cs.EQE(b.writes[1].data)
	assert.Equal(t, cs.EQETypeCQError, e.Type())
	assert.Equal(t, uint32(3), e.Obj())
	assert.Equal(t, uint32(cqAt), e.Info())
	b.complete(3, 2) // lost: the CQ is in error
	b.event(cs.EQETypeQPError, 5, false)
	f = b.until(30, "the EQE's fault", func(o *CardCQOut) bool { return o.FaultValid })
	require.Len(t, b.writes, 3)
	assert.Equal(t, uint64(eqAt+cs.EQESize), b.out.FaultAddr, "the EQE after CQ_ERROR")
	assert.Zero(t, b.out.FaultQPN)
	assert.True(t, b.out.FaultEQE)
	assert.True(t, b.out.Fatal, "fatal with the fault")
	b.doorbell(3, 2)
	b.complete(3, 3)
	b.event(cs.EQETypeQPError, 6, false)
	b.idle(30)
	assert.Len(t, b.writes, 3, "a stopped card writes nothing")
	assert.Zero(t, b.out.EventsLost, "nor counts events lost")

	// A stopping event is written, then the card stops.
	b = newCQBench(t, 64)
	b.start()
	b.event(cs.EQETypeDMAFault, 0, true)
	b.step()
	b.step()
	assert.False(t, b.out.Fatal)
	b.step()
	assert.True(t, b.step().Fatal, "fatal once stage D took the event")
	b.complete(3, 1)
	b.idle(30)
	require.Len(t, b.writes, 1)
	assert.Equal(t, cs.EQETypeDMAFault, cs.EQE(b.writes[0].data).Type())
}

// An interrupt due that moderation holds while 300 more EQEs are written
// rises once moderation ends: the count of EQEs written is past the one it
// waits for however far past (the RTL compares the counts on 9 bits and
// keeps it: hw/sim's TestCardCQCycleIRQWrap).
func TestCardCQInterruptAfterManyEQEs(t *testing.T) {
	b := newCQBench(t, 64)
	b.start()
	b.in.EQCfgWrite = true // 1024 entries
	b.step()
	b.in.EQCfgWrite, b.in.EQLog = false, 10
	b.idle(8)
	b.in.IRQModeration = 3000
	b.eqDoorbell(0, true)
	b.event(cs.EQETypeQPError, 1, false)
	taken := b.until(40, "irq_valid", func(o *CardCQOut) bool { return o.IRQValid })
	b.eqDoorbell(1, true)
	for i := 0; i < 300; i++ {
		b.event(cs.EQETypeQPError, uint32(i), false)
	}
	b.idle(40)
	require.Equal(t, 301, len(b.writes), "every EQE written")
	assert.Less(t, b.cycle, taken+3000, "within the moderation")
	assert.False(t, b.out.IRQValid)
	up := b.until(3000, "the held interrupt", func(o *CardCQOut) bool { return o.IRQValid })
	assert.Equal(t, taken+3002, up)
}

// A CQ command waits until no CQE can still fault, so that a fault never
// reaches a CQ created again under its number: CQ 3's CQE faults 200
// cycles after its write; DESTROY waits for that, the fault puts the old
// CQ 3 in error (CQ_ERROR) first, and the CQ 3 created after takes
// completions from its first slot.
func TestCardCQCommandAfterFault(t *testing.T) {
	b := newCQBench(t, 64)
	b.bad[0] = true
	b.lat = 200
	b.start()
	b.complete(3, 1)
	b.command(cs.CQOpDestroy, 3, 0, 0)
	require.NotEmpty(t, b.writes)
	require.NotZero(t, b.writes[0].respAt, "DESTROY was taken before the CQE's response")
	assert.Greater(t, b.cycle, b.writes[0].respAt)
	b.command(cs.CQOpCreate, 3, cqAt, 1)
	b.complete(3, 2)
	b.idle(250)
	require.Len(t, b.writes, 3, "the CQE, CQ_ERROR, the new CQ's CQE")
	assert.Equal(t, cs.EQETypeCQError, cs.EQE(b.writes[1].data).Type())
	assert.Equal(t, uint64(cqAt), b.writes[2].addr, "the new CQ's first slot")
	assert.Equal(t, uint64(2), cs.CQE(b.writes[2].data).WRID())
}
