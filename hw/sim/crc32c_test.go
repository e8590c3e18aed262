package sim

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/hw/gen"
)

var (
	cosimCycles = flag.Uint64("cosim.cycles", 1_000_000, "cycles per block and width")
	cosimSeed   = flag.Uint64("cosim.seed", 0, "seed (0: derived from the test name)")
)

func seedFor(name string) uint64 {
	if *cosimSeed != 0 {
		return *cosimSeed
	}
	var h uint64 = 14695981039346656037
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * 1099511628211
	}
	return h
}

// The RTL of every crc32c width matches the cycle model on every output of
// every cycle under random frames, gaps, backpressure and resets.
func TestCRC32CCosim(t *testing.T) {
	for _, w := range gen.CRC32CWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			b, err := CRC32CBench(w)
			require.NoError(t, err)
			seed := seedFor(t.Name())
			st, err := b.Run(seed, *cosimCycles)
			require.NoError(t, err, "seed %d (rerun with -cosim.seed=%d)", seed, seed)
			require.Equal(t, *cosimCycles, st.Cycles)
			// The stimulus really moved data: a good share of cycles accepted a beat.
			assert.Greater(t, st.Accepted["s_axis_tvalid"], st.Cycles/5, "seed %d", seed)
			t.Logf("%s: %d cycles, %.2f M cycles/s, %d beats accepted", b.Module.Name, st.Cycles,
				st.CyclesPerSecond()/1e6, st.Accepted["s_axis_tvalid"])
		})
	}
}

// brokenModel corrupts one output bit at one cycle: the harness must catch it,
// name the cycle and the port, and write a waveform.
type brokenModel struct {
	Model
	cycle, at uint64
	port      Port
}

func (m *brokenModel) Step(in, out []uint32) {
	m.Model.Step(in, out)
	if m.cycle == m.at {
		out[m.port.Offset] ^= 1
	}
	m.cycle++
}

func TestMismatchIsReported(t *testing.T) {
	for _, port := range []string{"m_axis_tdata", "s_axis_tready"} {
		t.Run(port, func(t *testing.T) {
			b, err := CRC32CBench(64)
			require.NoError(t, err)
			p, err := b.Layout.Out(port)
			require.NoError(t, err)
			good := b.NewModel
			const at = 12345
			b.NewModel = func() (Model, error) {
				m, err := good()
				return &brokenModel{Model: m, at: at, port: p}, err
			}
			_, err = b.Run(1, 20000)
			var mm *Mismatch
			require.True(t, errors.As(err, &mm), "got %v", err)
			assert.Equal(t, uint64(at), mm.Cycle)
			assert.Equal(t, port, mm.Port)
			assert.NotEqual(t, mm.Want, mm.Got)
			assert.Contains(t, err.Error(), fmt.Sprintf("cycle %d: port %s: expected", at, port))
			require.NoError(t, mm.TraceErr)
			vcd, err := os.ReadFile(mm.Waveform)
			require.NoError(t, err)
			assert.Contains(t, string(vcd), "$enddefinitions")
			assert.Contains(t, string(vcd), "m_axis_tdata")
			assert.True(t, strings.Contains(string(vcd), fmt.Sprintf("#%d", 2*at)), "waveform covers the failing cycle")
			require.NoError(t, os.Remove(mm.Waveform))
		})
	}
}

func TestLayoutMatchesLibrary(t *testing.T) {
	b, err := CRC32CBench(512)
	require.NoError(t, err)
	lib, err := Load(LibPath(b.Module.Name, false))
	require.NoError(t, err)
	assert.Equal(t, "crc32c_w512", lib.Name)
	// rst 1 + tdata 16 + tkeep 2 + tvalid 1 + tlast 1 + m_axis_tready 1
	assert.Equal(t, 22, lib.InWords)
	assert.Equal(t, b.Layout.InWords, lib.InWords)
	assert.Equal(t, 4, lib.OutWords)
	inst := lib.New()
	defer inst.Close()
	assert.Error(t, inst.Run(make([]uint32, 21), make([]uint32, 4)))
	assert.Error(t, inst.Run(make([]uint32, 44), make([]uint32, 4)))
	_, err = inst.RunCheck(make([]uint32, 44), make([]uint32, 7), make([]uint32, 4))
	assert.Error(t, err)
	_, err = inst.RunCheck(make([]uint32, 44), make([]uint32, 8), make([]uint32, 3))
	assert.Error(t, err)

	// RunCheck agrees with Run: it finds no difference with Run's outputs
	// for the same inputs, and the first cycle that differs, with the
	// block's outputs, once one expected word is changed.
	const cycles = 300
	in := make([]uint32, cycles*lib.InWords)
	drv := b.NewDriver(3)
	model, err := b.NewModel()
	require.NoError(t, err)
	out := make([]uint32, lib.OutWords)
	for c := 0; c < cycles; c++ {
		v := in[c*lib.InWords : (c+1)*lib.InWords]
		drv.Next(v)
		model.Step(v, out)
		drv.Observe(v, out)
	}
	want := make([]uint32, cycles*lib.OutWords)
	ref := lib.New()
	defer ref.Close()
	require.NoError(t, ref.Run(in, want))
	chk := lib.New()
	defer chk.Close()
	got := make([]uint32, lib.OutWords)
	c, err := chk.RunCheck(in[:100*lib.InWords], want, got)
	require.NoError(t, err)
	assert.Equal(t, -1, c)
	const at = 150
	right := slices.Clone(want[at*lib.OutWords : (at+1)*lib.OutWords])
	want[at*lib.OutWords+1] ^= 0x10
	c, err = chk.RunCheck(in[100*lib.InWords:], want[100*lib.OutWords:], got)
	require.NoError(t, err)
	assert.Equal(t, at-100, c)
	assert.Equal(t, right, got)
	assert.NotEqual(t, make([]uint32, cycles*lib.OutWords), want, "the block did something")

	_, err = Load("/nonexistent/lib.so")
	assert.ErrorIs(t, err, ErrLibrary)
}

func TestPortVectors(t *testing.T) {
	p := Port{Name: "d", Width: 72, Offset: 1, Words: 3}
	vec := make([]uint32, 4)
	p.SetBytes(vec, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9})
	assert.Equal(t, []uint32{0, 0x04030201, 0x08070605, 0x09}, vec)
	dst := make([]byte, 9)
	p.Bytes(vec, dst)
	assert.Equal(t, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, dst)
	assert.Equal(t, "72'h090807060504030201", p.Hex(vec))
	p.SetBytes(vec, []byte{0xAA, 0xBB})
	assert.Equal(t, []uint32{0, 0xBBAA, 0, 0}, vec, "lanes past the bytes are zeroed")
	if lanes := p.LaneBytes(vec); lanes != nil { // little-endian machines
		assert.Equal(t, []byte{0xAA, 0xBB, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, lanes)
	}
	p.Set(vec, 0x1122334455667788)
	assert.Equal(t, uint64(0x1122334455667788), p.Get(vec))
}
