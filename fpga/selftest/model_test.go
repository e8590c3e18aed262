package selftest

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openiwarp/openiwarp/hw/gen"
	"github.com/stretchr/testify/require"
)

func TestModelEpisodesAllGood(t *testing.T) {
	m := New(gen.SelftestHX8K)
	for i := 0; i < 4096; i++ {
		e, err := m.Step()
		require.NoError(t, err)
		require.True(t, e.Good, "episode %d: %+v", i, e)
	}
	t.Logf("%q", m.Counters().Line())
}

var update = flag.Bool("update", false, "rewrite testdata/uart-hx8k.txt from the model")

// The committed expected UART output (shown in docs/fpga.md) is what the
// model prints: the first lines a person with the board sees.
func TestExpectedOutputCommitted(t *testing.T) {
	lines, err := New(gen.SelftestHX8K).Lines(8)
	require.NoError(t, err)
	text := strings.Join(lines, "")
	path := filepath.Join("testdata", "uart-hx8k.txt")
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), text, "run go test ./fpga/selftest -update and commit")
}
