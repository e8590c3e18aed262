package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// iwping takes flags only, in any order; an operand is refused wherever it
// stands, with the flags around it parsed (a bad one after it is named).
func TestFlagsAroundOperands(t *testing.T) {
	o, err := parseFlags([]string{"-c", "-C", "3", "-a", "127.0.0.1", "-timeout", "5s", "-json"}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.True(t, o.client)
	assert.Equal(t, 3, o.count)
	assert.Equal(t, 5*time.Second, o.timeout)
	assert.True(t, o.json)

	_, err = parseFlags([]string{"stray", "-c", "-a", "127.0.0.1"}, &bytes.Buffer{})
	assert.ErrorContains(t, err, `unexpected argument "stray"`)
	_, err = parseFlags([]string{"-c", "stray", "-a", "127.0.0.1", "-rev", "3"}, &bytes.Buffer{})
	assert.ErrorContains(t, err, `unexpected argument "stray"`)
	_, err = parseFlags([]string{"stray", "-c", "-S"}, &bytes.Buffer{})
	assert.ErrorContains(t, err, "flag needs an argument: -S")

	code, _, stderr := client("stray", "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, stderr, "usage: iwping")
}
