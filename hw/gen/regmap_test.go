package gen

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The committed register reference and driver constants are what the map
// generates today (make hw-gen rewrites them).
func TestRegMapFilesUpToDate(t *testing.T) {
	files, err := RegMapFiles()
	require.NoError(t, err)
	require.Len(t, files, 8)
	for _, f := range files {
		old, err := os.ReadFile(filepath.Join("..", "..", f.Path))
		require.NoError(t, err, "%s missing: run `make hw-gen`", f.Path)
		assert.Equal(t, string(f.Data), string(old), "%s is stale: run `make hw-gen`", f.Path)
	}
}

func TestPlacementRegMapContents(t *testing.T) {
	rm := PlacementRegMap()
	require.NoError(t, rm.Validate())
	assert.Equal(t, uint32(0x2C), rm.Reg("STAG_COMMIT").Offset)
	assert.True(t, rm.Reg("STAG_COMMIT").Command)
	key := rm.Field("STAG_CTRL", "KEY")
	assert.Equal(t, 0, key.Lo)
	assert.Equal(t, uint32(0xFF), key.Mask())
	assert.Equal(t, 31, rm.Field("STAG_CTRL", "VALID").Lo)
	assert.Panics(t, func() { rm.Reg("NOPE") })
	assert.Panics(t, func() { rm.Field("STAG_CTRL", "NOPE") })

	var md, src strings.Builder
	require.NoError(t, WriteRegMapMarkdown(&md, rm))
	assert.Contains(t, md.String(), "| `0x2c` | `STAG_COMMIT` | command |")
	assert.Contains(t, md.String(), "| 31 | `VALID` |")
	require.NoError(t, WriteRegMapGo(&src, rm, "regs"))
	assert.Contains(t, src.String(), "StagCommit     = 0x2c")
	assert.Contains(t, src.String(), "StagCtrlValidShift  = 31")
}

func TestRegMapValidateRejects(t *testing.T) {
	for name, regs := range map[string][]Reg{
		"unaligned":   {{Name: "A", Offset: 2}},
		"outside":     {{Name: "A", Offset: 0x100}},
		"same offset": {{Name: "A", Offset: 4}, {Name: "B", Offset: 4}},
		"same name":   {{Name: "A", Offset: 4}, {Name: "A", Offset: 8}},
		"wide field":  {{Name: "A", Fields: []RegField{{Name: "F", Lo: 30, Width: 4}}}},
		"overlap":     {{Name: "A", Fields: []RegField{{Name: "F", Lo: 0, Width: 4}, {Name: "G", Lo: 3, Width: 2}}}},
	} {
		rm := &RegMap{Name: "t", AddrBits: 8, Regs: regs}
		err := rm.Validate()
		assert.ErrorIs(t, err, ErrInvalid, name)
		var b strings.Builder
		assert.Error(t, WriteRegMapGo(&b, rm, "x"), name)
		assert.Error(t, WriteRegMapMarkdown(&b, rm), name)
	}
}

// The RTL constants are legal Verilog and VHDL: Verilator lints a module
// that includes them, GHDL analyses the package.
func TestRegMapRTLConstants(t *testing.T) {
	dir := t.TempDir()
	var vh, vhd strings.Builder
	rm := PlacementRegMap()
	require.NoError(t, WriteRegMapVerilog(&vh, rm))
	require.NoError(t, WriteRegMapVHDL(&vhd, rm))
	assert.Contains(t, vh.String(), "localparam [7:0] PLACEMENT_STAG_COMMIT = 8'h2c;")
	assert.Contains(t, vh.String(), "localparam integer PLACEMENT_STAG_CTRL_VALID_LSB = 31;")
	assert.Contains(t, vhd.String(), `constant PLACEMENT_STAG_COMMIT : std_logic_vector(7 downto 0) := x"2c";`)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "regmap_placement.vh"), []byte(vh.String()), 0o644))
	top := "`default_nettype none\nmodule t (input wire [7:0] a, output wire y);\n`include \"regmap_placement.vh\"\n" +
		"    assign y = (a == PLACEMENT_STAG_COMMIT) && (PLACEMENT_STAG_CTRL_KEY_W == 8);\nendmodule\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "t.v"), []byte(top), 0o644))
	out, err := exec.Command("verilator", "--lint-only", "-Wall", "-Wno-UNUSEDPARAM", "-I"+dir, filepath.Join(dir, "t.v")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pkg.vhd"), []byte(vhd.String()), 0o644))
	out, err = exec.Command("ghdl", "-a", "--std=08", "--workdir="+dir, filepath.Join(dir, "pkg.vhd")).CombinedOutput()
	require.NoError(t, err, "%s", out)
}
