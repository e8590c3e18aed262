package cycle

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Bytes sent back to back and with gaps come out of the decoder in order,
// each frame 10 x divisor + 1 cycles apart at most.
func TestUARTTxIntoRx(t *testing.T) {
	for _, div := range []int{2, 3, 104} {
		u, err := NewUARTTx(div)
		require.NoError(t, err)
		rx := UARTRx{Divisor: div}
		seed := uint64(div)
		rng := rand.New(rand.NewPCG(seed, 1))
		var sent, got []byte
		next, valid := byte(0), false
		for c := 0; c < 200*(10*div+1); c++ {
			if !valid && rng.IntN(4) == 0 {
				next, valid = byte(rng.Uint32()), true
			}
			o := u.Step(UARTTxIn{Data: next, Valid: valid})
			if valid && o.Ready {
				sent, valid = append(sent, next), false
			}
			b, ok, err := rx.Sample(o.TX)
			require.NoError(t, err, "divisor %d seed %d cycle %d", div, seed, c)
			if ok {
				got = append(got, b)
			}
		}
		require.Greater(t, len(sent), 100)
		assert.Equal(t, sent[:len(got)], got, "divisor %d seed %d", div, seed)
		assert.LessOrEqual(t, len(sent)-len(got), 1, "divisor %d: at most the last byte still on the line", div)
	}
}

// A frame whose stop bit is low is a framing error.
func TestUARTRxFramingError(t *testing.T) {
	rx := UARTRx{Divisor: 4}
	line := []bool{true, true}
	for i := 0; i < 10*4; i++ {
		line = append(line, false) // start, eight 0 bits, a 0 stop bit
	}
	var err error
	for _, l := range line {
		if _, _, e := rx.Sample(l); e != nil {
			err = e
		}
	}
	assert.True(t, errors.Is(err, ErrFraming), "got %v", err)
}

func TestUARTTxBadDivisor(t *testing.T) {
	for _, d := range []int{-1, 0, 1, 1<<16 + 1} {
		_, err := NewUARTTx(d)
		assert.ErrorIs(t, err, ErrConfig, "divisor %d", d)
	}
}
