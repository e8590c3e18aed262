package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/internal/cli"
)

// iwdumpKeys pins, per "kind", every key an iwdump -json line can carry
// (docs/json.md lists them; a change here is a change for scripts).
var iwdumpKeys = map[string]struct {
	v    any
	keys []string
}{
	"connection": {connEvent{}, []string{"client", "conn", "frame", "initiator", "kind", "responder", "server", "syn"}},
	"request": {frameEvent{}, []string{"c", "conn", "dst", "enhanced", "frame", "from", "ird", "kind", "m", "note", "ord",
		"p2p", "pd_length", "private_data", "r", "res", "rev", "rtr", "src", "ulp_data"}},
	"negotiated": {negotiatedEvent{}, []string{"conn", "crc_enabled", "ddp_version", "frame", "kind", "markers_i2r", "markers_r2i", "rejected", "rev"}},
	"fpdu": {fpduEvent{}, []string{"conn", "crc", "crc_expected", "crc_field", "ddp_error", "ddp_version", "dst", "frame", "from",
		"inval_stag", "kind", "last", "markers", "mo", "msn", "offset", "opcode", "opcode_name", "payload_len", "qn",
		"rdmap_error", "rdmap_version", "read_size", "sink_stag", "sink_to", "src", "src_stag", "src_to", "stag", "tagged",
		"term_code", "term_code_name", "term_etype", "term_hdrs", "term_layer", "term_layer_name", "term_layout",
		"term_type_name", "to", "ulpdu", "ulpdu_length", "wire_len"}},
	"error": {errorEvent{}, []string{"code", "conn", "dst", "error", "frame", "from", "kind", "offset", "src"}},
	"note":  {noteEvent{}, []string{"conn", "dst", "frame", "from", "kind", "note", "src"}},
}

// The keys each event type can carry are exactly the pinned ones, all
// snake_case.
func TestJSONKeysPinned(t *testing.T) {
	for kind, e := range iwdumpKeys {
		got, err := cli.JSONKeysOf(e.v)
		require.NoError(t, err, kind)
		assert.Equal(t, e.keys, got, "kind %q", kind)
	}
}

// Every line iwdump printed for the committed captures uses only the keys
// pinned for its kind ("reply" is a "request"'s type).
func TestJSONOutputKeys(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	seen := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, ev := range events(t, string(data)) {
			kind, _ := ev["kind"].(string)
			if kind == "reply" {
				kind = "request"
			}
			want, ok := iwdumpKeys[kind]
			require.True(t, ok, "%s: unknown kind %q", f, ev["kind"])
			seen[kind] = true
			for k := range ev {
				assert.Contains(t, want.keys, k, "%s: %s line", f, kind)
			}
		}
	}
	for kind := range iwdumpKeys {
		assert.True(t, seen[kind], "no %s line in testdata", kind)
	}
}
