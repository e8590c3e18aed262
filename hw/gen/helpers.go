package gen

import (
	"fmt"
	"math/big"
	"strings"
)

// Generic helpers the block generators share: bit and lane manipulation,
// selection trees, and the patterns that keep logic shallow (the LUT budget
// per cycle of hw/README.md, Synthesis). Block-specific logic stays in the
// block's file; a helper moves here once a second block needs it.

// muxTree selects cands[v] where v is the binary number sel (bit 0 first).
func muxTree(sel []Expr, cands []Expr) Expr {
	if len(sel) == 0 {
		return cands[0]
	}
	top := len(sel) - 1
	half := len(cands) / 2
	return Sel(sel[top], muxTree(sel[:top], cands[half:]), muxTree(sel[:top], cands[:half]))
}

// selBits is bits lo..lo+n-1 of x, one expression each, for muxTree.
func selBits(x *Signal, lo, n int) []Expr {
	out := make([]Expr, n)
	for i := range out {
		out[i] = Bit(x, lo+i)
	}
	return out
}

// lastLaneOneHot marks the highest lane whose keep bit is 1 (keep
// contiguous from lane 0), one term per lane.
func lastLaneOneHot(keep *Signal) Expr {
	lanes := keep.W
	ends := make([]Expr, lanes)
	for i := 0; i < lanes; i++ {
		e := Bit(keep, i)
		if i+1 < lanes {
			e = And(e, Not(Bit(keep, i+1)))
		}
		ends[lanes-1-i] = e
	}
	return Cat(ends...)
}

// lastLaneVector is lastLaneOneHot written on whole vectors, keep &
// ~(keep >> 1): the same function, which Verilator evaluates in three word
// operations where the per-lane form costs it hundreds at 512 bits. crc32c
// uses it above 8 lanes; mpa_tx writes its last covered lane on whole
// vectors of its own (mpa_tx_lanes.go).
func lastLaneVector(keep *Signal) Expr {
	if keep.W == 1 {
		return keep
	}
	return And(keep, Not(Cat(C(1, 0), Bits(keep, keep.W-1, 1))))
}

// complementIndex is ~index of the one-hot lane, nk bits: lanes-1-i for
// the lane i that is set (an OR of masked lanes per bit).
func complementIndex(oneHot Expr, nk int) Expr {
	lanes := oneHot.Width()
	pads := make([]Expr, nk)
	for j := 0; j < nk; j++ {
		mask := new(big.Int)
		for i := 0; i < lanes; i++ {
			if i>>j&1 == 0 {
				mask.SetBit(mask, i, 1)
			}
		}
		pads[nk-1-j] = RedOr(And(oneHot, CBig(lanes, mask)))
	}
	return Cat(pads...)
}

// shiftDownBytes is bits [width-1:0] of x shifted down by s octets, built as
// a logarithmic shifter (one stage per bit of s, least significant first),
// each stage as wide as the stages after it still need.
func shiftDownBytes(m *Module, name string, x *Signal, s *Signal, width int) Expr {
	cur := x
	for b := 0; b < s.W; b++ {
		n := 8 << b
		keep := width + 8*((1<<s.W)-(2<<b)) // octets the later stages may still shift in
		keep = min(keep, cur.W)
		var moved Expr
		if n >= cur.W {
			moved = C(keep, 0)
		} else if n+keep <= cur.W {
			moved = Bits(cur, n+keep-1, n)
		} else {
			moved = Cat(C(n+keep-cur.W, 0), Bits(cur, cur.W-1, n))
		}
		cur = m.WireOf(fmt.Sprintf("%s_s%d", name, b), Sel(Bit(s, b), moved, Bits(cur, keep-1, 0)), "")
	}
	return cur
}

// fit is x zero-extended or truncated to w bits.
func fit(x *Signal, w int) Expr {
	switch {
	case x.W == w:
		return x
	case x.W > w:
		return Bits(x, w-1, 0)
	}
	return Cat(C(w-x.W, 0), x)
}

// laneMask is the thermometer of the lanes below n (n <= lanes).
func laneMask(m *Module, name string, n Expr, lanes int) Expr {
	nw := m.WireOf(name+"_n", n, "")
	var parts []Expr
	for i := lanes - 1; i >= 0; i-- {
		parts = append(parts, Lt(C(nw.W, uint64(i)), nw))
	}
	return Cat(parts...)
}

// gate is x while v is 1, else zero.
func gate(v Expr, x Expr) Expr { return And(x, Rep(v, x.Width())) }

// zext zero-extends x to w bits (x as it is when it is that wide already).
func zext(x Expr, w int) Expr {
	if x.Width() >= w {
		return x
	}
	return Cat(C(w-x.Width(), 0), x)
}

// expand turns one bit per byte lane into eight.
func expand(mask *Signal) Expr {
	parts := make([]Expr, mask.W)
	for i := 0; i < mask.W; i++ {
		parts[mask.W-1-i] = Rep(Bit(mask, i), 8)
	}
	return Cat(parts...)
}

// incChunk is the width of the pieces IncBits adds one to.
const incChunk = 12

