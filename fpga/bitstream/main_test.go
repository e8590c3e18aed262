package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A board the build does not know is a usage error naming the known ones.
func TestUnknownBoard(t *testing.T) {
	var out, errb bytes.Buffer
	assert.Equal(t, 2, run([]string{"-board", "icebreaker"}, &out, &errb))
	assert.Contains(t, errb.String(), `unknown board "icebreaker" (known: hx8k)`)
	assert.Equal(t, 2, run([]string{"extra"}, &out, &errb))
	assert.Equal(t, 2, run([]string{"-nosuchflag"}, &out, &errb))
	_, err := lookup("icebreaker")
	assert.ErrorIs(t, err, ErrUnknownBoard)
}

func TestList(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"-list"}, &out, &errb))
	assert.Contains(t, out.String(), "hx8k   Lattice iCE40-HX8K breakout board")
}

// A missing tool stops the build before anything runs and names the Debian
// package that has it.
func TestMissingTool(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var out, errb bytes.Buffer
	assert.Equal(t, 1, run([]string{"-out", t.TempDir()}, &out, &errb))
	assert.Contains(t, errb.String(), "tool missing: yosys is not on PATH (Debian package yosys")
	_, err := tool("iceprog")
	assert.ErrorIs(t, err, ErrToolMissing)
	assert.Contains(t, err.Error(), "fpga-icestorm")
}

// -program without a built bitstream says to build it first; with one but
// no board on USB it says no board is attached (iceprog's own words are
// recognised).
func TestProgramErrors(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	assert.Equal(t, 1, run([]string{"-program", "-out", dir}, &out, &errb))
	assert.Contains(t, errb.String(), "no bitstream built")
	assert.Contains(t, errb.String(), "make bitstream BOARD=hx8k")

	// A fake iceprog that fails as the real one does without a board.
	bin := t.TempDir()
	fake := "#!/bin/sh\necho \"Can't find iCE FTDI USB device (vendor_id 0x0403, device_id 0x6010 or 0x6014).\"\nexit 2\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "iceprog"), []byte(fake), 0o755))
	t.Setenv("PATH", bin)
	b := Boards["hx8k"]
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "hx8k"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hx8k", b.Top+".bin"), []byte{0}, 0o644))
	errb.Reset()
	assert.Equal(t, 1, run([]string{"-program", "-out", dir}, &out, &errb))
	assert.Contains(t, errb.String(), "no board attached: iceprog found no Lattice iCE40-HX8K breakout board")
	err := load(b, filepath.Join(dir, "hx8k"), &out)
	assert.ErrorIs(t, err, ErrNoBoard)
}

// The timing check passes only when every clock reaches the board's.
func TestCheckTiming(t *testing.T) {
	report := filepath.Join(t.TempDir(), "r.json")
	require.NoError(t, os.WriteFile(report, []byte(`{"fmax": {"clk$SB_IO_IN_$glb_clk": {"achieved": 11.4, "constraint": 12.0}}, "utilization": {}}`), 0o644))
	fmax, err := readFmax(report)
	require.NoError(t, err)
	err = checkTiming(fmax, 12)
	require.ErrorIs(t, err, ErrTiming)
	assert.Contains(t, err.Error(), "reaches 11.40 MHz, the board needs 12 MHz; no bitstream written")
	assert.NoError(t, checkTiming(fmax, 11))
	assert.ErrorIs(t, checkTiming(nil, 12), ErrTiming)
	_, err = readFmax(filepath.Join(t.TempDir(), "none.json"))
	assert.Error(t, err)
	require.NoError(t, os.WriteFile(report, []byte(`{`), 0o644))
	_, err = readFmax(report)
	assert.Error(t, err)
}

func TestUtilisation(t *testing.T) {
	log := "Info: Device utilisation:\nInfo: \t         ICESTORM_LC:  9032/ 7680   117%\nERROR: Unable to place cell 'x', no BELs remaining\n"
	assert.Equal(t, "logic cells 9032/ 7680 117%", utilisation(log))
	assert.Equal(t, "placement failed", utilisation(""))
}

// End to end on the real tools: a design that cannot meet the clock asked
// for fails with ErrTiming and leaves no bitstream. The UART alone is small
// enough to place and route in seconds; asking 1 GHz of it cannot pass.
func TestTimingFailureEndToEnd(t *testing.T) {
	for _, tl := range []string{"yosys", "nextpnr-ice40", "icepack"} {
		if _, err := tool(tl); err != nil {
			t.Skip(err)
		}
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	t.Chdir(root)
	pcf := filepath.Join(t.TempDir(), "uart.pcf")
	require.NoError(t, os.WriteFile(pcf, []byte("set_io clk J3\nset_io tx B12\n"), 0o644))
	b := Board{Name: "uart", What: "test design", Device: []string{"--hx8k", "--package", "ct256", "--pcf-allow-unconstrained"},
		ClockMHz: 1000, Top: "uart_tx_d104", PCF: pcf}
	dir := t.TempDir()
	var out bytes.Buffer
	err = build(b, dir, 1, &out, &out)
	require.Error(t, err, out.String())
	assert.True(t, errors.Is(err, ErrTiming), "%v", err)
	assert.Contains(t, err.Error(), "the board needs 1000 MHz; no bitstream written")
	_, statErr := os.Stat(filepath.Join(dir, b.Top+".bin"))
	assert.True(t, os.IsNotExist(statErr), "a bitstream was left behind")
}
