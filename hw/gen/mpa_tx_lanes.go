package gen

import "math/big"

// Lane masks of mpa_tx's beat formation, written on whole vectors: a
// simulator evaluates a vector operation a machine word at a time, where
// one term per lane costs it several instructions per lane (hundreds at 512
// bits). Each bit is the same function of the same state bits as the
// per-lane form.

// roomBelow is the "pre" class of a room register e (18 bits, bit 17 the
// sign): lane i is set when e > i + 4, i.e. e is not negative and either
// its bits 16..nk+2 are not all zero or its low nk+2 bits exceed i + 4.
// Each lane is unit bits wide (1: a lane mask, 8: an octet mask).
func roomBelow(m *Module, name string, e *Signal, nk, unit int) Expr {
	lanes := 1 << nk
	big := m.WireOf("f_room_"+name+"_big", RedOr(Bits(e, 16, nk+2)), "")
	small := m.WireOf("f_room_"+name+"_small", Bits(e, nk+1, 0), "")
	w := lanes * unit
	return And(Rep(Not(Bit(e, 17)), w), Or(Rep(big, w), thermometer(small, 4, lanes, unit)))
}

// thermometer is the vector whose lane k (k < n, unit bits each) is set
// when from + k < x. Above 8 lanes it is split on x's low four bits (b) and
// the rest (a): with c = from + k = 16*ca + cb, c < x when ca < a, or
// ca == a and cb < b; each part is a constant selected by a or b. Up to 8
// lanes it is one comparison per lane, cheap to simulate either way, which
// yosys maps smaller there (the split form cost about 2% more Xilinx LUTs
// at 64 bits).
func thermometer(x *Signal, from, n, unit int) Expr {
	if n <= 8 {
		parts := make([]Expr, n)
		for k := 0; k < n; k++ {
			parts[n-1-k] = Rep(Lt(C(x.W, uint64(from+k)), x), unit)
		}
		return Cat(parts...)
	}
	lo := min(4, x.W)
	consts := func(bitsUsed int, pred func(v, c int) bool) []Expr {
		out := make([]Expr, 1<<bitsUsed)
		for v := range out {
			out[v] = laneConst(n, unit, func(k int) bool { return pred(v, from+k) })
		}
		return out
	}
	th := muxTree(selBits(x, 0, lo), consts(lo, func(b, c int) bool { return c%16 < b }))
	if x.W == lo {
		return th
	}
	a := selBits(x, lo, x.W-lo)
	lt := muxTree(a, consts(x.W-lo, func(a, c int) bool { return c/16 < a }))
	eq := muxTree(a, consts(x.W-lo, func(a, c int) bool { return c/16 == a }))
	return Or(lt, And(eq, th))
}

// groupMask is the vector of 4-lane groups (unit bits per lane) whose lane
// group lg satisfies in(g, lg) for the group g, all zero when on is 0.
func groupMask(on Expr, g *Signal, unit int, in func(g, lg int) bool) Expr {
	groups := 1 << g.W
	cands := make([]Expr, groups)
	for v := range cands {
		cands[v] = laneConst(4*groups, unit, func(k int) bool { return in(v, k/4) })
	}
	return Sel(on, muxTree(selBits(g, 0, g.W), cands), C(4*groups*unit, 0))
}

// laneConst is the constant of n lanes of unit bits with the lanes where
// set(k) is true all ones.
func laneConst(n, unit int, set func(k int) bool) Expr {
	v := new(big.Int)
	for k := 0; k < n; k++ {
		if set(k) {
			for b := 0; b < unit; b++ {
				v.SetBit(v, k*unit+b, 1)
			}
		}
	}
	return CBig(n*unit, v)
}

// shiftLanes is x moved up by n bits (zeros below): lane i of the result
// is lane i - n/unit of x.
func shiftLanes(x *Signal, n int) Expr {
	return Cat(Bits(x, x.W-1-n, 0), C(n, 0))
}

// pick is sel ? t : f bit by bit (sel, t and f of one width).
func pick(sel, t, f Expr) Expr {
	return Or(And(sel, t), And(Not(sel), f))
}

