package gen

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// markerDiv's constants divide every quotient the wire length needs.
func TestMarkerDiv(t *testing.T) {
	mul, sh := markerDiv()
	for x := uint64(0); x < 1<<16; x++ {
		require.Equal(t, x/508, (x>>2)*mul>>sh, "x=%d", x)
	}
}
