package main

import (
	"bytes"
	"log"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/host/ipoib"
	"github.com/openiwarp/openiwarp/internal/cli"
)

// Bad flags exit 2 before anything is created; -h exits 0.
func TestFlags(t *testing.T) {
	ok := []string{"-underlay", "198.18.0.1"}
	cases := []struct {
		name string
		args []string
		want int
	}{
		{"help", []string{"-h"}, 0},
		{"unknown flag", []string{"-nope"}, 2},
		{"no underlay", nil, 2},
		{"bad underlay", []string{"-underlay", "x"}, 2},
		{"bad addr", append(ok, "-addr", "198.19.0.1"), 2},
		{"bad flood", append(ok, "-flood", "nowhere"), 2},
		{"epid too big", append(ok, "-epid", "16777216"), 2},
		{"mtu too small", append(ok, "-mtu", "67"), 2},
		{"mtu too big", append(ok, "-mtu", "65536"), 2},
		{"recv-mtu too small", append(ok, "-recv-mtu", "71"), 2},
		{"bad sid", append(ok, "-sid", "ib"), 2},
		{"bad policy", append(ok, "-policy", "lax"), 2},
		{"depth too small", append(ok, "-depth", "2"), 2},
		// ipoibcm takes no operands: one is refused wherever the flags
		// are, and flags after it are still parsed (-h, a bad -mtu).
		{"operand", append([]string{"stray"}, ok...), 2},
		{"help after operand", []string{"stray", "-h"}, 0},
		{"bad flag after operand", []string{"stray", "-underlay", "198.18.0.1", "-mtu"}, 2},
		{"-- then flags as operands", append(ok, "--", "-mtu", "67"), 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, run(c.args))
		})
	}
}

// ipoibcmKeys pins every key of ipoibcm -json's counter lines (docs/json.md).
var ipoibcmKeys = []string{"conn_in", "conn_out", "connections", "credit_waits", "datagram_in", "datagram_out",
	"dropped", "sq_waits", "too_big", "tun_in", "tun_out"}

// report prints one JSON line per report with the pinned keys, and a log
// line without -json.
func TestReportJSON(t *testing.T) {
	keys, err := cli.JSONKeysOf(ipoib.Stats{})
	require.NoError(t, err)
	require.Equal(t, ipoibcmKeys, keys)

	var out, logs bytes.Buffer
	logger := log.New(&logs, "", 0)
	report(&out, ipoib.Stats{TUNIn: 3, Connections: 1}, logger, true)
	report(&out, ipoib.Stats{TUNIn: 4}, logger, true)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2)
	keys, err = cli.JSONKeys(out.Bytes())
	require.NoError(t, err)
	require.Equal(t, ipoibcmKeys, keys)
	assert.Contains(t, lines[0], `"tun_in":3`)
	assert.Empty(t, logs.String())

	out.Reset()
	report(&out, ipoib.Stats{TUNIn: 3}, logger, false)
	assert.Empty(t, out.String())
	assert.Contains(t, logs.String(), "stats: tun in 3")
}
