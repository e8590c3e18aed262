//go:build cosim

package sim

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/host/driver/cardmodel"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// command writes a command register of both cards, runs the RTL card
// until it has decided it (CMD_STATUS.SEQ as the model's) and checks that
// both give the verdict want, in CMD_STATUS and, for the model, in its
// error.
func (b *wcBench) command(name string, off, v uint32, want cs.CmdWhy) {
	b.t.Helper()
	merr := b.model.Write32(off, v)
	if want == cs.CmdWhyOk {
		require.NoError(b.t, merr, "seed %d %s: the model refused it", b.seed, name)
	} else {
		var re *cardmodel.RegError
		require.True(b.t, errors.As(merr, &re) && errors.Is(merr, cardmodel.ErrRefused), "seed %d %s: the model took it (%v)", b.seed, name, merr)
		require.Equal(b.t, want, re.Code, "seed %d %s: the model's reason (%v)", b.seed, name, merr)
	}
	require.NoError(b.t, b.rtl.RegWrite(off, v), "seed %d %s: the RTL's write response", b.seed, name)
	ms, err := b.model.Read32(cs.CmdStatus)
	require.NoError(b.t, err)
	var rs uint32
	require.NoError(b.t, b.rtl.RunUntil(func() bool {
		rs, err = b.rtl.RegRead(cs.CmdStatus)
		require.NoError(b.t, err)
		return uint16(rs) == uint16(ms)
	}, 10_000), "seed %d %s: the RTL did not decide it (CMD_STATUS %#x, the model's %#x)", b.seed, name, rs, ms)
	require.Equal(b.t, ms, rs, "seed %d %s: CMD_STATUS: the RTL's WHY %v, the model's %v", b.seed, name,
		cs.CmdWhy(rs>>cs.CmdStatusWhyShift), cs.CmdWhy(ms>>cs.CmdStatusWhyShift))
	require.Equal(b.t, want, cs.CmdWhy(rs>>cs.CmdStatusWhyShift&cs.CmdStatusWhyMask), "seed %d %s: WHY", b.seed, name)
	require.Equal(b.t, want != cs.CmdWhyOk, rs>>cs.CmdStatusRefusedShift&1 != 0, "seed %d %s: REFUSED", b.seed, name)
}

