package cycle

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// goodQP is a QP_CMD CREATE that every check passes, given CQs 1 and 2.
func goodQP() CardCmdIn {
	return CardCmdIn{QPValid: true, QPOp: cs.QPOpCreate, QPN: 5, SQBase: 1 << 20, RQBase: 2 << 20, TXSBase: 1 << 24, RXSBase: 2 << 24,
		SQLog: 4, RQLog: 4, TXSLog: 16, RXSLog: 16, SendCQ: 1, RecvCQ: 2, MULPDU: 1448, ORD: 4, IRD: 4}
}

// Every verdict of a QP command, in the card model's order of checks.
func TestCardCmdQPVerdicts(t *testing.T) {
	live := cqUsers{exists: true}
	for _, tc := range []struct {
		name  string
		edit  func(*CardCmdIn)
		class uint8
		want  cs.CmdWhy
	}{
		{"create", func(*CardCmdIn) {}, qpNone, cs.CmdWhyOk},
		{"QP 0", func(x *CardCmdIn) { x.QPN = 0 }, qpNone, cs.CmdWhyBadNumber},
		{"QP past MAX_QP", func(x *CardCmdIn) { x.QPN = cs.MaxQP }, qpNone, cs.CmdWhyBadNumber},
		{"exists", func(*CardCmdIn) {}, qpDone, cs.CmdWhyExists},
		{"SQ too deep", func(x *CardCmdIn) { x.SQLog = cs.MaxQueueLog + 1 }, qpNone, cs.CmdWhyBadSize},
		{"RQ too deep", func(x *CardCmdIn) { x.RQLog = cs.MaxQueueLog + 1 }, qpNone, cs.CmdWhyBadSize},
		{"TXS too small", func(x *CardCmdIn) { x.TXSLog = cs.MinRingLog - 1 }, qpNone, cs.CmdWhyBadSize},
		{"RXS too large", func(x *CardCmdIn) { x.RXSLog = cs.MaxRingLog + 1 }, qpNone, cs.CmdWhyBadSize},
		{"size before alignment", func(x *CardCmdIn) { x.RXSLog, x.SQBase = 31, 64 }, qpNone, cs.CmdWhyBadSize},
		{"SQ base", func(x *CardCmdIn) { x.SQBase += 64 << 3 }, qpNone, cs.CmdWhyBadAlign},
		{"RQ base", func(x *CardCmdIn) { x.RQBase += 1 }, qpNone, cs.CmdWhyBadAlign},
		{"TXS base", func(x *CardCmdIn) { x.TXSBase += 1 << 15 }, qpNone, cs.CmdWhyBadAlign},
		{"RXS base", func(x *CardCmdIn) { x.RXSBase += 4096 }, qpNone, cs.CmdWhyBadAlign},
		{"send CQ past MAX_CQ", func(x *CardCmdIn) { x.SendCQ = cs.MaxCQ }, qpNone, cs.CmdWhyNoCQ},
		{"MULPDU below 128", func(x *CardCmdIn) { x.MULPDU = 127 }, qpNone, cs.CmdWhyBadMulpdu},
		{"MULPDU above 64768", func(x *CardCmdIn) { x.MULPDU, x.TXSLog = 64769, 20 }, qpNone, cs.CmdWhyBadMulpdu},
		{"MULPDU above half the ring", func(x *CardCmdIn) { x.MULPDU, x.TXSLog = 2049, 12 }, qpNone, cs.CmdWhyBadMulpdu},
		{"MULPDU at half the ring", func(x *CardCmdIn) { x.MULPDU, x.TXSLog = 2048, 12 }, qpNone, cs.CmdWhyOk},
		{"ORD 0", func(x *CardCmdIn) { x.ORD = 0 }, qpNone, cs.CmdWhyBadRD},
		{"IRD past MAX_RD", func(x *CardCmdIn) { x.IRD = cs.MaxRd + 1 }, qpNone, cs.CmdWhyBadRD},
		{"unknown op", func(x *CardCmdIn) { x.QPOp = 9 }, qpActive, cs.CmdWhyBadOp},
		{"close of none", func(x *CardCmdIn) { x.QPOp = cs.QPOpClose }, qpNone, cs.CmdWhyNoObject},
		{"error of a done QP", func(x *CardCmdIn) { x.QPOp = cs.QPOpError }, qpDone, cs.CmdWhyOk},
		{"destroy of an active QP", func(x *CardCmdIn) { x.QPOp = cs.QPOpDestroy }, qpActive, cs.CmdWhyBadState},
		{"destroy of a done QP", func(x *CardCmdIn) { x.QPOp = cs.QPOpDestroy }, qpDone, cs.CmdWhyOk},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := goodQP()
			tc.edit(&in)
			assert.Equal(t, tc.want, qpVerdict(&in, tc.class, live, live))
		})
	}
	in := goodQP()
	assert.Equal(t, cs.CmdWhyNoCQ, qpVerdict(&in, qpNone, live, cqUsers{}), "receive CQ missing")
}

