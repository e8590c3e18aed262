package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "re-record the testdata captures and rewrite the golden outputs")

// iwdump runs the command in-process.
func iwdump(t testing.TB, stdin []byte, args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	code = run(args, bytes.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

func capturePath(name string) string { return filepath.Join("testdata", name+".pcap") }

// wantExit is the exit status each committed capture decodes with.
func wantExit(name string) int {
	if name == "bad-crc" {
		return 1
	}
	return 0
}

// TestGoldenOutputs decodes each committed capture, in JSON and in human
// form, and compares with the committed output. Run with -update after a
// deliberate change and review the diff.
func TestGoldenOutputs(t *testing.T) {
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			path := capturePath(sc.name)
			if *update {
				require.NoError(t, os.WriteFile(path, record(t, sc), 0o644))
			}
			for _, form := range []struct {
				ext  string
				args []string
			}{{".jsonl", []string{"-json", path}}, {".txt", []string{path}}} {
				out, stderr, code := iwdump(t, nil, form.args...)
				assert.Equal(t, wantExit(sc.name), code, "stderr: %s", stderr)
				golden := filepath.Join("testdata", sc.name+form.ext)
				if *update {
					require.NoError(t, os.WriteFile(golden, []byte(out), 0o644))
				}
				want, err := os.ReadFile(golden)
				require.NoError(t, err)
				assert.Equal(t, string(want), out, "iwdump %v differs from %s", form.args, golden)
			}
		})
	}
}

// TestCapturesReproducible re-records every scenario over a fresh TCP
// connection and checks the bytes equal the committed capture: the files
// are what the code in scenario_test.go produces, nothing edited by hand.
func TestCapturesReproducible(t *testing.T) {
	for _, sc := range scenarios() {
		want, err := os.ReadFile(capturePath(sc.name))
		require.NoError(t, err)
		got := record(t, sc)
		assert.True(t, bytes.Equal(want, got), "%s: re-recorded capture differs from %s (%d vs %d octets)", sc.name, capturePath(sc.name), len(got), len(want))
	}
}