// TestCardCosimCommands gives both cards, after some traffic, every kind
// of command the card model refuses (each CMD_WHY, in the model's order of
// checks) and the commands around them that it takes: card_cmd must give
// the same verdict in CMD_STATUS, and a refused command must change
// nothing (the traffic after them, compared as in every whole-card run,
// and a QP and CQ created, used, put in error and destroyed).
func TestCardCosimCommands(t *testing.T) {
	for _, w := range gen.CardTopWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			b := newWCBench(t, w, seed, wcTiming, 2)
			b.round(0)
			live := b.qps[0]
			free := uint32(1)
			for slices.ContainsFunc(b.qps, func(q *wcQP) bool { return q.n == free }) {
				free++
			}
			// A context that CREATE takes, for QP free; each row changes
			// one field.
			stage := func(qpn uint32, change func(map[uint32]uint32)) {
				r := map[uint32]uint32{
					cs.QPNum: qpn, cs.QPPD: 7,
					cs.QPSQBaseLo: uint32(wcSQ + uint64(qpn)<<16), cs.QPSQBaseHi: 0,
					cs.QPRQBaseLo: 0x7000_0000, cs.QPRQBaseHi: 0,
					cs.QPTXSBaseLo: uint32(wcTXS + uint64(qpn)<<16), cs.QPTXSBaseHi: 0,
					cs.QPRXSBaseLo: uint32(wcRXS + uint64(qpn)<<16), cs.QPRXSBaseHi: 0,
					cs.QPSizes: 3 | 4<<cs.QPSizesRQLogShift | 12<<cs.QPSizesTXSLogShift | 12<<cs.QPSizesRXSLogShift,
					cs.QPCqs:   1 | 1<<cs.QPCqsRecvCQShift,
					cs.QPMPA:   512 | 1<<cs.QPMPACRCShift,
					cs.QPRD:    4 | 4<<cs.QPRDIRDShift,
				}
				if change != nil {
					change(r)
				}
				offs := make([]uint32, 0, len(r))
				for off := range r {
					offs = append(offs, off)
				}
				slices.Sort(offs)
				for _, off := range offs {
					b.w32(off, r[off])
				}
			}
			create := uint32(cs.QPOpCreate)
			for _, row := range []struct {
				name   string
				qpn    uint32
				change func(map[uint32]uint32)
				op     uint32
				want   cs.CmdWhy
			}{
				{"QP 0", 0, nil, create, cs.CmdWhyBadNumber},
				{"QP 1024", 1024, nil, uint32(cs.QPOpClose), cs.CmdWhyBadNumber},
				{"op 7", live.n, nil, 7, cs.CmdWhyBadOp},
				{"CREATE of a live QP", live.n, nil, create, cs.CmdWhyExists},
				{"CLOSE of no QP", free, nil, uint32(cs.QPOpClose), cs.CmdWhyNoObject},
				{"DESTROY of no QP", free, nil, uint32(cs.QPOpDestroy), cs.CmdWhyNoObject},
				{"DESTROY in RTS", live.n, nil, uint32(cs.QPOpDestroy), cs.CmdWhyBadState},
				{"SQ of 2^17", free, func(r map[uint32]uint32) { r[cs.QPSizes] = r[cs.QPSizes]&^0x1f | 17 }, create, cs.CmdWhyBadSize},
				{"TXS of 2^11", free, func(r map[uint32]uint32) { r[cs.QPSizes] = r[cs.QPSizes]&^(0x1f<<16) | 11<<16 }, create, cs.CmdWhyBadSize},
				{"RXS of 2^25", free, func(r map[uint32]uint32) { r[cs.QPSizes] = r[cs.QPSizes]&^(0x1f<<24) | 25<<24 }, create, cs.CmdWhyBadSize},
				{"RQ base", free, func(r map[uint32]uint32) { r[cs.QPRQBaseLo] += 0x40 }, create, cs.CmdWhyBadAlign},
				{"TXS base", free, func(r map[uint32]uint32) { r[cs.QPTXSBaseLo] += 0x800 }, create, cs.CmdWhyBadAlign},
				{"send CQ 9", free, func(r map[uint32]uint32) { r[cs.QPCqs] = 9 | 1<<16 }, create, cs.CmdWhyNoCQ},
				{"receive CQ 4000", free, func(r map[uint32]uint32) { r[cs.QPCqs] = 1 | 4000<<16 }, create, cs.CmdWhyNoCQ},
				{"MULPDU 100", free, func(r map[uint32]uint32) { r[cs.QPMPA] = 100 }, create, cs.CmdWhyBadMulpdu},
				{"MULPDU 65000", free, func(r map[uint32]uint32) { r[cs.QPMPA] = 65000 }, create, cs.CmdWhyBadMulpdu},
				{"ORD 0", free, func(r map[uint32]uint32) { r[cs.QPRD] = 4 << 8 }, create, cs.CmdWhyBadRD},
				{"IRD 17", free, func(r map[uint32]uint32) { r[cs.QPRD] = 4 | 17<<8 }, create, cs.CmdWhyBadRD},
				{"size before alignment", free, func(r map[uint32]uint32) { r[cs.QPSizes] |= 0x1f; r[cs.QPSQBaseLo]++ }, create, cs.CmdWhyBadSize},
			} {
				stage(row.qpn, row.change)
				b.command(row.name, cs.QPCmd, row.op, row.want)
			}

			// CQ commands.
			cq := uint32(wcNCQ + 1)
			cqBase := wcCQ + uint64(cq)<<16
			b.alloc(cqBase, 32<<8)
			stageCQ := func(n uint32, base uint64, log uint32) {
				b.w32(cs.CQNum, n)
				b.w32(cs.CQBaseLo, uint32(base))
				b.w32(cs.CQBaseHi, uint32(base>>32))
				b.w32(cs.CQCfg, log)
			}
			for _, row := range []struct {
				name string
				n    uint32
				base uint64
				log  uint32
				op   uint32
				want cs.CmdWhy
			}{
				{"CQ 1024", 1024, cqBase, 8, uint32(cs.CQOpCreate), cs.CmdWhyBadNumber},
				{"CQ op 3", cq, cqBase, 8, 3, cs.CmdWhyBadOp},
				{"CREATE of CQ 1", 1, cqBase, 8, uint32(cs.CQOpCreate), cs.CmdWhyExists},
				{"CQ of 2^17", cq, cqBase, 17, uint32(cs.CQOpCreate), cs.CmdWhyBadSize},
				{"CQ base", cq, cqBase + 32<<7, 8, uint32(cs.CQOpCreate), cs.CmdWhyBadAlign},
				{"DESTROY of no CQ", cq, cqBase, 8, uint32(cs.CQOpDestroy), cs.CmdWhyNoObject},
				{"DESTROY of a used CQ", live.sendCQ, cqBase, 8, uint32(cs.CQOpDestroy), cs.CmdWhyCQBusy},
				{"CREATE", cq, cqBase, 8, uint32(cs.CQOpCreate), cs.CmdWhyOk},
			} {
				stageCQ(row.n, row.base, row.log)
				b.command(row.name, cs.CQCmd, row.op, row.want)
			}
			// EQ_CFG: refused ones leave the EQ as it is (the events after
			// them are compared).
			eqCfg := uint32(wcEQLog | wcVector<<cs.EQCfgVectorShift | 1<<cs.EQCfgEnableShift)
			b.command("EQ of 2^17", cs.EQCfg, eqCfg&^0x1f|17, cs.CmdWhyBadSize)
			b.w32(cs.EQBaseLo, wcEQ+16)
			b.command("EQ base", cs.EQCfg, eqCfg, cs.CmdWhyBadAlign)
			b.w32(cs.EQBaseLo, wcEQ)

			// A QP on the new CQ: the CQ cannot go while the QP uses it;
			// the QP is destroyed once in ERROR, then the CQ.
			stage(free, func(r map[uint32]uint32) { r[cs.QPCqs] = cq | cq<<cs.QPCqsRecvCQShift })
			b.command("CREATE", cs.QPCmd, create, cs.CmdWhyOk)
			b.command("CREATE again", cs.QPCmd, create, cs.CmdWhyExists)
			stageCQ(cq, cqBase, 8)
			b.command("DESTROY of the QP's CQ", cs.CQCmd, uint32(cs.CQOpDestroy), cs.CmdWhyCQBusy)
			b.w32(cs.QPNum, free)
			b.command("CLOSE", cs.QPCmd, uint32(cs.QPOpClose), cs.CmdWhyOk)
			b.runModel()
			b.runRTL(3_000_000)
			require.Equal(t, cs.QPStateClosed, b.rtlStat(free).State(), "seed %d QP %d: CLOSE of an idle QP", seed, free)
			b.command("CLOSE of a closed QP", cs.QPCmd, uint32(cs.QPOpClose), cs.CmdWhyOk)
			b.command("DESTROY", cs.QPCmd, uint32(cs.QPOpDestroy), cs.CmdWhyOk)
			b.command("DESTROY again", cs.QPCmd, uint32(cs.QPOpDestroy), cs.CmdWhyNoObject)
			stageCQ(cq, cqBase, 8)
			b.command("DESTROY of the CQ", cs.CQCmd, uint32(cs.CQOpDestroy), cs.CmdWhyOk)
			// The QP number and the CQ number are free again.
			b.command("CREATE of the CQ again", cs.CQCmd, uint32(cs.CQOpCreate), cs.CmdWhyOk)
			stage(free, func(r map[uint32]uint32) { r[cs.QPCqs] = cq | 1<<cs.QPCqsRecvCQShift })
			b.command("CREATE of the QP again", cs.QPCmd, create, cs.CmdWhyOk)
			b.command("ERROR", cs.QPCmd, uint32(cs.QPOpError), cs.CmdWhyOk)
			b.runModel()
			b.runRTL(3_000_000)
			b.command("DESTROY in ERROR", cs.QPCmd, uint32(cs.QPOpDestroy), cs.CmdWhyOk)

			// The traffic goes on as before.
			for round := 1; round < 3; round++ {
				b.round(round)
			}
			b.compare()
		})
	}
}
