package gen

import (
	"fmt"
	"math/big"
)

// Queue is a small in-order queue of registers: entry 0 is the head.
type Queue struct {
	Count  *Signal     // entries held
	Fields [][]*Signal // Fields[i][f]: field f of entry i
}

// ShiftQueue builds a queue of depth entries, each holding the given fields
// (names and widths). Each cycle it drops pop entries from the head (pop is
// 0..depth-1, an expression of Count's width) and, when push is 1, appends
// data (one expression per field) after the entries that remain. The caller
// keeps push off when the queue is full and pop at most Count.
func ShiftQueue(m *Module, name string, depth int, names []string, widths []int, push Expr, data []Expr, pop Expr) Queue {
	cw := addrWidth(depth + 1)
	q := queueRegs(m, name, depth, names, widths)
	wpos := m.WireOf(name+"_wpos", Sub(q.Count, pop), "where a pushed entry goes")
	m.Drive(q.Count, big.NewInt(0), Add(wpos, Cat(C(cw-1, 0), push)), nil)
	for i := 0; i < depth; i++ {
		here := m.WireOf(fmt.Sprintf("%s%d_push", name, i), And(push, Eq(wpos, C(cw, uint64(i)))), "")
		for k := range names {
			// After popping p entries, entry i holds what entry i+p held.
			var shifted Expr = q.Fields[i][k]
			for p := depth - 1 - i; p >= 1; p-- {
				shifted = Sel(Eq(pop, C(cw, uint64(p))), q.Fields[i+p][k], shifted)
			}
			m.Drive(q.Fields[i][k], nil, Sel(here, data[k], shifted), nil)
		}
	}
	return q
}

// queueRegs declares a queue's count and entry registers (entry i's field
// n is name<i>_<n>); the queue's builder drives them.
func queueRegs(m *Module, name string, depth int, names []string, widths []int) Queue {
	q := Queue{Count: m.RegDecl(name+"_count", addrWidth(depth+1), "entries held in "+name)}
	for i := 0; i < depth; i++ {
		var f []*Signal
		for k, n := range names {
			f = append(f, m.RegDecl(fmt.Sprintf("%s%d_%s", name, i, n), widths[k], ""))
		}
		q.Fields = append(q.Fields, f)
	}
	return q
}

// LatePopQueue is ShiftQueue for a pop that comes late in the cycle: each
// entry's candidates (what it holds after 0, 1, ... pops, a push landing in
// it included) are formed from the state, push and data alone, and pop only
// picks one, one select deep. pop is 0..depth-1, an expression of Count's
// width. The caller pushes only while Count < depth, best decided on state
// alone (keeping a producer's logic free of the consumer's), and pops at
// most Count; a push and a pop in the same cycle keep one entry per cycle
// flowing.
func LatePopQueue(m *Module, name string, depth int, names []string, widths []int, push Expr, data []Expr, pop Expr) Queue {
	cw := addrWidth(depth + 1)
	q := queueRegs(m, name, depth, names, widths)
	c := q.Count
	popW := m.WireOf(name+"_pop_n", pop, "entries popped this cycle")
	sel := selBits(popW, 0, cw)
	pushAt := make([]Expr, 2*depth) // pushAt[n]: a push with n entries held
	for n := 0; n <= depth && n < len(pushAt); n++ {
		pushAt[n] = m.WireOf(fmt.Sprintf("%s_push_at%d", name, n), And(push, Eq(c, C(cw, uint64(n)))), "")
	}
	for i := 0; i < depth; i++ {
		for k := range names {
			var cands []Expr
			for p := 0; p < 1<<cw; p++ {
				pp := min(p, depth-1) // pop values past depth-1 do not occur
				var cand Expr = data[k]
				if i+pp < depth {
					cand = q.Fields[i+pp][k]
				}
				// After pp pops, a push lands in entry i when i+pp were held.
				if i+pp <= depth {
					cand = Sel(pushAt[i+pp], data[k], cand)
				}
				cands = append(cands, cand)
			}
			m.Drive(q.Fields[i][k], nil, muxTree(sel, cands), nil)
		}
	}
	var counts []Expr
	for p := 0; p < 1<<cw; p++ {
		pp := C(cw, uint64(min(p, depth-1)))
		counts = append(counts, Sel(push, Add(Sub(c, pp), C(cw, 1)), Sub(c, pp)))
	}
	m.Drive(c, big.NewInt(0), muxTree(sel, counts), nil)
	return q
}

// LatePopQueue2 is ShiftQueue's two-entry case for a one-bit pop that comes
// late in the cycle: pop reaches the registers through one select (entry 1
// takes every push: when that is not its place the data is not counted).
// The caller pushes only while Count < 2, best decided on state alone
// (keeping a producer's logic free of the consumer's), and pops only while
// Count > 0; a push and a pop in the same cycle keep one entry per cycle
// flowing.
func LatePopQueue2(m *Module, name string, names []string, widths []int, push Expr, data []Expr, pop Expr) Queue {
	q := queueRegs(m, name, 2, names, widths)
	c := q.Count
	// Entry 0 takes the pushed data when the queue is empty or its only
	// entry leaves, entry 1 when popped, else it stays.
	takeNew := m.WireOf(name+"_take_new", Or(Eq(c, C(2, 0)), And(Eq(c, C(2, 1)), pop)), "")
	for k := range names {
		m.Drive(q.Fields[0][k], nil, Sel(takeNew, data[k], Sel(pop, q.Fields[1][k], q.Fields[0][k])), nil)
		m.Drive(q.Fields[1][k], nil, data[k], push)
	}
	one := C(2, 1)
	m.Drive(c, big.NewInt(0), Sel(pop, Sel(push, c, Sub(c, one)), Sel(push, Add(c, one), c)), nil)
	return q
}
