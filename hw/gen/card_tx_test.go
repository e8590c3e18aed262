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
