package gen

import (
	"fmt"
	"math/big"
)

// The Read Responses' side of the ORQ in placement (docs/placement.md,
// "Read Responses"): the sink of each Read a connection has outstanding,
// and how far the oldest one's response has come, so that a Read
// Response is checked against the Read it answers (golden/iwarp's
// CheckReadResponse) before a byte is placed.

// placementORQSlots is how many Reads a connection may have outstanding
// (the card's ORD limit, CardMaxRd): one sink slot each.
const placementORQSlots = CardMaxRd

// placementORQIn is what the ORQ stage reads.
type placementORQIn struct {
	live     Expr // no memory is written in reset
	rdEn     Expr // a segment's first beat moves into stage 1: its connection's state is read
	qp       Expr // that connection (placementRdQPBits)
	s1QP     Expr // the connection of the segment in stage 1
	doneCnt  Expr // stage 1: its Read Responses with L=1 placed, plus one
	issV     Expr // a Read Request went out (card_tx)
	issQP    Expr // on this connection,
	issN     Expr // as its Read Request count plus one
	sink     Expr // with this sink: {length 32, TO 64, STag 32}
	clrV     Expr // a connection starts anew (QP CREATE)
	clrQP    Expr
	clrQ     Expr    // the last clear's connection (placement's rd_clr_qp, loaded by clrV)
	progWr   *Signal // stage 1 -> 2: a Read Response passed: progress moves (the caller assigns it)
	progLast *Signal // ... and it was the last of its Read
	progNext *Signal // ... else the sink's next TO
	progLeft *Signal // ... and the bytes left
}

// placementORQOut is the oldest outstanding Read of the segment in stage
// 1, as its response has used it so far.
type placementORQOut struct {
	stag, to, left *Signal // its sink STag, the TO the next segment must have, the bytes left
	unused         []Expr  // bits no logic reads
}

// placementORQ builds the ORQ's receive side. The sinks are kept in one
// block RAM per slot (a Read's slot is its index modulo the slot count),
// each read at the connection's number as a segment moves into stage 1,
// so that the oldest Read's slot, known only from the Read Response count
// read at the same time, is chosen after the read. The progress of the
// oldest Read (a started bit, the next TO, the bytes left: no adder on
// the check path) is one more block RAM, written as a segment leaves
// stage 1 and forwarded to the next segment read in that cycle; a
// connection created anew forgets it, waiting for a free write cycle.
func placementORQ(m *Module, in placementORQIn) placementORQOut {
	RQ := placementRdQPBits
	SB := log2(placementORQSlots)
	// Read k (from 0) of a connection is reported with count k + 2.
	idx := m.WireOf("orq_issue_index", Sub(in.issN, C(16, 2)), "the Read Request sent is its connection's Read number idx (from 0)")
	slot := m.WireOf("orq_issue_slot", Bits(idx, SB-1, 0), "its slot")
	var sinks []Expr
	for k := 0; k < placementORQSlots; k++ {
		we := And(in.live, in.issV, Eq(slot, C(SB, uint64(k))))
		sinks = append(sinks, m.Mem(fmt.Sprintf("orq_sink%d", k), 128, 1<<RQ, we, in.issQP, in.sink, in.rdEn, in.qp,
			fmt.Sprintf("per connection: the sink of its Reads in slot %d: {length, TO, STag}", k)))
	}
	done := m.WireOf("orq_done", Sub(in.doneCnt, C(16, 1)), "Reads of the connection answered: the oldest outstanding one's number")
	head := m.WireOf("orq_head_slot", Bits(done, SB-1, 0), "its slot")
	sink := m.WireOf("orq_sink", muxTree(selBits(head, 0, SB), sinks), "its sink")

	const PW = 1 + 64 + 32 // {started, next TO, left}
	clr := m.RegDecl("orq_clr", 1, "a cleared connection's progress waits for a free write")
	wrClr := m.WireOf("orq_prog_wr_clr", And(Or(in.clrV, clr), Not(in.progWr)), "")
	m.Drive(clr, big.NewInt(0), And(Or(in.clrV, clr), in.progWr), nil)
	wrQP := in.s1QP
	wrData := m.WireOf("orq_prog_wr_data", Sel(in.progLast, C(PW, 0), Cat(C(1, 1), in.progNext, in.progLeft)),
		"a Read's last segment clears its progress")
	prog := m.Mem("orq_prog", PW, 1<<RQ, And(in.live, Or(in.progWr, wrClr)), Sel(in.progWr, wrQP, Sel(clr, in.clrQ, in.clrQP)),
		Sel(in.progWr, wrData, C(PW, 0)), in.rdEn, in.qp, "per connection: the oldest Read's progress {started, next TO, bytes left}")
	fwd := m.Reg("orq_s1_fwd", 1, nil, And(in.progWr, Eq(wrQP, in.qp)), in.rdEn, "the progress was read as it was written")
	fwdV := m.Reg("orq_s1_fwd_v", PW, nil, wrData, in.rdEn, "")
	cur := m.WireOf("orq_prog_cur", Sel(fwd, fwdV, prog), "the progress of the segment in stage 1")
	started := Bit(cur, PW-1)
	return placementORQOut{
		stag:   m.WireOf("orq_stag", Bits(sink, 31, 0), "the oldest Read's sink STag"),
		to:     m.WireOf("orq_to", Sel(started, Bits(cur, 95, 32), Bits(sink, 95, 32)), "the TO its next segment must have"),
		left:   m.WireOf("orq_left", Sel(started, Bits(cur, 31, 0), Bits(sink, 127, 96)), "the bytes left of it"),
		unused: []Expr{Bits(idx, 15, SB), Bits(done, 15, SB)},
	}
}
