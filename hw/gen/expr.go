package gen

import (
	"fmt"
	"math/big"
)

// Expr is a combinational expression of a fixed width.
type Expr interface {
	Width() int
}

// Const is a constant of W bits.
type Const struct {
	W int
	V *big.Int
}

// Width implements Expr.
func (c Const) Width() int { return c.W }

// C is a constant of w bits with value v.
func C(w int, v uint64) Expr { return CBig(w, new(big.Int).SetUint64(v)) }

// CBig is a constant of w bits with value v (0 <= v < 2^w).
func CBig(w int, v *big.Int) Expr {
	if w < 1 || v.Sign() < 0 || v.BitLen() > w {
		return bad("constant %v does not fit in %d bits", v, w)
	}
	return Const{W: w, V: new(big.Int).Set(v)}
}

// Ones is the all-ones constant of w bits.
func Ones(w int) Expr {
	v := new(big.Int).Lsh(big.NewInt(1), uint(w))
	return CBig(w, v.Sub(v, big.NewInt(1)))
}

// Bad is an expression that could not be built; emitters report Err.
type Bad struct{ Err error }

// Width implements Expr.
func (Bad) Width() int { return 0 }

func bad(format string, a ...any) Expr {
	return Bad{fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))}
}

// Slice is bits Hi..Lo (inclusive) of a signal.
type Slice struct {
	X      *Signal
	Hi, Lo int
}

// Width implements Expr.
func (s Slice) Width() int { return s.Hi - s.Lo + 1 }

// Bits selects bits hi..lo of x. Only signals can be sliced (Verilog-2005
// cannot slice an expression): give an expression a name with WireOf first.
func Bits(x *Signal, hi, lo int) Expr {
	if lo < 0 || hi < lo || hi >= x.W {
		return bad("slice [%d:%d] of %s[%d:0]", hi, lo, x.Name, x.W-1)
	}
	if lo == 0 && hi == x.W-1 {
		return x
	}
	return Slice{X: x, Hi: hi, Lo: lo}
}

// Bit selects bit i of x.
func Bit(x *Signal, i int) Expr { return Bits(x, i, i) }

// Concat joins its parts, the first part in the most significant bits (as
// Verilog's {a, b}).
type Concat struct{ Parts []Expr }

// Width implements Expr.
func (c Concat) Width() int {
	w := 0
	for _, p := range c.Parts {
		w += p.Width()
	}
	return w
}

