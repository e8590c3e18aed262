package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUpdateReadmeReplacesOnlyTheSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "README.md")
	require.NoError(t, os.WriteFile(path, []byte("intro\n"+begin+"\nold table\n"+end+"\noutro\n"), 0o644))
	require.NoError(t, updateReadme(path, "new table\n"))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "intro\n"+begin+"\nnew table\n"+end+"\noutro\n", string(b))

	require.NoError(t, os.WriteFile(path, []byte("no markers\n"), 0o644))
	assert.Error(t, updateReadme(path, "x"))
}

func TestRenderTable(t *testing.T) {
	s := render([]row{{module: "crc32c_w64", xLUT: 10, xFF: 20, xDepth: 3, iLUT: 30, iFF: 20, iDepth: 4}},
		[]pnrResult{{module: "crc32c_w32", fmax: 101.25, lcs: "790/7680"}})
	assert.Contains(t, s, "| `crc32c_w64` | 10 | 20 | 3 | 30 | 20 | 4 |")
	assert.Contains(t, s, "| `crc32c_w32` | 790/7680 | 101.2 MHz |")
}

func TestCellCounts(t *testing.T) {
	stat := "   Number of cells:               1693\n     SB_DFFE                       144\n     SB_DFFESR                      37\n     SB_LUT4                      1480\n"
	luts, ffs := countCells(stat, `^SB_LUT4$`, `^SB_DFF[A-Z]*$`)
	assert.Equal(t, 1480, luts)
	assert.Equal(t, 181, ffs)
	xil := "     FDRE                          700\n     FDSE                           59\n     LUT1                            3\n     LUT6                         4000\n     MUXF7                          12\n"
	luts, ffs = countCells(xil, `^LUT\d$`, `^FD[A-Z]*$`)
	assert.Equal(t, 4003, luts)
	assert.Equal(t, 759, ffs)
	assert.Equal(t, []string{"7"}, ltpRE.FindStringSubmatch("Longest topological path in crc32c_w64 (length=7):")[1:])
}
