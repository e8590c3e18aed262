package gen

import (
	"bytes"
	"errors"
	"hash/crc32"
	"math/big"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// The derived update matrix agrees with hash/crc32 for every beat size.
func TestCRC32CUpdateMatchesHashCRC32(t *testing.T) {
	seed := uint64(0x5eed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, n := range []int{1, 2, 3, 4, 8, 16, 64} {
		u := CRC32CUpdate(n)
		for i := 0; i < 20; i++ {
			reg := rng.Uint32()
			data := make([]byte, n)
			for j := range data {
				data[j] = byte(rng.Uint32())
			}
			// crc32.Update works on the inverted register.
			want := ^crc32.Update(^reg, castagnoli, data)
			require.Equal(t, want, u.Apply(reg, data), "seed %d bytes %d", seed, n)
		}
	}
}

// The block's algorithm, run in software: zero the unused lanes of the last
// beat, then multiply by Z^-p. It must give hash/crc32's answer for every
// frame length.
func TestLastBeatCorrection(t *testing.T) {
	zinv, ok := ZeroByteMatrix().Inverse()
	require.True(t, ok)
	assert.Equal(t, Identity32(), zinv.Mul(ZeroByteMatrix()))
	rng := rand.New(rand.NewPCG(7, 7))
	for _, lanes := range []int{4, 8, 64} {
		u := CRC32CUpdate(lanes)
		for n := 1; n <= 3*lanes; n++ {
			frame := make([]byte, n)
			for i := range frame {
				frame[i] = byte(rng.Uint32())
			}
			reg := uint32(0xFFFFFFFF)
			for off := 0; off < n; off += lanes {
				beat := make([]byte, lanes)
				k := copy(beat, frame[off:])
				reg = u.Apply(reg, beat)
				if off+lanes >= n {
					reg = zinv.Pow(lanes - k).Apply(reg)
				}
			}
			require.Equal(t, crc32.Checksum(frame, castagnoli), ^reg, "lanes %d length %d", lanes, n)
		}
	}
}

func TestResidueConstant(t *testing.T) {
	frame := []byte("123456789")
	c := crc32.Checksum(frame, castagnoli)
	require.Equal(t, uint32(0xE3069283), c)
	frame = append(frame, byte(c), byte(c>>8), byte(c>>16), byte(c>>24))
	assert.Equal(t, uint32(CRC32CResidue), ^crc32.Checksum(frame, castagnoli))
}

func TestCRC32CRejectsBadWidth(t *testing.T) {
	for _, w := range []int{0, 8, 16, 48, 96, 2048} {
		_, err := CRC32C(w)
		assert.ErrorIs(t, err, ErrInvalid, "width %d", w)
	}
}

func TestValidateReportsMistakes(t *testing.T) {
	cases := []struct {
		name  string
		build func(m *Module)
		want  string
	}{
		{"width", func(m *Module) { m.Assign(m.Output("y", 4, ""), C(3, 1)) }, "width 3 where 4"},
		{"undriven", func(m *Module) { m.Wire("w", 2, "") }, `wire "w" is never driven`},
		{"two drivers", func(m *Module) {
			y := m.Output("y", 1, "")
			m.Assign(y, C(1, 0))
			m.Assign(y, C(1, 1))
		}, "2 drivers"},
		{"reserved", func(m *Module) { m.Input("signal", 1, "") }, "reserved word"},
		{"bad name", func(m *Module) { m.Input("Data__x", 1, "") }, "portable identifier"},
		{"slice", func(m *Module) {
			a := m.Input("a", 4, "")
			m.Assign(m.Output("y", 1, ""), Bit(a, 4))
		}, "slice [4:4]"},
		{"mixed widths", func(m *Module) {
			a := m.Input("a", 4, "")
			m.Assign(m.Output("y", 4, ""), And(a, C(2, 1)))
		}, "different widths"},
		{"foreign", func(m *Module) {
			o := NewModule("other", "")
			m.Assign(m.Output("y", 1, ""), o.Input("z", 1, ""))
		}, "another module"},
		{"1-bit add", func(m *Module) {
			a := m.Input("a", 1, "")
			m.Assign(m.Output("y", 1, ""), Add(a, a))
		}, "arithmetic"},
		{"assign input", func(m *Module) { m.Assign(m.Input("a", 1, ""), C(1, 0)) }, "not a wire"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := NewModule("t", "")
			tc.build(m)
			err := m.Validate()
			require.ErrorIs(t, err, ErrInvalid)
			assert.Contains(t, err.Error(), tc.want)
			var b bytes.Buffer
			assert.Error(t, WriteVerilog(&b, m))
			assert.Error(t, WriteVHDL(&b, m))
		})
	}
}

// kitchenSink uses every IR feature: all operators, a memory, an instance.
func kitchenSink() (*Module, *Module) {
	leaf := NewModule("ks_leaf", "", "Adds one.")
	a := leaf.Input("a", 8, "")
	leaf.Assign(leaf.Output("y", 8, ""), Add(a, C(8, 1)))

	m := NewModule("ks_top", "none", "Exercises every IR feature.")
	m.Clock()
	rst := m.ResetPort()
	x := m.Input("x", 8, "operand")
	z := m.Input("z", 8, "operand")
	s := m.Input("s", 1, "select")
	leafY := m.Wire("leaf_y", 8, "")
	m.Instantiate("u_leaf", leaf, Conn{"a", x}, Conn{"y", leafY})
	cnt := m.RegDecl("cnt", 8, "counter")
	m.Drive(cnt, big.NewInt(0), Add(cnt, C(8, 1)), s)
	plain := m.Reg("plain", 8, nil, Sub(x, z), nil, "no reset, no enable")
	rd := m.Mem("ram", 8, 16, s, Bits(x, 3, 0), z, nil, Bits(z, 3, 0), "scratch")
	rd2 := m.Mem("ram2", 8, 16, s, Bits(x, 3, 0), z, rst, Bits(z, 3, 0), "read enable")
	flags := m.WireOf("flags", Cat(Eq(x, z), Ne(x, z), Lt(x, z), RedAnd(x), RedOr(z), RedXor(x), Sel(s, Bit(x, 0), Bit(z, 0)), Not(s)), "")
	m.Assign(m.Output("y", 8, "result"), Xor(Or(And(leafY, Not(cnt)), plain), Sel(s, rd, rd2), flags))
	m.Assign(m.Output("r", 16, ""), Cat(Rep(Bit(x, 7), 4), Bits(x, 7, 4), Ones(8)))
	m.Assign(m.Output("hot", 12, "one-hot"), Xor(Decode(Bits(z, 3, 0), 12), Decode(s, 12)))
	m.Assign(m.Output("pick", 3, "bit picks"), Cat(BitAt(x, Bits(z, 2, 0)), BitAt(x, Bits(z, 1, 0)), BitAt(flags, s)))
	return m, leaf
}

// Both emitters' output of every IR feature passes the project's linters.
func TestEmittersLintClean(t *testing.T) {
	for _, tool := range []string{"verilator", "ghdl"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "%s is needed (make tools installs it)", tool)
	}
	top, leaf := kitchenSink()
	dir := t.TempDir()
	var vfiles []string
	for _, m := range []*Module{leaf, top} {
		var v, h bytes.Buffer
		require.NoError(t, WriteVerilog(&v, m))
		require.NoError(t, WriteVHDL(&h, m))
		require.NoError(t, os.WriteFile(filepath.Join(dir, m.Name+".v"), v.Bytes(), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, m.Name+".vhd"), h.Bytes(), 0o644))
		vfiles = append(vfiles, m.Name+".v")
		out, err := exec.Command("ghdl", "-a", "--std=08", "--workdir="+dir, filepath.Join(dir, m.Name+".vhd")).CombinedOutput()
		require.NoError(t, err, "ghdl:\n%s", out)
	}
	cmd := exec.Command("verilator", append([]string{"--lint-only", "-Wall", "--top-module", "ks_top"}, vfiles...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "verilator:\n%s", out)
	out, err = exec.Command("ghdl", "-e", "--std=08", "--workdir="+dir, "ks_top").CombinedOutput()
	require.NoError(t, err, "ghdl -e:\n%s", out)
}

