package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Flags after the file decode exactly as flags before it; "--" lets a file
// whose name starts with "-" through.
func TestFlagsAfterOperands(t *testing.T) {
	path := capturePath("markers-crc")
	want, _, code := iwdump(t, nil, "-json", "-max-mem", "1000000", path)
	require.Equal(t, 0, code)
	for _, args := range [][]string{
		{path, "-json", "-max-mem", "1000000"},
		{"-json", path, "-max-mem=1000000"},
		{"-max-mem", "1000000", path, "--json"},
	} {
		got, stderr, code := iwdump(t, nil, args...)
		assert.Equal(t, 0, code, "%v: %s", args, stderr)
		assert.Equal(t, want, got, "iwdump %v", args)
	}

	dir := t.TempDir()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "-dash.pcap"), data, 0o644))
	t.Chdir(dir)
	got, stderr, code := iwdump(t, nil, "-json", "--", "-dash.pcap")
	assert.Equal(t, 0, code, stderr)
	assert.Equal(t, want, got)

	// A flag that needs the capture form is still refused after the file.
	_, stderr, code = iwdump(t, nil, "f", "-no-startup")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "-no-startup needs -stream")
	_, stderr, code = iwdump(t, nil, "f", "-max-mem")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "flag needs an argument: -max-mem")
}

// -stream decodes the same with its flags after the file.
func TestStreamFlagsAfterOperand(t *testing.T) {
	stream := []byte("\x00\x10abc")
	want, _, wantCode := iwdump(t, stream, "-stream", "-no-startup", "-crc=false", "-json", "-")
	got, _, code := iwdump(t, stream, "-", "-stream", "-no-startup", "-json", "-crc=false")
	assert.Equal(t, wantCode, code)
	assert.Equal(t, want, got)
}
