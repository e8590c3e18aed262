package cycle

import (
	"github.com/openiwarp/openiwarp/golden/mpa"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// The card's command checker (card_cmd), modelled from its contract in
// docs/card-rtl.md and the card model's rules for QP_CMD, CQ_CMD and
// EQ_CFG (host/driver/cardmodel: qpCommand, newQP, cqCommand, eqConfig),
// with the limits of host/driver/cardspec and golden/mpa.

// CardCmdClearCycles is how long card_cmd clears its tables after reset
// (init_done low): one entry a cycle.
const CardCmdClearCycles = cs.MaxQP

// CardCmdIn is one cycle of card_cmd's inputs: card_regs' commands with
// their staged contexts (held while the command is offered), the engines'
// and card_cq's readiness to take a command handed on, EQ_CFG's write
// pulse with its new value (on the inputs from the next cycle), card_stat's
// report of a QP that reached CLOSED or ERROR, and STATUS.FATAL.
type CardCmdIn struct {
	Reset bool

	QPValid                      bool
	QPOp                         cs.QPOp
	QPN                          uint16
	SQBase, RQBase, TXSBase      uint64
	RXSBase                      uint64
	SQLog, RQLog, TXSLog, RXSLog uint8
	SendCQ, RecvCQ, MULPDU       uint16
	ORD, IRD                     uint8
	QPTaken                      bool // m_qp_ready: every engine takes the command handed on
	CQValid                      bool
	CQOp                         cs.CQOp
	CQN                          uint16
	CQBase                       uint64
	CQLog                        uint8
	CQTaken                      bool // m_cq_ready
	EQWrite                      bool // eq_cfg_wr_pulse
	EQEnable                     bool
	EQLog                        uint8
	EQBase                       uint64
	DoneValid                    bool // s_done: the QP reached CLOSED or ERROR
	DoneQPN                      uint16
	Stopped                      bool // STATUS.FATAL
}

// CardCmdOut is what card_cmd shows in a cycle.
type CardCmdOut struct {
	QPReady, QPHandOn bool // qp_cmd_ready (answered), m_qp_valid
	CQReady, CQHandOn bool
	Seq               uint16 // CMD_STATUS.SEQ
	Refused           bool
	Why               cs.CmdWhy
	InitDone          bool
}

// QP classes as card_cmd keeps them.
const (
	qpNone   = 0
	qpActive = 1 // RTS or CLOSING
	qpDone   = 2 // CLOSED or ERROR
)

// card_cmd's steps: a QP command reads its class and CQs (two cycles),
// decides, hands on until taken, then updates the tables; a CQ command
// reads its CQ, decides, hands on, writes its entry.
const (
	ccClear = iota
	ccIdle
	ccQRead    // class, CQs and the send CQ's entry read
	ccQRead2   // the receive CQ's entry read
	ccQDecide  // the verdict
	ccQHandOn  // offered to the engines until taken
	ccQSet     // CREATE, DESTROY: the class written (in a cycle without s_done)
	ccUsersRd  // a CQ's users read (the send CQ, then the receive CQ)
	ccUsersWr  // ... and written back
	ccCQRead   // a CQ command: its entry read
	ccCQDecide // the verdict
	ccCQHandOn // offered to card_cq until taken
	ccCQSet    // the entry written
)

// cardCmdTables are card_cmd's block RAMs.
type cardCmdTables struct {
	class [cs.MaxQP]uint8
	qpCQs [cs.MaxQP][2]uint16 // send, receive
	cqs   [cs.MaxCQ]cqUsers
}

type cqUsers struct {
	exists bool
	users  uint16 // 12 bits, as the RTL counts them
}

// CardCmd is card_cmd's cycle model. The tables are block RAM with a
// registered read (the old word when read and written in one cycle).
type CardCmd struct {
	state int
	clear int

	t *cardCmdTables

	// Registered reads.
	classRd uint8
	qpCQsRd [2]uint16
	cqRd    cqUsers

	op               uint8 // the command's OP
	qpn, cqn         uint16
	sendCQ, recvCQ   uint16
	classQ           uint8
	oldCQs           [2]uint16
	sendCQE, recvCQE cqUsers
	cqE              cqUsers
	seenDone         bool
	verdict          cs.CmdWhy
	stopErr          bool
	second           bool
	eqPulse          bool
	seq              uint16
	why              cs.CmdWhy
}

// NewCardCmd returns card_cmd fresh from reset.
func NewCardCmd() *CardCmd {
	c := &CardCmd{t: &cardCmdTables{}}
	c.reset()
	return c
}

func (c *CardCmd) reset() {
	c.state, c.clear = ccClear, 0
	c.seenDone, c.second, c.eqPulse = false, false, false
	c.seq, c.why = 0, 0
}

// aligned reports whether base is a multiple of 2^lg.
func aligned(base uint64, lg uint) bool { return base&(1<<lg-1) == 0 }

// qpVerdict is the card model's verdict of a QP command, with class the
// QP's class and send, recv its CQs' entries.
func qpVerdict(in *CardCmdIn, class uint8, send, recv cqUsers) cs.CmdWhy {
	if in.QPN == 0 || in.QPN >= cs.MaxQP {
		return cs.CmdWhyBadNumber
	}
	switch in.QPOp {
	case cs.QPOpCreate:
		switch {
		case class != qpNone:
			return cs.CmdWhyExists
		case in.SQLog > cs.MaxQueueLog || in.RQLog > cs.MaxQueueLog ||
			in.TXSLog < cs.MinRingLog || in.TXSLog > cs.MaxRingLog || in.RXSLog < cs.MinRingLog || in.RXSLog > cs.MaxRingLog:
			return cs.CmdWhyBadSize
		case !aligned(in.SQBase, uint(in.SQLog)+6) || !aligned(in.RQBase, uint(in.RQLog)+6) ||
			!aligned(in.TXSBase, uint(in.TXSLog)) || !aligned(in.RXSBase, uint(in.RXSLog)):
			return cs.CmdWhyBadAlign
		case in.SendCQ >= cs.MaxCQ || in.RecvCQ >= cs.MaxCQ || !send.exists || !recv.exists:
			return cs.CmdWhyNoCQ
		case in.MULPDU < mpa.MinMULPDU || in.MULPDU > mpa.MaxULPDULength || uint64(in.MULPDU) > 1<<in.TXSLog/2:
			return cs.CmdWhyBadMulpdu
		case in.ORD == 0 || in.ORD > cs.MaxRd || in.IRD == 0 || in.IRD > cs.MaxRd:
			return cs.CmdWhyBadRD
		}
		return cs.CmdWhyOk
	case cs.QPOpClose, cs.QPOpError, cs.QPOpDestroy:
	default:
		return cs.CmdWhyBadOp
	}
	switch {
	case class == qpNone:
		return cs.CmdWhyNoObject
	case in.QPOp == cs.QPOpDestroy && class == qpActive:
		return cs.CmdWhyBadState
	}
	return cs.CmdWhyOk
}

// cqVerdict is the card model's verdict of a CQ command on entry e.
func cqVerdict(in *CardCmdIn, e cqUsers) cs.CmdWhy {
	if in.CQN >= cs.MaxCQ {
		return cs.CmdWhyBadNumber
	}
	switch in.CQOp {
	case cs.CQOpCreate:
		switch {
		case e.exists:
			return cs.CmdWhyExists
		case in.CQLog > cs.MaxQueueLog:
			return cs.CmdWhyBadSize
		case !aligned(in.CQBase, uint(in.CQLog)+5): // 32-byte CQEs
			return cs.CmdWhyBadAlign
		}
	case cs.CQOpDestroy:
		switch {
		case !e.exists:
			return cs.CmdWhyNoObject
		case e.users != 0:
			return cs.CmdWhyCQBusy
		}
	default:
		return cs.CmdWhyBadOp
	}
	return cs.CmdWhyOk
}

// eqVerdict is the card model's verdict of an EQ_CFG write.
func eqVerdict(in *CardCmdIn) cs.CmdWhy {
	switch {
	case !in.EQEnable:
		return cs.CmdWhyOk
	case in.EQLog > cs.MaxQueueLog:
		return cs.CmdWhyBadSize
	case !aligned(in.EQBase, uint(in.EQLog)+4): // 16-byte EQEs
		return cs.CmdWhyBadAlign
	}
	return cs.CmdWhyOk
}

// Step returns what card_cmd shows during this cycle, then takes the
// clock edge.
func (c *CardCmd) Step(in CardCmdIn) CardCmdOut {
	refused := c.verdict != cs.CmdWhyOk
	qHandOn, cHandOn := c.state == ccQHandOn, c.state == ccCQHandOn
	out := CardCmdOut{
		QPHandOn: qHandOn && !refused && !in.Stopped,
		CQHandOn: cHandOn && !refused && !in.Stopped,
		QPReady:  qHandOn && (refused || in.Stopped || in.QPTaken),
		CQReady:  cHandOn && (refused || in.Stopped || in.CQTaken),
		Seq:      c.seq, Why: c.why, Refused: c.why != cs.CmdWhyOk,
		InitDone: c.state != ccClear,
	}

	// This cycle's terms.
	qpn := in.QPN % cs.MaxQP
	takeQP := c.state == ccIdle && in.QPValid
	takeCQ := c.state == ccIdle && !in.QPValid && in.CQValid
	doneHere := in.DoneValid && in.DoneQPN == qpn
	creating := c.op == uint8(cs.QPOpCreate)
	qSet := c.state == ccQSet && !in.DoneValid
	newCQs := c.oldCQs
	if creating {
		newCQs = [2]uint16{c.sendCQ, c.recvCQ}
	}
	usersCQ := newCQs[0]
	if c.second {
		usersCQ = newCQs[1]
	}
	qTaken := out.QPReady && !refused
	stopErrNow := in.Stopped && in.QPOp == cs.QPOpError

	// Reads: the class and the QP's CQs at a QP command's take; a CQ entry
	// every cycle, of the address this cycle names.
	cqRa := usersCQ
	switch c.state {
	case ccIdle:
		cqRa = in.CQN % cs.MaxCQ
		if in.QPValid {
			cqRa = in.SendCQ % cs.MaxCQ
		}
	case ccQRead:
		cqRa = c.recvCQ
	}
	classRd, qpCQsRd := c.classRd, c.qpCQsRd
	if takeQP {
		classRd, qpCQsRd = c.t.class[qpn], c.t.qpCQs[qpn]
	}
	cqRd := c.t.cqs[cqRa]

	// Registers: as they are unless set below (the tables are shared).
	next := *c
	next.state = ccIdle
	switch c.state {
	case ccClear:
		if c.clear == CardCmdClearCycles-1 {
			next.state = ccIdle
		} else {
			next.state = ccClear
		}
	case ccIdle:
		switch {
		case takeQP:
			next.state = ccQRead
		case takeCQ:
			next.state = ccCQRead
		}
	case ccQRead:
		next.state = ccQRead2
	case ccQRead2:
		next.state = ccQDecide
	case ccQDecide:
		next.state = ccQHandOn
	case ccQHandOn:
		switch {
		case qTaken && (in.QPOp == cs.QPOpCreate || in.QPOp == cs.QPOpDestroy || stopErrNow):
			next.state = ccQSet
		case out.QPReady:
			next.state = ccIdle
		default:
			next.state = ccQHandOn
		}
	case ccQSet:
		switch {
		case !qSet:
			next.state = ccQSet
		case !c.stopErr:
			next.state = ccUsersRd
		}
	case ccUsersRd:
		next.state = ccUsersWr
	case ccUsersWr:
		if !c.second {
			next.state = ccUsersRd
		}
	case ccCQRead:
		next.state = ccCQDecide
	case ccCQDecide:
		next.state = ccCQHandOn
	case ccCQHandOn:
		switch {
		case out.CQReady && !refused:
			next.state = ccCQSet
		case !out.CQReady:
			next.state = ccCQHandOn
		}
	}
	if c.state == ccClear {
		next.clear = (c.clear + 1) % cs.MaxQP
	}
	next.classRd, next.qpCQsRd, next.cqRd = classRd, qpCQsRd, cqRd
	if takeQP || takeCQ {
		next.op = uint8(in.CQOp)
		if in.QPValid {
			next.op = uint8(in.QPOp)
		}
	}
	if takeQP {
		next.qpn, next.sendCQ, next.recvCQ = qpn, in.SendCQ%cs.MaxCQ, in.RecvCQ%cs.MaxCQ
	}
	if takeCQ {
		next.cqn = in.CQN % cs.MaxCQ
	}
	// A QP's report of CLOSED or ERROR from the take on counts (the class
	// read at the take is the one before that cycle's write).
	if takeQP || doneHere || c.state == ccIdle {
		next.seenDone = doneHere || !takeQP && c.seenDone
	}
	switch c.state {
	case ccQRead:
		next.classQ, next.oldCQs, next.sendCQE = c.classRd, c.qpCQsRd, c.cqRd
	case ccQRead2:
		next.recvCQE = c.cqRd
	case ccCQRead:
		next.cqE = c.cqRd
	}
	switch c.state {
	case ccQDecide:
		class := c.classQ
		if c.seenDone && class == qpActive {
			class = qpDone
		}
		next.verdict = qpVerdict(&in, class, c.sendCQE, c.recvCQE)
	case ccCQDecide:
		next.verdict = cqVerdict(&in, c.cqE)
	}
	if qHandOn {
		next.stopErr = stopErrNow
	}
	switch c.state {
	case ccQSet:
		next.second = false
	case ccUsersWr:
		next.second = true
	}
	next.eqPulse = in.EQWrite
	if out.QPReady || out.CQReady || c.eqPulse {
		next.seq++
		next.why = c.verdict
		if c.eqPulse {
			next.why = eqVerdict(&in)
		}
	}

	// Table writes.
	switch {
	case c.state == ccClear:
		c.t.class[c.clear] = qpNone
	case in.DoneValid:
		c.t.class[in.DoneQPN%cs.MaxQP] = qpDone
	case qSet:
		switch {
		case c.stopErr:
			c.t.class[c.qpn] = qpDone
		case creating:
			c.t.class[c.qpn] = qpActive
		default:
			c.t.class[c.qpn] = qpNone
		}
	}
	if qSet && creating {
		c.t.qpCQs[c.qpn] = [2]uint16{c.sendCQ, c.recvCQ}
	}
	switch c.state {
	case ccClear:
		c.t.cqs[c.clear] = cqUsers{}
	case ccUsersWr:
		u := c.cqRd
		if creating {
			u.users = (u.users + 1) & 0xfff
		} else {
			u.users = (u.users - 1) & 0xfff
		}
		c.t.cqs[usersCQ] = u
	case ccCQSet:
		c.t.cqs[c.cqn] = cqUsers{exists: c.op == uint8(cs.CQOpCreate)}
	}

	*c = next
	if in.Reset {
		c.reset()
	}
	return out
}
