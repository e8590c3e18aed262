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
