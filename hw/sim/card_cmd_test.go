package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// card_cmd matches its cycle model (golden/cycle's CardCmd) on every
// output of every cycle: commands offered as card_regs offers them on a
// few QP and CQ numbers, with contexts out of range, random hand-on
// delays, QPs reported done at random, a stopped card now and then, EQ_CFG
// writes and resets. Every CMD_WHY is given.
func TestCardCmdCosim(t *testing.T) {
	b, err := CardCmdBench()
	require.NoError(t, err)
	var drv *cardCmdDriver
	nd := b.NewDriver
	b.NewDriver = func(seed uint64) Driver { drv = nd(seed).(*cardCmdDriver); return drv }
	p, err := lookupCardCmdPorts(b.Layout)
	require.NoError(t, err)
	v := &cardCmdVerdicts{p: p, whys: map[cs.CmdWhy]uint64{}}
	b.Tap = v.tap
	seed := seedFor(t.Name())
	st, err := b.Run(seed, *cosimCycles)
	require.NoError(t, err, "seed %d (rerun with -cosim.seed=%d)", seed, seed)
	require.Equal(t, *cosimCycles, st.Cycles)
	n := *cosimCycles / 1000
	assert.Greater(t, drv.Commands, 20*n, "commands answered")
	assert.Greater(t, drv.Stopped, n/10, "commands answered on a stopped card")
	assert.Greater(t, drv.EQWrites, 5*n, "EQ_CFG writes")
	for w := cs.CmdWhyOk; w <= cs.CmdWhyCQBusy; w++ {
		assert.Greater(t, v.whys[w], n/20, "verdicts %v", w)
	}
	t.Logf("card_cmd: %d cycles, %.2f M cycles/s; %d commands (%d on a stopped card), %d EQ_CFG writes, %d QPs reported done; verdicts %v",
		st.Cycles, st.CyclesPerSecond()/1e6, drv.Commands, drv.Stopped, drv.EQWrites, drv.Dones, v.whys)
}

// cardCmdVerdicts counts CMD_STATUS.WHY each time SEQ moves.
type cardCmdVerdicts struct {
	p    cardCmdPorts
	seq  uint64
	whys map[cs.CmdWhy]uint64
}

func (v *cardCmdVerdicts) tap(_, out []uint32) {
	if s := v.p.seq.Get(out); s != v.seq {
		v.seq = s
		v.whys[cs.CmdWhy(v.p.why.Get(out))]++
	}
}
