package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/internal/cli"
)

func TestDemoModel(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"-cards", "model", "-sizes", "0,1,4096,300000"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", out.String(), errb.String())
	require.Contains(t, out.String(), "RESULT: every byte verified on every card")
	require.Contains(t, out.String(), " model  RDMA Read       300000")
}

func TestDemoJSON(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"-json", "-cards", "model", "-sizes", "5"}, &out, &errb), errb.String())
	keys, err := cli.JSONKeys(out.Bytes())
	require.NoError(t, err)
	require.Equal(t, iwdemoKeys, keys, "every key is printed")
	dec := json.NewDecoder(&out)
	var doc struct{ Rows []Row }
	require.NoError(t, dec.Decode(&doc))
	require.Len(t, doc.Rows, 3)
	for _, r := range doc.Rows {
		require.True(t, r.Verified)
		require.Equal(t, 5, r.Size)
	}
}

func TestDemoBadCardFails(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 1, run([]string{"-cards", "nonesuch", "-sizes", "1"}, &out, &errb))
	require.Contains(t, errb.String(), "unknown card")
	require.Contains(t, out.String(), "RESULT: FAILED")
	require.Equal(t, 2, run([]string{"-sizes", "x"}, &out, &errb))
}

// Flags parse wherever they are; iwdemo takes no operands, and refuses one
// even when flags follow it.
func TestDemoArgs(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 2, run([]string{"stray", "-cards", "model", "-sizes", "1"}, &out, &errb))
	require.Contains(t, errb.String(), `unexpected argument "stray"`)
	errb.Reset()
	require.Equal(t, 0, run([]string{"stray", "-h"}, &out, &errb))
	require.Contains(t, errb.String(), "-sizes")
}

// iwdemoKeys pins every key of iwdemo -json (docs/json.md).
var iwdemoKeys = []string{"rows", "rows[].card", "rows[].mb_per_s", "rows[].op", "rows[].size", "rows[].usec",
	"rows[].verified", "rtl_cycles_checked", "rtl_dma_writes", "rtl_fpdus", "rtl_placed_segments"}

func TestJSONKeysPinned(t *testing.T) {
	keys, err := cli.JSONKeysOf(output{})
	require.NoError(t, err)
	require.Equal(t, iwdemoKeys, keys)
}
