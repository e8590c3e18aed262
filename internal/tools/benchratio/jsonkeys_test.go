package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/internal/cli"
)

// benchratioKeys pins every key of benchratio -json (docs/json.md);
// "metrics.key" stands for the keys of map "metrics", the units go test
// prints ("cycles/s"), which are data rather than names.
var benchratioKeys = []string{"baseline", "baseline.mb_per_s", "baseline.metrics", "baseline.metrics.key", "baseline.name",
	"baseline.ns_per_op", "baseline.pkg", "mb_per_s", "metrics", "metrics.key", "name", "ns_per_op", "pkg", "ratio", "ratio_kind"}

func TestJSONKeysPinned(t *testing.T) {
	keys, err := cli.JSONKeysOf(row{})
	require.NoError(t, err)
	require.Equal(t, benchratioKeys, keys)
}
