//go:build cosim

package sim

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/cycle"
	"github.com/openiwarp/openiwarp/golden/mpa"
)

// The comparison is not vacuous: a model one octet out of step with the
// RTL is caught on the port that shows it, and the engine then refuses
// to run.
func TestCRCMismatchIsCaught(t *testing.T) {
	b, err := loadCRC(256)
	require.NoError(t, err)
	b.checked = new(atomic.Uint64)
	e, err := b.newEngine()
	require.NoError(t, err)
	defer e.Close()
	crc, ok, err := e.CRC([]byte("in step"))
	require.NoError(t, err)
	require.Equal(t, mpa.CRC32c([]byte("in step")), crc)
	require.False(t, ok)
	// The model alone takes one extra octet.
	e.model.Step(cycle.CRC32CIn{Data: make([]byte, 32), Keep: 1, Valid: true, MReady: true})
	_, _, err = e.CRC([]byte("out of step"))
	require.ErrorIs(t, err, ErrMismatch)
	require.Contains(t, err.Error(), "crc32c_w256")
	_, _, err = e.CRC([]byte("again"))
	require.ErrorIs(t, err, ErrMismatch, "a failed engine stays failed")
}

func TestMPATxMismatchIsCaught(t *testing.T) {
	b, err := loadTx(256)
	require.NoError(t, err)
	b.checked = new(atomic.Uint64)
	e, err := b.newEngine(0, true, true)
	require.NoError(t, err)
	defer e.Close()
	f := mpa.Framer{Markers: true, CRC: true}
	ulpdu := make([]byte, 1000)
	for i := range ulpdu {
		ulpdu[i] = byte(i)
	}
	want, err := f.AppendFPDU(nil, ulpdu)
	require.NoError(t, err)
	got, err := e.AppendFPDU(nil, ulpdu)
	require.NoError(t, err)
	require.Equal(t, want, got, "the RTL's FPDU is golden/mpa's")
	// Desynchronise: the model alone takes a beat of a ULPDU.
	e.model.Step(cycle.MPATxIn{Data: make([]byte, 32), Valid: true, Ctx: cycle.MPATxCtx{Offset: e.offset, Len: 40, CRC: true}, MReady: true})
	_, err = e.AppendFPDU(nil, ulpdu)
	require.ErrorIs(t, err, ErrMismatch)
	require.Contains(t, err.Error(), "mpa_tx_w256")
}
