package cardserve

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An interrupt with no ivshmem guest connected, or for a vector the guest
// did not set up, is lost, counted and reported.
func TestInterruptWithoutGuest(t *testing.T) {
	var got []error
	s, err := New(Config{Card: Model(64), Report: func(err error) { got = append(got, err) }})
	require.NoError(t, err)
	defer s.Close()
	(*host)(s).Interrupt(0)
	assert.EqualValues(t, 1, s.Stats().InterruptsLost)
	require.Len(t, got, 1)
	assert.ErrorIs(t, got[0], ErrNoGuest)
	assert.ErrorContains(t, got[0], "vector 0 (0 set up)")
	assert.ErrorIs(t, s.LastError(), ErrNoGuest)
}

func TestConfigRequired(t *testing.T) {
	_, err := New(Config{})
	assert.ErrorContains(t, err, "Config.Card is required")
	_, err = New(Config{Card: Model(64), Vectors: 65})
	assert.ErrorContains(t, err, "65 interrupt vectors")
}
