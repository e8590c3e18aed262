package sim

import (
	"github.com/openiwarp/openiwarp/golden/cycle"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// CardCmdBench is the co-simulation bench of card_cmd against
// golden/cycle's CardCmd.
func CardCmdBench() (*Bench, error) {
	m, err := gen.CardCmd()
	if err != nil {
		return nil, err
	}
	b := NewBench(m, nil, nil)
	b.NewModel = func() (Model, error) {
		p, err := lookupCardCmdPorts(b.Layout)
		if err != nil {
			return nil, err
		}
		return &cardCmdModel{m: cycle.NewCardCmd(), p: p}, nil
	}
	b.NewDriver = func(seed uint64) Driver {
		p, err := lookupCardCmdPorts(b.Layout)
		if err != nil {
			panic(err) // the model constructor reports the same error first
		}
		return &cardCmdDriver{p: p, rng: NewRand(seed), resetLeft: 2}
	}
	return b, nil
}

type cardCmdPorts struct {
	rst, qpValid, qpOp, qpn     Port
	sizes                       [4]Port    // SQ, RQ, TXS, RXS log2
	bases                       [4][2]Port // the same rings' bases
	sendCQ, recvCQ, mulpdu      Port
	ord, ird, qpTaken           Port
	cqValid, cqOp, cqn, cqLog   Port
	cqBase                      [2]Port
	cqTaken, eqWr, eqEn, eqLog  Port
	eqBase                      [2]Port
	doneValid, doneQPN, stopped Port
	qpReady, qpHandOn           Port
	cqReady, cqHandOn           Port
	seq, refused, why, initDone Port
}

func lookupCardCmdPorts(l Layout) (cardCmdPorts, error) {
	var p cardCmdPorts
	var err error
	get := func(dst *Port, name string, in bool) { l.lookup(dst, name, in, &err) }
	get(&p.rst, "rst", true)
	get(&p.qpValid, "qp_cmd_valid", true)
	get(&p.qpOp, "qp_cmd_op", true)
	get(&p.qpn, "qp_num_qpn", true)
	for i, n := range []string{"sq", "rq", "txs", "rxs"} {
		get(&p.sizes[i], "qp_sizes_"+n+"_log", true)
		get(&p.bases[i][0], "qp_"+n+"_base_lo", true)
		get(&p.bases[i][1], "qp_"+n+"_base_hi", true)
	}
	get(&p.sendCQ, "qp_cqs_send_cq", true)
	get(&p.recvCQ, "qp_cqs_recv_cq", true)
	get(&p.mulpdu, "qp_mpa_mulpdu", true)
	get(&p.ord, "qp_rd_ord", true)
	get(&p.ird, "qp_rd_ird", true)
	get(&p.qpTaken, "m_qp_ready", true)
	get(&p.cqValid, "cq_cmd_valid", true)
	get(&p.cqOp, "cq_cmd_op", true)
	get(&p.cqn, "cq_num_cqn", true)
	get(&p.cqLog, "cq_cfg_log_size", true)
	get(&p.cqBase[0], "cq_base_lo", true)
	get(&p.cqBase[1], "cq_base_hi", true)
	get(&p.cqTaken, "m_cq_ready", true)
	get(&p.eqWr, "eq_cfg_wr_pulse", true)
	get(&p.eqEn, "eq_cfg_enable", true)
	get(&p.eqLog, "eq_cfg_log_size", true)
	get(&p.eqBase[0], "eq_base_lo", true)
	get(&p.eqBase[1], "eq_base_hi", true)
	get(&p.doneValid, "s_done_valid", true)
	get(&p.doneQPN, "s_done_qpn", true)
	get(&p.stopped, "stopped", true)
	get(&p.qpReady, "qp_cmd_ready", false)
	get(&p.qpHandOn, "m_qp_valid", false)
	get(&p.cqReady, "cq_cmd_ready", false)
	get(&p.cqHandOn, "m_cq_valid", false)
	get(&p.seq, "cmd_status_seq", false)
	get(&p.refused, "cmd_status_refused", false)
	get(&p.why, "cmd_status_why", false)
	get(&p.initDone, "init_done", false)
	return p, err
}

func get64(pp [2]Port, in []uint32) uint64 { return pp[1].Get(in)<<32 | pp[0].Get(in) }

func set64(pp [2]Port, in []uint32, v uint64) {
	pp[0].Set(in, v&0xFFFFFFFF)
	pp[1].Set(in, v>>32)
}

type cardCmdModel struct {
	m *cycle.CardCmd
	p cardCmdPorts
}

func (a *cardCmdModel) Step(in, out []uint32) {
	p := &a.p
	x := cycle.CardCmdIn{
		Reset:   p.rst.Get(in) != 0,
		QPValid: p.qpValid.Get(in) != 0, QPOp: cs.QPOp(p.qpOp.Get(in)), QPN: uint16(p.qpn.Get(in)),
		SQBase: get64(p.bases[0], in), RQBase: get64(p.bases[1], in), TXSBase: get64(p.bases[2], in), RXSBase: get64(p.bases[3], in),
		SQLog: uint8(p.sizes[0].Get(in)), RQLog: uint8(p.sizes[1].Get(in)), TXSLog: uint8(p.sizes[2].Get(in)), RXSLog: uint8(p.sizes[3].Get(in)),
		SendCQ: uint16(p.sendCQ.Get(in)), RecvCQ: uint16(p.recvCQ.Get(in)), MULPDU: uint16(p.mulpdu.Get(in)),
		ORD: uint8(p.ord.Get(in)), IRD: uint8(p.ird.Get(in)), QPTaken: p.qpTaken.Get(in) != 0,
		CQValid: p.cqValid.Get(in) != 0, CQOp: cs.CQOp(p.cqOp.Get(in)), CQN: uint16(p.cqn.Get(in)),
		CQBase: get64(p.cqBase, in), CQLog: uint8(p.cqLog.Get(in)), CQTaken: p.cqTaken.Get(in) != 0,
		EQWrite: p.eqWr.Get(in) != 0, EQEnable: p.eqEn.Get(in) != 0, EQLog: uint8(p.eqLog.Get(in)), EQBase: get64(p.eqBase, in),
		DoneValid: p.doneValid.Get(in) != 0, DoneQPN: uint16(p.doneQPN.Get(in)), Stopped: p.stopped.Get(in) != 0,
	}
	o := a.m.Step(x)
	p.qpReady.Set(out, b2u(o.QPReady))
	p.qpHandOn.Set(out, b2u(o.QPHandOn))
	p.cqReady.Set(out, b2u(o.CQReady))
	p.cqHandOn.Set(out, b2u(o.CQHandOn))
	p.seq.Set(out, uint64(o.Seq))
	p.refused.Set(out, b2u(o.Refused))
	p.why.Set(out, uint64(o.Why))
	p.initDone.Set(out, b2u(o.InitDone))
}

// cardCmdDriver offers QP and CQ commands as card_regs does (one at a
// time, the staged context held until the command is answered, no EQ_CFG
// write while one waits) on a few QP and CQ numbers, so that CREATE,
// DESTROY and the users of CQs meet each other; about one command in three
// has a context field or OP out of range. The engines and card_cq take commands after
// random delays; card_stat reports random QPs done; the card stops now
// and then; resets are rare.
type cardCmdDriver struct {
	p         cardCmdPorts
	rng       Rand
	resetLeft int
	gap       int      // idle cycles before the next command
	qpHeld    bool     // a QP command is offered
	cqHeld    bool     // a CQ command is offered
	stopLeft  int      // cycles the card stays stopped
	held      []uint32 // the inputs as last driven: a staged context stays until answered

	// Counts for the test.
	Commands uint64
	Dones    uint64
	EQWrites uint64
	Stopped  uint64 // commands answered on a stopped card
}

// someQP picks a QP number: mostly a few, sometimes 0 or out of range.
func (d *cardCmdDriver) someQP() uint64 {
	r := d.rng
	switch r.IntN(20) {
	case 0:
		return 0
	case 1:
		return cs.MaxQP + uint64(r.IntN(1<<16-cs.MaxQP))
	case 2:
		return cs.MaxQP - 1
	}
	return 1 + uint64(r.IntN(6))
}

// someCQ picks a CQ number: mostly a few, sometimes out of range.
func (d *cardCmdDriver) someCQ() uint64 {
	r := d.rng
	switch r.IntN(20) {
	case 0:
		return cs.MaxCQ + uint64(r.IntN(1<<16-cs.MaxCQ))
	case 1:
		return cs.MaxCQ - 1
	}
	return uint64(r.IntN(4))
}

// bad returns true about once in n draws.
func (d *cardCmdDriver) bad(n int) bool { return d.rng.IntN(n) == 0 }

// base picks a base for a ring of 2^lg bytes: aligned but now and then.
func (d *cardCmdDriver) base(lg int) uint64 {
	b := d.rng.Uint64() &^ (1<<lg - 1)
	if d.bad(40) && lg > 0 {
		b |= 1 << d.rng.IntN(lg)
	}
	return b
}

func (d *cardCmdDriver) planQP(in []uint32) {
	p, r := &d.p, d.rng
	op := []cs.QPOp{cs.QPOpCreate, cs.QPOpCreate, cs.QPOpClose, cs.QPOpError, cs.QPOpDestroy, cs.QPOpDestroy}[r.IntN(6)]
	if d.bad(30) {
		op = cs.QPOp(r.IntN(16))
	}
	p.qpOp.Set(in, uint64(op))
	p.qpn.Set(in, d.someQP())
	logs := [4]int{r.IntN(cs.MaxQueueLog + 1), r.IntN(cs.MaxQueueLog + 1),
		cs.MinRingLog + r.IntN(cs.MaxRingLog-cs.MinRingLog+1), cs.MinRingLog + r.IntN(cs.MaxRingLog-cs.MinRingLog+1)}
	if d.bad(30) {
		logs[r.IntN(4)] = r.IntN(32)
	}
	for i, lg := range logs {
		p.sizes[i].Set(in, uint64(lg))
		add := 0
		if i < 2 {
			add = 6 // 64-byte blocks
		}
		set64(p.bases[i], in, d.base(lg+add))
	}
	scq, rcq := d.someCQ(), d.someCQ()
	if r.IntN(3) == 0 {
		rcq = scq
	}
	p.sendCQ.Set(in, scq)
	p.recvCQ.Set(in, rcq)
	half := 1 << (min(max(logs[2], cs.MinRingLog), 17) - 1) // half the transmit ring, or more than any MULPDU
	mulpdu := 128 + uint64(r.IntN(min(half, 64768)-127))
	if d.bad(8) { // out of range, at its edges or anywhere
		mulpdu = []uint64{127, 64769, uint64(half) + 1, uint64(r.IntN(1 << 16))}[r.IntN(4)]
	}
	p.mulpdu.Set(in, mulpdu)
	ord, ird := 1+uint64(r.IntN(cs.MaxRd)), 1+uint64(r.IntN(cs.MaxRd))
	if d.bad(30) {
		ord = uint64(r.IntN(256))
	}
	if d.bad(30) {
		ird = uint64(r.IntN(256))
	}
	p.ord.Set(in, ord)
	p.ird.Set(in, ird)
}

func (d *cardCmdDriver) planCQ(in []uint32) {
	p, r := &d.p, d.rng
	op := []cs.CQOp{cs.CQOpCreate, cs.CQOpDestroy}[r.IntN(2)]
	if d.bad(30) {
		op = cs.CQOp(r.IntN(16))
	}
	p.cqOp.Set(in, uint64(op))
	p.cqn.Set(in, d.someCQ())
	lg := r.IntN(cs.MaxQueueLog + 1)
	if d.bad(30) {
		lg = r.IntN(32)
	}
	p.cqLog.Set(in, uint64(lg))
	set64(p.cqBase, in, d.base(min(lg+5, 63)))
}

func (d *cardCmdDriver) Next(in []uint32) {
	p, r := &d.p, d.rng
	if d.held == nil {
		d.held = make([]uint32, len(in))
	}
	copy(in, d.held) // the harness's buffer holds another cycle's inputs
	defer copy(d.held, in)
	if d.resetLeft == 0 && r.Uint32()%200000 == 0 {
		d.resetLeft = 1 + r.IntN(3)
	}
	p.rst.Set(in, b2u(d.resetLeft > 0))
	if d.resetLeft > 0 {
		d.resetLeft--
	}
	if !d.qpHeld && !d.cqHeld {
		if d.gap > 0 {
			d.gap--
		} else {
			switch k := r.IntN(10); {
			case k < 6:
				d.qpHeld = true
				d.planQP(in)
				d.cqHeld = r.IntN(4) == 0 // both offered: the QP command goes first
				if d.cqHeld {
					d.planCQ(in)
				}
			case k < 9:
				d.cqHeld = true
				d.planCQ(in)
			default:
				d.gap = r.IntN(4)
			}
		}
	}
	// EQ_CFG only while no command is offered (card_regs takes no write
	// while one waits); its value shows from the next cycle on.
	eqWr := !d.qpHeld && !d.cqHeld && d.bad(20)
	p.eqWr.Set(in, b2u(eqWr))
	if eqWr {
		d.EQWrites++
		lg := r.IntN(cs.MaxQueueLog + 1)
		if d.bad(10) {
			lg = r.IntN(32)
		}
		p.eqLog.Set(in, uint64(lg))
		p.eqEn.Set(in, b2u(r.IntN(4) != 0))
		set64(p.eqBase, in, d.base(min(lg+4, 63)))
	}
	p.qpValid.Set(in, b2u(d.qpHeld))
	p.cqValid.Set(in, b2u(d.cqHeld))
	p.qpTaken.Set(in, b2u(r.IntN(3) == 0))
	p.cqTaken.Set(in, b2u(r.IntN(3) == 0))
	p.doneValid.Set(in, b2u(d.bad(8)))
	p.doneQPN.Set(in, uint64(1+r.IntN(6)))
	if d.stopLeft == 0 && d.bad(20000) {
		d.stopLeft = 200 + r.IntN(2000)
	}
	p.stopped.Set(in, b2u(d.stopLeft > 0))
	if d.stopLeft > 0 {
		d.stopLeft--
	}
}

func (d *cardCmdDriver) Observe(in, out []uint32) {
	p := &d.p
	if p.rst.Get(in) != 0 {
		d.qpHeld, d.cqHeld = false, false
		return
	}
	if p.doneValid.Get(in) != 0 {
		d.Dones++
	}
	answered := false
	if p.qpReady.Get(out) != 0 {
		d.qpHeld, answered = false, true
	}
	if p.cqReady.Get(out) != 0 {
		d.cqHeld, answered = false, true
	}
	if answered {
		d.Commands++
		if p.stopped.Get(in) != 0 {
			d.Stopped++
		}
		d.gap = d.rng.IntN(3)
	}
}
