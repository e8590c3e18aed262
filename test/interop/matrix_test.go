package interop

import (
	"os"
	"strings"
	"testing"

	"github.com/openiwarp/openiwarp/hw/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The matrix, as rendered and as committed, opens with the generated-file
// marker.
func TestMatrixMarked(t *testing.T) {
	m := Matrix([]Result{{Name: "x", Status: "pass"}})
	assert.True(t, gen.HasMarker("MATRIX.md", matrixGenerator, []byte(m)), "first line %q", strings.SplitN(m, "\n", 2)[0])
	committed, err := os.ReadFile("MATRIX.md")
	require.NoError(t, err)
	assert.True(t, gen.HasMarker("MATRIX.md", matrixGenerator, committed), "MATRIX.md's first line %q", strings.SplitN(string(committed), "\n", 2)[0])
}