// windowBits is bits hi..lo of the window {w1[W-17:0], w0, 16'h0} (two zero
// octets, then entry 0, then entry 1), written from slices of the entries:
// the same wires as a slice of a window signal, without a 2W-bit wire that a
// simulator would copy on every cycle.
func windowBits(w0, w1 *Signal, hi, lo int) Expr {
	w := w0.W
	var parts []Expr // most significant first
	if hi >= w+16 {
		parts = append(parts, Bits(w1, hi-w-16, max(lo, w+16)-w-16))
	}
	if hi >= 16 && lo < w+16 {
		parts = append(parts, Bits(w0, min(hi, w+15)-16, max(lo, 16)-16))
	}
	if lo < 16 {
		parts = append(parts, C(min(hi, 15)-lo+1, 0))
	}
	return Cat(parts...)
}

// beatIn is what forms a beat's data lanes.
type beatIn struct {
	nk                  int     // log2 of the lanes
	roomData            *Signal // f_room_data
	mkHere              Expr    // a marker falls in this beat
	mkGroup             *Signal // its 4-lane group
	mkLanes, afterLanes *Signal // the marker's lanes, the lanes after it
	shifted, ptr, uLen  *Signal // ULPDU octets aligned to the lanes, FPDUPTR, ULPDU_Length
	first, lead         *Signal // the FPDU's first beat; it opens with a marker
}

// formBeat is the beat's data lanes: the marker's lanes (0, 0, FPDUPTR),
// else ULPDU_Length (lanes 0-1 of the first beat, or 4-5 after a leading
// marker), else ULPDU octets (4 lanes on after the marker) in the lanes of
// the data class, else zero. Above 8 lanes it is written on whole vectors
// with octet masks; up to 8, one select chain per lane (cheap to simulate
// either way; yosys maps it smaller there: iCE40 2237 LUT4s against 2278 at
// 64 bits).
func formBeat(m *Module, b beatIn) Expr {
	lanes := 1 << b.nk
	width := 8 * lanes
	if lanes <= 8 {
		pre := m.WireOf("f_data_pre", roomBelow(m, "data", b.roomData, b.nk, 1), "lanes carrying ULPDU data, before the marker")
		class := m.WireOf("f_data_lanes", pick(b.afterLanes, shiftLanes(pre, 4), pre), "lanes carrying ULPDU data")
		mkBytes := []Expr{C(8, 0), C(8, 0), Bits(b.ptr, 15, 8), Bits(b.ptr, 7, 0)}
		hdrBytes := []Expr{Bits(b.uLen, 15, 8), Bits(b.uLen, 7, 0)}
		out := make([]Expr, lanes)
		for i := 0; i < lanes; i++ {
			var octet Expr = Bits(b.shifted, 8*i+7, 8*i)
			if i >= 4 {
				octet = Sel(Bit(b.afterLanes, i), Bits(b.shifted, 8*(i-4)+7, 8*(i-4)), octet)
			}
			octet = Sel(Bit(class, i), octet, C(8, 0))
			switch i {
			case 0, 1:
				octet = Sel(And(b.first, Not(b.lead)), hdrBytes[i%2], octet)
			case 4, 5:
				octet = Sel(And(b.first, b.lead), hdrBytes[i%2], octet)
			}
			out[lanes-1-i] = Sel(Bit(b.mkLanes, i), mkBytes[i%4], octet)
		}
		return Cat(out...)
	}
	pre := m.WireOf("f_data_octets_pre", roomBelow(m, "data", b.roomData, b.nk, 8), "octets carrying ULPDU data, before the marker")
	mkOctets := m.WireOf("f_marker_octets", groupMask(b.mkHere, b.mkGroup, 8, func(g, lg int) bool { return lg == g }), "the marker's lanes, as octet masks")
	afterOctets := m.WireOf("f_after_octets", groupMask(b.mkHere, b.mkGroup, 8, func(g, lg int) bool { return lg > g }), "lanes after the marker, as octet masks")
	mkRep := make([]Expr, lanes/4)
	for g := range mkRep {
		mkRep[g] = Cat(Bits(b.ptr, 7, 0), Bits(b.ptr, 15, 8), C(16, 0))
	}
	lenOctets := Cat(Bits(b.uLen, 7, 0), Bits(b.uLen, 15, 8))
	hdrVal := Cat(C(width-48, 0), lenOctets, C(16, 0), lenOctets)
	hdrMask := Sel(b.first, Sel(b.lead, C(width, 0xFFFF<<32), C(width, 0xFFFF)), C(width, 0))
	body := And(pick(afterOctets, shiftLanes(b.shifted, 32), b.shifted), pick(afterOctets, shiftLanes(pre, 32), pre))
	return pick(mkOctets, Cat(mkRep...), pick(hdrMask, hdrVal, body))
}