// IncBits is bits hi..lo of x plus one (modulo 2^(hi-lo+1)), built from
// 12-bit pieces: a piece takes its own +1 when every piece below it is all
// ones. Each piece's adder and all-ones test read x directly, so the depth
// is that of one 12-bit increment plus a select, whatever the width (a
// generic mapping of a wide adder ripples through every bit).
func IncBits(x *Signal, hi, lo int) Expr {
	w := hi - lo + 1
	if w <= incChunk {
		return Add(Bits(x, hi, lo), C(w, 1))
	}
	var parts []Expr
	var carry Expr // every piece so far is all ones; nil: the first piece
	for b := lo; b <= hi; b += incChunk {
		e := min(b+incChunk-1, hi)
		piece := Bits(x, e, b)
		var inc Expr
		if e == b {
			inc = Not(piece)
		} else {
			inc = Add(piece, C(e-b+1, 1))
		}
		if carry == nil {
			parts = append([]Expr{inc}, parts...)
			carry = RedAnd(piece)
			continue
		}
		parts = append([]Expr{Sel(carry, inc, piece)}, parts...)
		carry = And(carry, RedAnd(piece))
	}
	return Cat(parts...)
}

// StepIf is x + 1 when up is 1, else x: the increment is formed in
// parallel with up and selected, so up's logic and the adder's do not add.
func StepIf(up Expr, x *Signal) Expr { return Sel(up, IncBits(x, x.W-1, 0), x) }

// StageRegs is one stage of a pipeline's bundle: a register for each of
// xs, of its width, loaded when en is 1, named prefix and the part of the
// signal's name after its first "_" (b_cq becomes c_cq with prefix "c_").
func StageRegs(m *Module, prefix string, en Expr, xs ...*Signal) []*Signal {
	out := make([]*Signal, len(xs))
	for i, x := range xs {
		n := x.Name
		if _, rest, ok := strings.Cut(n, "_"); ok {
			n = rest
		}
		out[i] = m.Reg(prefix+n, x.W, nil, x, en, x.Name+", a stage on")
	}
	return out
}

// subChunk is the width of the pieces SubBits subtracts.
const subChunk = 8

// SubBits is x - y modulo 2^w (x and y w bits wide) in carry-select form:
// each subChunk-bit piece forms its difference without a borrow in (x - y)
// and with one (x - y - 1, which is ^(y - x)) from x and y directly, and the
// borrow ripples through one select per piece. A generic mapping of a wide
// subtractor ripples through every bit (24 bits: 10 LUT6 levels; this: 6).
// Its wires are named name_*.
func SubBits(m *Module, name string, x, y *Signal) Expr {
	w := x.W
	if w <= subChunk {
		return Sub(x, y)
	}
	var parts []Expr
	var borrow Expr // nil: no borrow into the first piece
	for b, k := 0, 0; b < w; b, k = b+subChunk, k+1 {
		e := min(b+subChunk-1, w-1)
		n := e - b + 1
		top := e < w-1 // a piece above needs this one's borrow (bit n)
		xs, ys := Bits(x, e, b), Bits(y, e, b)
		if top {
			xs, ys = zext(xs, n+1), zext(ys, n+1)
		}
		d0 := m.WireOf(fmt.Sprintf("%s_d%d", name, k), Sub(xs, ys), "bit n: x < y")
		if borrow == nil {
			parts = append([]Expr{Bits(d0, n-1, 0)}, parts...)
			borrow = Bit(d0, n)
			continue
		}
		r := m.WireOf(fmt.Sprintf("%s_r%d", name, k), Sub(ys, xs), "bit n: y < x (x - y - 1 borrows when it is 0)")
		parts = append([]Expr{Sel(borrow, Not(Bits(r, n-1, 0)), Bits(d0, n-1, 0))}, parts...)
		if top {
			borrow = m.WireOf(fmt.Sprintf("%s_b%d", name, k), Sel(borrow, Not(Bit(r, n)), Bit(d0, n)), "borrow out of this piece")
		}
	}
	return Cat(parts...)
}

// oneHot decodes q into n bits, bit i set when q == i: the per-entry
// enables of a table kept in flops (q's wire is name_qp, the bits name_1h).
func oneHot(m *Module, name string, q Expr, n int) *Signal {
	qs := m.WireOf(name+"_qp", q, "")
	return m.WireOf(name+"_1h", Decode(qs, n), "")
}

// producerMoveBad is the card model's ringMoved check of a producer index
// doorbell: the asked index may not be more than the ring's size (2^log
// blocks) past the consumer index ci, nor behind the blocks the engine has
// taken (up to taken). Its wires are prefix_posted, _over and _behind; q
// names the ring in their comments ("SQ", "RQ").
func producerMoveBad(m *Module, prefix, q string, asked, ci, taken, mask Expr) Expr {
	posted := m.WireOf(prefix+"_posted", Sub(asked, ci), fmt.Sprintf("blocks from %s_CI to the asked %s_PI", q, q))
	over := m.WireOf(prefix+"_over", And(RedOr(posted), RedOr(And(Sub(posted, C(16, 1)), Not(mask)))), fmt.Sprintf("more than the %s's size", q))
	behind := m.WireOf(prefix+"_behind", Lt(posted, Sub(taken, ci)), "behind the blocks the engine has taken")
	return Or(over, behind)
}
