package gen

import "math/big"

// GF(2) linear algebra for CRC generators. A CRC update is linear in the
// register and the data, so every CRC circuit here is a set of XOR trees
// whose shape is derived at generation time by running the bit-serial
// algorithm symbolically.

// Castagnoli is the CRC32c polynomial, reflected (RFC 5044 §4.4, iSCSI).
const Castagnoli = 0x82F63B78

// Mat32 is a 32x32 matrix over GF(2): bit j of row i is set when output
// bit i depends on input bit j.
type Mat32 [32]uint32

// Identity32 is the identity matrix.
func Identity32() Mat32 {
	var m Mat32
	for i := range m {
		m[i] = 1 << i
	}
	return m
}

// Apply returns m·x.
func (m Mat32) Apply(x uint32) uint32 {
	var y uint32
	for i, row := range m {
		y |= uint32(parity32(row&x)) << i
	}
	return y
}

// Mul returns m·n (apply n first).
func (m Mat32) Mul(n Mat32) Mat32 {
	var p Mat32
	for i, row := range m {
		for j := 0; j < 32; j++ {
			if row>>j&1 == 1 {
				p[i] ^= n[j]
			}
		}
	}
	return p
}

// Pow returns m^k.
func (m Mat32) Pow(k int) Mat32 {
	p := Identity32()
	for ; k > 0; k >>= 1 {
		if k&1 == 1 {
			p = p.Mul(m)
		}
		m = m.Mul(m)
	}
	return p
}

// Inverse returns m^-1 by Gauss-Jordan elimination; ok is false when m is singular.
func (m Mat32) Inverse() (inv Mat32, ok bool) {
	a, inv := m, Identity32()
	for col := 0; col < 32; col++ {
		piv := -1
		for r := col; r < 32; r++ {
			if a[r]>>col&1 == 1 {
				piv = r
				break
			}
		}
		if piv < 0 {
			return Mat32{}, false
		}
		a[col], a[piv] = a[piv], a[col]
		inv[col], inv[piv] = inv[piv], inv[col]
		for r := 0; r < 32; r++ {
			if r != col && a[r]>>col&1 == 1 {
				a[r] ^= a[col]
				inv[r] ^= inv[col]
			}
		}
	}
	return inv, true
}

func parity32(x uint32) uint {
	x ^= x >> 16
	x ^= x >> 8
	x ^= x >> 4
	x ^= x >> 2
	x ^= x >> 1
	return uint(x & 1)
}

// CRCUpdate is the linear map of one CRC32c update over a beat of bytes:
// next register bit i = parity(Rows[i] & {data, register}), where bit j < 32
// of the operand is register bit j and bit 32+8*k+b is bit b of data byte k
// (byte 0 is processed first, bit 0 of each byte first: the reflected CRC).
type CRCUpdate struct {
	Bytes int
	Rows  [32]*big.Int
}

// CRC32CUpdate derives the update matrix for nbytes data bytes by running the
// bit-serial reflected CRC32c on symbolic bits.
func CRC32CUpdate(nbytes int) CRCUpdate {
	var s [32]*big.Int
	for i := range s {
		s[i] = new(big.Int).SetBit(new(big.Int), i, 1)
	}
	for k := 0; k < nbytes; k++ {
		for b := 0; b < 8; b++ {
			fb := new(big.Int).Set(s[0])
			fb.SetBit(fb, 32+8*k+b, fb.Bit(32+8*k+b)^1)
			var n [32]*big.Int
			for i := 0; i < 31; i++ {
				n[i] = s[i+1]
			}
			n[31] = new(big.Int)
			for i := 0; i < 32; i++ {
				if Castagnoli>>i&1 == 1 {
					n[i] = new(big.Int).Xor(n[i], fb)
				}
			}
			s = n
		}
	}
	return CRCUpdate{Bytes: nbytes, Rows: s}
}

// Split separates the data's rows (bit k of a data row: bit k of the data)
// from the register's rows, so that a circuit can compute and register the
// data's term apart from the feedback loop.
func (u CRCUpdate) Split() (dataRows, stateRows []*big.Int) {
	dataRows, stateRows = make([]*big.Int, 32), make([]*big.Int, 32)
	low := new(big.Int).SetUint64(0xFFFFFFFF)
	for i, row := range u.Rows {
		stateRows[i] = new(big.Int).And(row, low)
		dataRows[i] = new(big.Int).Rsh(row, 32)
	}
	return dataRows, stateRows
}

// Apply evaluates the update in software (for tests): the register after
// processing data (len(data) == u.Bytes) from register reg.
func (u CRCUpdate) Apply(reg uint32, data []byte) uint32 {
	x := new(big.Int)
	for k := len(data) - 1; k >= 0; k-- {
		x.Lsh(x, 8).Or(x, big.NewInt(int64(data[k])))
	}
	x.Lsh(x, 32).Or(x, new(big.Int).SetUint64(uint64(reg)))
	var y uint32
	t := new(big.Int)
	for i, row := range u.Rows {
		t.And(row, x)
		y |= uint32(popParity(t)) << i
	}
	return y
}

func popParity(x *big.Int) uint {
	var p uint
	for _, w := range x.Bits() {
		v := uint64(w)
		for v != 0 {
			p ^= 1
			v &= v - 1
		}
	}
	return p
}

// ZeroByteMatrix is the register map of one CRC32c update with a zero data
// byte (the register shifted through the polynomial eight times).
func ZeroByteMatrix() Mat32 {
	u := CRC32CUpdate(1)
	var m Mat32
	for i, row := range u.Rows {
		m[i] = uint32(row.Uint64() & 0xFFFFFFFF) // data bits are zero
	}
	return m
}
