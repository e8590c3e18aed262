package gen

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCardTxBuilds(t *testing.T) {
	for _, w := range CardTxWidths {
		m, err := CardTx(w)
		require.NoError(t, err, "width %d", w)
		require.NotNil(t, m)
	}
}

// markerDiv's constants divide every quotient the wire length needs.
func TestMarkerDiv(t *testing.T) {
	mul, sh := markerDiv()
	for x := uint64(0); x < 1<<16; x++ {
		require.Equal(t, x/508, (x>>2)*mul>>sh, "x=%d", x)
	}
}
