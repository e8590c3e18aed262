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

// Every episode of both self-tests goes as it must in the model: the
// injected errors are the ones golden/mpa reports, at the corrupted FPDU.
func TestModelEpisodesAllGood(t *testing.T) {
	for _, cfg := range []gen.SelftestConfig{gen.SelftestHX8K, gen.SelftestTxHX8K} {
		m := New(cfg)
		for i := 0; i < 4096; i++ {
			e, err := m.Step()
			require.NoError(t, err)
			require.True(t, e.Good, "%s: episode %d: %+v", cfg.Name, i, e)
		}
		t.Logf("%s: %q", cfg.Name, m.Counters().Line())
	}
}

var update = flag.Bool("update", false, "rewrite testdata/uart-*.txt from the model")

// The committed expected UART output (shown in docs/fpga.md) is what the
// model prints: the first lines a person with the board sees.
func TestExpectedOutputCommitted(t *testing.T) {
	for _, c := range []struct {
		cfg  gen.SelftestConfig
		file string
	}{{gen.SelftestTxHX8K, "uart-tx-hx8k.txt"}, {gen.SelftestHX8K, "uart-hx8k.txt"}} {
		lines, err := New(c.cfg).Lines(8)
		require.NoError(t, err)
		text := strings.Join(lines, "")
		path := filepath.Join("testdata", c.file)
		if *update {
			require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, string(want), text, "%s: run go test ./fpga/selftest -update and commit", c.cfg.Name)
	}
}