// Cat concatenates parts, most significant first.
func Cat(parts ...Expr) Expr {
	if len(parts) == 0 {
		return bad("empty concatenation")
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return Concat{Parts: parts}
}

// Repeat is N copies of a one-bit expression.
type Repeat struct {
	X Expr
	N int
}

// Width implements Expr.
func (r Repeat) Width() int { return r.N }

// Rep replicates the one-bit expression x n times.
func Rep(x Expr, n int) Expr {
	if x.Width() != 1 || n < 1 {
		return bad("replicate needs a one-bit expression and a positive count (got width %d, count %d)", x.Width(), n)
	}
	if n == 1 {
		return x
	}
	return Repeat{X: x, N: n}
}

// Op is an operator.
type Op int

// Operators. Reductions take one operand and give one bit; comparisons give
// one bit; the others keep the operands' width.
const (
	OpNot Op = iota
	OpRedAnd
	OpRedOr
	OpRedXor
	OpAnd
	OpOr
	OpXor
	OpAdd
	OpSub
	OpEq
	OpNe
	OpLt // unsigned
)

// Unary is a one-operand operation.
type Unary struct {
	Op Op
	X  Expr
}

// Width implements Expr.
func (u Unary) Width() int {
	if u.Op == OpNot {
		return u.X.Width()
	}
	return 1
}

// Binary is a two-operand operation on operands of equal width.
type Binary struct {
	Op   Op
	A, B Expr
}

// Width implements Expr.
func (b Binary) Width() int {
	switch b.Op {
	case OpEq, OpNe, OpLt:
		return 1
	}
	return b.A.Width()
}

// Decoded is the N-bit one-hot decode of X: bit i is set when X == i
// (no bit when X >= N). It prints as a shift of a one, which a simulator
// computes word by word where N equality compares would cost N steps a
// cycle; synthesis maps either to the same decoder.
type Decoded struct {
	X Expr
	N int
}

// Width implements Expr.
func (d Decoded) Width() int { return d.N }

// Decode is the n-bit one-hot decode of x (see Decoded).
func Decode(x Expr, n int) Expr {
	if n < 1 {
		return bad("decode to %d bits", n)
	}
	if x.Width() == 1 { // VHDL has no unsigned of a std_logic
		if n == 1 {
			return Not(x)
		}
		return zext(Cat(x, Not(x)), n)
	}
	return Decoded{x, n}
}

// Index is bit I of signal X, I an expression whose every value names a
// bit (X is 2^width(I) bits): a read port of a table kept in flops, one
// step for a simulator where an AND with a decode is X's width in steps.
type Index struct {
	X *Signal
	I Expr
}

// Width implements Expr.
func (Index) Width() int { return 1 }

// BitAt is bit i of x. Where x is not 2^width(i) bits (i could name no
// bit, or not every bit), or i is one bit (VHDL has no unsigned of a
// std_logic), it is the OR of x masked by i's decode.
func BitAt(x *Signal, i Expr) Expr {
	if i.Width() < 2 || i.Width() > 30 || x.W != 1<<i.Width() {
		return RedOr(And(x, Decode(i, x.W)))
	}
	return Index{x, i}
}

// Mux is Sel ? T : F.
type Mux struct{ Sel, T, F Expr }

// Width implements Expr.
func (m Mux) Width() int { return m.T.Width() }

// Not is the bitwise complement.
func Not(x Expr) Expr { return Unary{OpNot, x} }

// RedXor is the XOR of all bits of x (parity).
func RedXor(x Expr) Expr { return Unary{OpRedXor, x} }

// RedOr is 1 when any bit of x is 1.
func RedOr(x Expr) Expr { return Unary{OpRedOr, x} }

// RedAnd is 1 when every bit of x is 1.
func RedAnd(x Expr) Expr { return Unary{OpRedAnd, x} }

func binary(op Op, a, b Expr) Expr {
	if a.Width() != b.Width() {
		return bad("operands of different widths (%d and %d)", a.Width(), b.Width())
	}
	return Binary{op, a, b}
}

// And is the bitwise AND of operands of the same width (more than two fold left).
func And(a, b Expr, more ...Expr) Expr { return fold(OpAnd, a, b, more) }

// Or is the bitwise OR.
func Or(a, b Expr, more ...Expr) Expr { return fold(OpOr, a, b, more) }

// Xor is the bitwise XOR.
func Xor(a, b Expr, more ...Expr) Expr { return fold(OpXor, a, b, more) }

func fold(op Op, a, b Expr, more []Expr) Expr {
	e := binary(op, a, b)
	for _, x := range more {
		e = binary(op, e, x)
	}
	return e
}

// Add is a + b modulo 2^width (width at least 2).
func Add(a, b Expr) Expr { return arith(OpAdd, a, b) }

// Sub is a - b modulo 2^width (width at least 2).
func Sub(a, b Expr) Expr { return arith(OpSub, a, b) }

// arith is an unsigned operation; one-bit operands are refused because VHDL
// has no unsigned view of a std_logic.
func arith(op Op, a, b Expr) Expr {
	if a.Width() < 2 {
		return bad("arithmetic on %d-bit operands (use Xor/And for one bit)", a.Width())
	}
	return binary(op, a, b)
}

// Eq is 1 when a == b.
func Eq(a, b Expr) Expr { return binary(OpEq, a, b) }

// Ne is 1 when a != b.
func Ne(a, b Expr) Expr { return binary(OpNe, a, b) }

// Lt is 1 when a < b (unsigned).
func Lt(a, b Expr) Expr { return arith(OpLt, a, b) }

// Sel is sel ? t : f, for a one-bit sel.
func Sel(sel, t, f Expr) Expr {
	if sel.Width() != 1 {
		return bad("mux select of width %d", sel.Width())
	}
	if t.Width() != f.Width() {
		return bad("mux arms of different widths (%d and %d)", t.Width(), f.Width())
	}
	return Mux{sel, t, f}
}

// exprErr returns the first error inside e.
func exprErr(e Expr) error {
	switch x := e.(type) {
	case nil:
		return fmt.Errorf("%w: missing expression", ErrInvalid)
	case Bad:
		return x.Err
	case Concat:
		for _, p := range x.Parts {
			if err := exprErr(p); err != nil {
				return err
			}
		}
	case Repeat:
		return exprErr(x.X)
	case Decoded:
		return exprErr(x.X)
	case Index:
		return exprErr(x.I)
	case Unary:
		return exprErr(x.X)
	case Binary:
		if err := exprErr(x.A); err != nil {
			return err
		}
		return exprErr(x.B)
	case Mux:
		for _, p := range []Expr{x.Sel, x.T, x.F} {
			if err := exprErr(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// visitSignals calls fn for every signal read by e.
func visitSignals(e Expr, fn func(*Signal)) {
	switch x := e.(type) {
	case *Signal:
		fn(x)
	case Slice:
		fn(x.X)
	case Concat:
		for _, p := range x.Parts {
			visitSignals(p, fn)
		}
	case Repeat:
		visitSignals(x.X, fn)
	case Decoded:
		visitSignals(x.X, fn)
	case Index:
		fn(x.X)
		visitSignals(x.I, fn)
	case Unary:
		visitSignals(x.X, fn)
	case Binary:
		visitSignals(x.A, fn)
		visitSignals(x.B, fn)
	case Mux:
		visitSignals(x.Sel, fn)
		visitSignals(x.T, fn)
		visitSignals(x.F, fn)
	}
}
