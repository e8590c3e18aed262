package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	s := render([]row{{Module: "crc32c_w64", XLUT: 10, XFF: 20, XRAM: 1, XDepth: 3, ILUT: 30, IFF: 20, IRAM: 2, IDepth: 4}},
		[]pnrResult{{module: "crc32c_w32", fmax: 101.25, lcs: "790/7680"}})
	assert.Contains(t, s, "| `crc32c_w64` | 10 | 20 | 1 | 3 | 30 | 20 | 2 | 4 |")
	assert.Contains(t, s, "| `crc32c_w32` | 790/7680 | 101.2 MHz |")
}

func TestCellCounts(t *testing.T) {
	stat := "   Number of cells:               1693\n     SB_DFFE                       144\n     SB_DFFESR                      37\n     SB_LUT4                      1480\n"
	assert.Equal(t, []int{1480, 181, 0}, countCells(stat, `^SB_LUT4$`, `^SB_DFF[A-Z]*$`, `^SB_RAM40_4K$`))
	xil := "     FDRE                          700\n     FDSE                           59\n     LUT1                            3\n     LUT6                         4000\n     MUXF7                          12\n"
	assert.Equal(t, []int{4003, 759}, countCells(xil, `^LUT\d$`, `^FD[A-Z]*$`))
}

// levels counts LUTs, not nodes: a -> LUT -> x -> LUT -> r is two levels;
// a memory ends the paths into it and starts the paths from its read data.
func TestLevels(t *testing.T) {
	const nl = `{"modules": {"t": {
  "ports": {"a": {"direction": "input", "bits": [2]}, "y": {"direction": "output", "bits": [6]}},
  "cells": {
    "l1": {"type": "$lut", "connections": {"A": [2], "Y": [3]}},
    "l2": {"type": "$lut", "connections": {"A": [3, 4, "0"], "Y": [6]}},
    "f1": {"type": "$_DFFE_PP_", "connections": {"C": [7], "D": [6], "E": [2], "Q": [4]}},
    "$auto$m$ram": {"type": "$mem_v2", "connections": {"WR_DATA": [3], "RD_CLK": [7], "RD_DATA": [8]}},
    "l3": {"type": "$lut", "connections": {"A": [8], "Y": [9]}},
    "f2": {"type": "$_DFF_P_", "connections": {"C": [7], "D": [9], "Q": [10]}}
  },
  "netnames": {"a": {"hide_name": 0, "bits": [2]}, "x": {"hide_name": 0, "bits": [3]}, "r": {"hide_name": 0, "bits": [4]},
    "y": {"hide_name": 0, "bits": [6]}, "ram_rd": {"hide_name": 0, "bits": [8]}, "r2": {"hide_name": 0, "bits": [10]},
    "$abc$1": {"hide_name": 1, "bits": [9]}}
}}}`
	eps, err := levels(strings.NewReader(nl), "t", 0)
	require.NoError(t, err)
	got := map[string]int{}
	for _, e := range eps {
		got[e.Name] = e.Depth
		if e.Name == "r" {
			assert.Equal(t, []string{"a", "x", "y"}, e.Path)
		}
	}
	assert.Equal(t, map[string]int{"r": 2, "y": 2, "ram": 1, "r2": 1}, got)
	_, err = levels(strings.NewReader(nl), "other", 0)
	assert.Error(t, err)
}

func TestWrapper(t *testing.T) {
	src := "// a comment);\nmodule x (\n    input  wire           clk,  // c\n    input  wire [3:0]     a,\n    output wire           y,\n    output wire [1:0]     z\n);\nendmodule\n"
	ps := modulePorts(src)
	require.Equal(t, []port{{true, "clk", 1}, {true, "a", 4}, {false, "y", 1}, {false, "z", 2}}, ps)
	v, err := wrapper("x", ps)
	require.NoError(t, err)
	assert.Contains(t, v, "module x_pnr (input wire clk, input wire din, output wire dout);")
	assert.Contains(t, v, ".a(si[3:0])")
	assert.Contains(t, v, ".z(so_d[2:1])")
	assert.Contains(t, v, "so <= si[4] ? so_d")
	assert.Equal(t, []string{"a"}, fitting([]row{{Module: "a", ILUT: 7000, IFF: 7680}, {Module: "b", ILUT: 8000}, {Module: "c", IRAM: 33}}))
	_, err = wrapper("x", ps[:2])
	assert.Error(t, err)
}

