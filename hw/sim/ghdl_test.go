package sim

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const ghdlCycles = 100000

// The VHDL of crc32c at two widths, run by GHDL under the generated
// self-checking test bench, matches the cycle model's outputs on every
// cycle of the same stimulus the Verilator co-simulation uses.
func TestCRC32CGHDL(t *testing.T) {
	runGHDL(t, CRC32CBench, []int{64, 512}, ghdlCycles)
}

// mpa_tx's VHDL at two widths, the same way.
func TestMPATxGHDL(t *testing.T) {
	runGHDL(t, MPATxBench, []int{64, 128}, 30000)
}

func runGHDL(t *testing.T, bench func(int) (*Bench, error), widths []int, cycles int) {
	for _, w := range widths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			t.Parallel()
			b, err := bench(w)
			require.NoError(t, err)
			seed := seedFor(t.Name())
			v := newVectorFile(t)
			require.NoError(t, b.WriteVectors(v.f, seed, uint64(cycles)))
			assert.Equal(t, cycles, v.runGHDL(t, b, seed))
		})
	}
}

// vectorFile is a vector file for a GHDL run, written by a model
// (Bench.WriteVectors) or by a Verilated run whose outputs are the
// expected ones (CardTxTiming.Vectors, CardConfig.Vectors).
type vectorFile struct {
	f         *os.File
	dir, path string
}

func newVectorFile(t *testing.T) *vectorFile {
	dir := t.TempDir()
	path := filepath.Join(dir, "vectors.txt")
	f, err := os.Create(path)
	require.NoError(t, err)
	return &vectorFile{f: f, dir: dir, path: path}
}

// runGHDL closes the file (written and flushed) and runs b's VHDL on it;
// it returns the cycles checked.
func (v *vectorFile) runGHDL(t *testing.T, b *Bench, seed uint64) int {
	require.NoError(t, v.f.Close())
	res, err := b.RunGHDL(v.dir, v.path)
	require.NoError(t, err, "seed %d", seed)
	return res.Cycles
}

// A wrong expected value makes the GHDL run fail, naming cycle and port.
func TestGHDLCatchesMismatch(t *testing.T) {
	b, err := CRC32CBench(32)
	require.NoError(t, err)
	dir := t.TempDir()
	var buf bytes.Buffer
	require.NoError(t, b.WriteVectors(&buf, 3, 300))
	lines := strings.Split(buf.String(), "\n")
	// Corrupt the last field (m_axis_tvalid) of cycle 250.
	fields := strings.Fields(lines[250])
	last := len(fields) - 1
	if fields[last] == "0" {
		fields[last] = "1"
	} else {
		fields[last] = "0"
	}
	lines[250] = strings.Join(fields, " ")
	vec := filepath.Join(dir, "vectors.txt")
	require.NoError(t, os.WriteFile(vec, []byte(strings.Join(lines, "\n")), 0o644))
	_, err = b.RunGHDL(dir, vec)
	require.ErrorIs(t, err, ErrGHDL)
	assert.Contains(t, err.Error(), "cycle 250: port m_axis_tvalid: expected")
}