func TestVerilogReadable(t *testing.T) {
	m, err := CRC32C(64)
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, WriteVerilog(&b, m))
	v := b.String()
	for _, want := range []string{"// crc32c_w64", "Implements: RFC 5044 §4.4", "input  wire [63:0]    s_axis_tdata",
		"reg  [31:0]    crc_state", "crc_state <= b_last ? 32'hffffffff : crc_next;"} {
		assert.Contains(t, v, want)
	}
	for _, line := range strings.Split(v, "\n") {
		if strings.Contains(line, "localparam") {
			continue // matrix constants are one literal each
		}
		assert.LessOrEqual(t, len(line), 200, "line too long to read: %.60s...", line)
	}
}

func TestSimPortsSkipClock(t *testing.T) {
	m, err := CRC32C(32)
	require.NoError(t, err)
	ins, outs := SimPorts(m)
	var names []string
	for _, p := range append(ins, outs...) {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"rst", "s_axis_tdata", "s_axis_tkeep", "s_axis_tvalid", "s_axis_tlast", "m_axis_tready",
		"s_axis_tready", "m_axis_tdata", "m_axis_tuser", "m_axis_tvalid"}, names)
}

func TestBadExpressionIsAnError(t *testing.T) {
	m := NewModule("t", "")
	a := m.Input("a", 4, "")
	m.Assign(m.Output("y", 4, ""), Sel(a, a, a))
	assert.True(t, errors.Is(m.Validate(), ErrInvalid))
}

