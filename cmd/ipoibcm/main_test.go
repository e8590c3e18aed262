package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
