package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/openiwarp/openiwarp/hw/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The committed RTL is exactly what the generator produces today.
func TestGeneratedFilesUpToDate(t *testing.T) {
	rtl, ports := filepath.Join("..", "..", "hw", "rtl"), filepath.Join("..", "..", "hw", "sim", "ports")
	files, err := Files(rtl, ports)
	require.NoError(t, err)
	diffs, err := Check(files, rtl, ports)
	require.NoError(t, err)
	assert.Empty(t, diffs, "regenerate with `make hw-gen` and commit")
}

// -check notices a changed, a missing and a stray file; writing fixes them.
func TestCheckFindsDifferences(t *testing.T) {
	dir := t.TempDir()
	rtl, ports := filepath.Join(dir, "rtl"), filepath.Join(dir, "ports")
	require.NoError(t, os.MkdirAll(rtl, 0o755))
	require.NoError(t, os.MkdirAll(ports, 0o755))
	var out bytes.Buffer
	require.Equal(t, 0, run(&out, rtl, ports, false, false))
	require.Equal(t, 0, run(&out, rtl, ports, true, false))
	require.NoError(t, os.WriteFile(filepath.Join(rtl, "crc32c_w64.v"), []byte("edited\n"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(rtl, "crc32c_w32.vhd")))
	require.NoError(t, os.WriteFile(filepath.Join(rtl, "stray.v"), nil, 0o644))
	out.Reset()
	assert.Equal(t, 1, run(&out, rtl, ports, true, false))
	assert.Contains(t, out.String(), "differs: "+filepath.Join(rtl, "crc32c_w64.v"))
	assert.Contains(t, out.String(), "missing: "+filepath.Join(rtl, "crc32c_w32.vhd"))
	assert.Contains(t, out.String(), "not generated: "+filepath.Join(rtl, "stray.v"))
}

// Every file iwgen writes, RTL, port lists and register maps alike, opens
// with the generated-file marker of its language.
func TestEveryOutputMarked(t *testing.T) {
	old := RegMapRoot
	RegMapRoot = filepath.Join("..", "..")
	t.Cleanup(func() { RegMapRoot = old })
	files, err := Files("rtl", "ports")
	require.NoError(t, err)
	exts := map[string]int{}
	for _, f := range files {
		exts[filepath.Ext(f.Path)]++
		first, _, _ := bytes.Cut(f.Data, []byte("\n"))
		assert.True(t, gen.HasMarker(f.Path, gen.Generator, f.Data), "%s starts with %q", f.Path, first)
	}
	for _, e := range []string{".v", ".vhd", ".h", ".vh", ".md", ".go"} {
		assert.NotZero(t, exts[e], "no %s output checked", e)
	}
}

// iwgen takes flags only, in any order; an operand is a usage error
// whatever follows it, and -h after it still prints the usage.
func TestCommandLine(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	require.Equal(t, 0, command([]string{"-list", "-regmap-root", "", "-rtl", dir}, &out, &errb), errb.String())
	assert.Contains(t, out.String(), filepath.Join(dir, "crc32c_w64.v"))
	out.Reset()
	assert.Equal(t, 2, command([]string{"stray", "-list"}, &out, &errb))
	assert.Contains(t, errb.String(), `unexpected argument "stray"`)
	assert.Empty(t, out.String())
	errb.Reset()
	assert.Equal(t, 0, command([]string{"stray", "-h"}, &out, &errb))
	assert.Contains(t, errb.String(), "usage: iwgen")
	assert.Equal(t, 2, command([]string{"-rtl"}, &out, &errb))
	assert.Contains(t, errb.String(), "flag needs an argument: -rtl")
}
