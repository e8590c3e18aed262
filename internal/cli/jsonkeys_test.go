package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJSONKeys(t *testing.T) {
	keys, err := JSONKeys([]byte(`{"kind":"fpdu","mpa":{"rev":1},"rows":[{"size":1},{"usec":2}]}
{"kind":"note","text":"x"}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"kind", "mpa", "mpa.rev", "rows", "rows[].size", "rows[].usec", "text"}, keys)

	_, err = JSONKeys([]byte(`{"stats":{"Cycles":1,"bytes_read":2,"msgRate":3}}`))
	assert.ErrorIs(t, err, ErrKeyCase)
	assert.ErrorContains(t, err, "stats.Cycles, stats.msgRate")

	_, err = JSONKeys([]byte(`{"a":1} {"b":`))
	assert.ErrorContains(t, err, "JSON value 2")
}

func TestJSONKeysOf(t *testing.T) {
	type inner struct {
		Rev  int  `json:"rev"`
		Skip bool `json:"-"`
	}
	type where struct {
		Conn int `json:"conn,omitempty"`
	}
	type sample struct {
		where
		Kind    string            `json:"kind"`
		Opt     *uint32           `json:"opt,omitempty"`
		Rows    []inner           `json:"rows,omitempty"`
		Named   inner             `json:"named"`
		Tags    map[string]string `json:"tags,omitempty"`
		private int
		inner
	}
	keys, err := JSONKeysOf(sample{})
	require.NoError(t, err)
	assert.Equal(t, []string{"conn", "kind", "named", "named.rev", "opt", "rev", "rows", "rows[].rev", "tags", "tags.key"}, keys)

	type bad struct{ BytesRead int }
	keys, err = JSONKeysOf(bad{})
	assert.ErrorIs(t, err, ErrKeyCase)
	assert.Equal(t, []string{"BytesRead"}, keys)
	_, err = JSONKeysOf(nil)
	assert.Error(t, err)
}
