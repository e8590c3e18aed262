package gen

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlacementConfigErrors(t *testing.T) {
	for _, c := range []PlacementConfig{
		{Width: 32, TableDepth: 16, PBLDepth: 16},
		{Width: 1024, TableDepth: 16, PBLDepth: 16},
		{Width: 96, TableDepth: 16, PBLDepth: 16},
		{Width: 64, TableDepth: 12, PBLDepth: 16},
		{Width: 64, TableDepth: 16, PBLDepth: 1 << 17},
	} {
		_, err := Placement(c)
		assert.ErrorIs(t, err, ErrInvalid, "%+v", c)
	}
}

// Every shipped width builds, validates and prints in both languages, with
// the register map's offsets in its decoder and a small table too.
func TestPlacementBuilds(t *testing.T) {
	for _, cfg := range []PlacementConfig{PlacementDefault(64), PlacementDefault(512), {Width: 128, TableDepth: 16, PBLDepth: 16}} {
		m, err := Placement(cfg)
		require.NoError(t, err)
		var v, vhd strings.Builder
		require.NoError(t, WriteVerilog(&v, m))
		require.NoError(t, WriteVHDL(&vhd, m))
		assert.Contains(t, v.String(), "reg_wr_addr == 8'h2c") // STAG_COMMIT
		for _, p := range []string{"m_dma_addr", "m_host_tdata", "m_term_cause", "s_axis_tuser_len", "init_done"} {
			assert.NotNil(t, m.Port(p), p)
		}
	}
}