// Of two equally deep paths into r (through x or through w), levels
// reports the same one every time: Go's map order must not choose.
func TestLevelsDeterministic(t *testing.T) {
	const nl = `{"modules": {"t": {
  "ports": {"a": {"direction": "input", "bits": [2]}, "b": {"direction": "input", "bits": [3]}},
  "cells": {
    "l1": {"type": "$lut", "connections": {"A": [2], "Y": [4]}},
    "l2": {"type": "$lut", "connections": {"A": [3], "Y": [5]}},
    "f1": {"type": "$_DFFE_PP_", "connections": {"C": [7], "D": [4], "E": [5], "Q": [6]}}
  },
  "netnames": {"a": {"hide_name": 0, "bits": [2]}, "b": {"hide_name": 0, "bits": [3]}, "x": {"hide_name": 0, "bits": [4]},
    "w": {"hide_name": 0, "bits": [5]}, "r": {"hide_name": 0, "bits": [6]}, "q": {"hide_name": 0, "bits": [6]}}
}}}`
	first, err := levels(strings.NewReader(nl), "t", 0)
	require.NoError(t, err)
	require.Len(t, first, 1)
	for i := 0; i < 50; i++ {
		eps, err := levels(strings.NewReader(nl), "t", 0)
		require.NoError(t, err)
		require.Equal(t, first, eps, "run %d", i)
	}
}

// A cached row is keyed by the flow as well as the RTL: another yosys or
// another script measures again.
func TestRowKeyFollowsFlow(t *testing.T) {
	t.Chdir("../..")
	a, err := rtlKey("crc32c_w32", rowFlow("crc32c_w32"))
	require.NoError(t, err)
	again, err := rtlKey("crc32c_w32", rowFlow("crc32c_w32"))
	require.NoError(t, err)
	other, err := rtlKey("crc32c_w32", rowFlow("crc32c_w32")+" -nowidelut")
	require.NoError(t, err)
	assert.Equal(t, a, again)
	assert.NotEqual(t, a, other)
	_, err = rtlKey("no_such_module", "")
	assert.Error(t, err)
}

func TestParallel(t *testing.T) {
	t.Run("every index once, at most jobs at once", func(t *testing.T) {
		for _, jobs := range []int{1, 2, 3, 16} {
			var mu sync.Mutex
			seen := map[int]int{}
			running, most := 0, 0
			err := parallel(10, jobs, func(i int) error {
				mu.Lock()
				seen[i]++
				running++
				most = max(most, running)
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				running--
				mu.Unlock()
				return nil
			})
			require.NoError(t, err)
			require.Len(t, seen, 10)
			for i := 0; i < 10; i++ {
				require.Equal(t, 1, seen[i], "index %d", i)
			}
			require.LessOrEqual(t, most, jobs)
		}
	})
	t.Run("the lowest failed index's error, none started after", func(t *testing.T) {
		var started atomic.Int32
		errA, errB := errors.New("a"), errors.New("b")
		err := parallel(100, 1, func(i int) error {
			started.Add(1)
			switch i {
			case 3:
				return errB
			case 1:
				return errA
			}
			return nil
		})
		require.ErrorIs(t, err, errA)
		require.EqualValues(t, 2, started.Load(), "one job: index 1 fails, nothing after it starts")
	})
	t.Run("no work", func(t *testing.T) {
		require.NoError(t, parallel(0, 4, func(int) error { panic("called") }))
	})
}