// Every verdict of a CQ command and of an EQ_CFG write.
func TestCardCmdCQAndEQVerdicts(t *testing.T) {
	cq := func(op cs.CQOp, n uint16, lg uint8, base uint64) *CardCmdIn {
		return &CardCmdIn{CQValid: true, CQOp: op, CQN: n, CQLog: lg, CQBase: base}
	}
	none, idle, busy := cqUsers{}, cqUsers{exists: true}, cqUsers{exists: true, users: 2}
	assert.Equal(t, cs.CmdWhyOk, cqVerdict(cq(cs.CQOpCreate, 3, 6, 1<<11), none))
	assert.Equal(t, cs.CmdWhyBadNumber, cqVerdict(cq(cs.CQOpCreate, cs.MaxCQ, 6, 0), none))
	assert.Equal(t, cs.CmdWhyExists, cqVerdict(cq(cs.CQOpCreate, 3, 6, 0), idle))
	assert.Equal(t, cs.CmdWhyBadSize, cqVerdict(cq(cs.CQOpCreate, 3, cs.MaxQueueLog+1, 0), none))
	assert.Equal(t, cs.CmdWhyBadAlign, cqVerdict(cq(cs.CQOpCreate, 3, 6, 1<<10), none))
	assert.Equal(t, cs.CmdWhyOk, cqVerdict(cq(cs.CQOpDestroy, 3, 0, 0), idle))
	assert.Equal(t, cs.CmdWhyNoObject, cqVerdict(cq(cs.CQOpDestroy, 3, 0, 0), none))
	assert.Equal(t, cs.CmdWhyCQBusy, cqVerdict(cq(cs.CQOpDestroy, 3, 0, 0), busy))
	assert.Equal(t, cs.CmdWhyBadOp, cqVerdict(cq(7, 3, 0, 0), idle))

	eq := func(en bool, lg uint8, base uint64) *CardCmdIn {
		return &CardCmdIn{EQEnable: en, EQLog: lg, EQBase: base}
	}
	assert.Equal(t, cs.CmdWhyOk, eqVerdict(eq(true, 8, 1<<12)))
	assert.Equal(t, cs.CmdWhyOk, eqVerdict(eq(false, 31, 3)), "a disabled EQ is not checked")
	assert.Equal(t, cs.CmdWhyBadSize, eqVerdict(eq(true, cs.MaxQueueLog+1, 0)))
	assert.Equal(t, cs.CmdWhyBadAlign, eqVerdict(eq(true, 8, 1<<11)))
}

// run steps c with in until cond holds on an output, at most limit cycles;
// it returns that output and the cycles taken.
func run(t *testing.T, c *CardCmd, in CardCmdIn, limit int, cond func(CardCmdOut) bool) (CardCmdOut, int) {
	t.Helper()
	for i := 1; i <= limit; i++ {
		if o := c.Step(in); cond(o) {
			return o, i
		}
	}
	t.Fatalf("no such output within %d cycles", limit)
	return CardCmdOut{}, 0
}

// The timing contract: the tables are cleared for 1024 cycles after
// reset; a CQ command is answered in its fourth cycle, a QP command in its
// fifth, each once taken where it is handed on; CMD_STATUS moves the cycle
// after; a QP whose report of ERROR comes in its command's take cycle
// counts as done (DESTROY taken).
func TestCardCmdTiming(t *testing.T) {
	c := NewCardCmd()
	_, n := run(t, c, CardCmdIn{}, 2000, func(o CardCmdOut) bool { return o.InitDone })
	assert.Equal(t, CardCmdClearCycles+1, n, "init_done rises after the clear")

	for _, cqn := range []uint16{1, 2} {
		in := CardCmdIn{CQValid: true, CQOp: cs.CQOpCreate, CQN: cqn, CQLog: 4, CQTaken: true}
		o, n := run(t, c, in, 20, func(o CardCmdOut) bool { return o.CQReady })
		assert.True(t, o.CQHandOn, "handed on to card_cq")
		assert.Equal(t, 4, n, "a CQ command's answer")
		o = c.Step(CardCmdIn{})
		assert.Equal(t, cs.CmdWhyOk, o.Why)
		assert.Equal(t, cqn, o.Seq)
	}
	// Held back by the engines: answered once they take it.
	in := goodQP()
	o, n := run(t, c, in, 20, func(o CardCmdOut) bool { return o.QPHandOn })
	assert.Equal(t, 5, n, "a QP command is handed on in its fifth cycle")
	assert.False(t, o.QPReady)
	in.QPTaken = true
	o = c.Step(in)
	require.True(t, o.QPReady)
	for i := 0; i < 8; i++ { // the class and the CQs' users written
		c.Step(CardCmdIn{})
	}
	// DESTROY of the active QP is refused ...
	in = CardCmdIn{QPValid: true, QPOp: cs.QPOpDestroy, QPN: 5, QPTaken: true}
	run(t, c, in, 20, func(o CardCmdOut) bool { return o.QPReady })
	assert.Equal(t, cs.CmdWhyBadState, c.Step(CardCmdIn{}).Why)
	// ... and taken when its ERROR report comes in the take's own cycle.
	in.DoneValid, in.DoneQPN = true, 5
	c.Step(in)
	in.DoneValid = false
	o, _ = run(t, c, in, 20, func(o CardCmdOut) bool { return o.QPReady })
	assert.True(t, o.QPHandOn)
	for i := 0; i < 8; i++ {
		c.Step(CardCmdIn{})
	}
	// The CQs have no user left: DESTROY of CQ 1 is taken.
	o, _ = run(t, c, CardCmdIn{CQValid: true, CQOp: cs.CQOpDestroy, CQN: 1, CQTaken: true}, 20, func(o CardCmdOut) bool { return o.CQReady })
	assert.True(t, o.CQHandOn)
	assert.Equal(t, cs.CmdWhyOk, c.Step(CardCmdIn{}).Why)
}