func TestTestbenchNeedsClock(t *testing.T) {
	m := NewModule("noclk", "")
	a := m.Input("a", 1, "")
	m.Assign(m.Output("y", 1, ""), a)
	var b bytes.Buffer
	assert.ErrorIs(t, WriteVHDLTestbench(&b, m), ErrInvalid)
	assert.ErrorIs(t, WriteSimGlue(&b, m), ErrInvalid)
}

// Decode sets the bit its operand names, and none for a value past its
// width, and BitAt picks one, in both emitters' words.
func TestDecodePrints(t *testing.T) {
	m := NewModule("dec", "", "")
	q := m.Input("q", 4, "")
	x := m.Input("x", 16, "")
	m.Assign(m.Output("y", 12, ""), Decode(q, 12))
	m.Assign(m.Output("b", 1, ""), BitAt(x, q))
	require.NoError(t, m.Validate())
	var v, h bytes.Buffer
	require.NoError(t, WriteVerilog(&v, m))
	require.NoError(t, WriteVHDL(&h, m))
	assert.Contains(t, v.String(), "assign y = {{11{1'b0}}, 1'b1} << q;")
	assert.Contains(t, h.String(), "y <= std_logic_vector(shift_left(to_unsigned(1, 12), to_integer(unsigned(q))));")
	assert.Contains(t, v.String(), "assign b = x[q];")
	assert.Contains(t, h.String(), "b <= x(to_integer(unsigned(q)));")
	_, isIndex := BitAt(x, Bits(q, 2, 0)).(Index)
	assert.False(t, isIndex, "a 3-bit index names half of 16 bits: the decode's form")
	assert.ErrorIs(t, exprErr(Decode(q, 0)), ErrInvalid)
}

// A channel's outputs are compared only while its valid is expected high:
// Qualifier finds the valid of AXI, AXI-Stream and record channels, and
// none for valids, readies and outputs of no channel.
func TestQualifier(t *testing.T) {
	m := NewModule("q", "", "")
	var outs []*Signal
	for _, n := range []string{"m_ev_valid", "m_ev_type", "m_ev_obj", "s_db_ready", "m_axi_awvalid", "m_axi_awaddr",
		"m_axi_wvalid", "m_axi_wdata", "m_axi_wlast", "m_axis_tvalid", "m_axis_tdata", "m_axi_bready", "stat_halt", "stat_halt_qpn"} {
		outs = append(outs, m.Output(n, 4, ""))
	}
	assert.Equal(t, map[string]string{
		"m_ev_type": "m_ev_valid", "m_ev_obj": "m_ev_valid", "m_axi_awaddr": "m_axi_awvalid",
		"m_axi_wdata": "m_axi_wvalid", "m_axi_wlast": "m_axi_wvalid", "m_axis_tdata": "m_axis_tvalid",
	}, Qualifier(outs))
}
