//go:build cosim

package sim

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/cycle"
	"github.com/openiwarp/openiwarp/golden/mpa"
)

// The comparison is not vacuous: a model one beat out of step with the
// RTL is caught on the port that shows it, and the engine then refuses to
// run.
func TestMPARxMismatchIsCaught(t *testing.T) {
	b, err := loadRx(256)
	require.NoError(t, err)
	b.checked = new(atomic.Uint64)
	e, err := b.newEngine(cycle.MPARxCfg{Markers: true, CRC: true})
	require.NoError(t, err)
	defer e.Close()
	f := mpa.Framer{Markers: true, CRC: true}
	ulpdu := []byte("in step with the model")
	fpdu, err := f.AppendFPDU(nil, ulpdu)
	require.NoError(t, err)
	var got [][]byte
	require.NoError(t, e.Feed(fpdu, func(u mpa.ULPDU) error { got = append(got, append([]byte(nil), u.Data...)); return nil }))
	require.Equal(t, [][]byte{ulpdu}, got, "the RTL's ULPDU is golden/mpa's")
	// Desynchronise: the model alone takes a beat of the stream.
	e.model.Step(cycle.MPARxIn{Cfg: e.cfg, Data: make([]byte, 32), Keep: 0xF, Valid: true, MReady: true})
	f.Offset = uint32(len(fpdu))
	fpdu, err = f.AppendFPDU(nil, []byte("out of step"))
	require.NoError(t, err)
	err = e.Feed(fpdu, func(mpa.ULPDU) error { return nil })
	require.ErrorIs(t, err, ErrMismatch)
	require.Contains(t, err.Error(), "mpa_rx_w256")
	require.ErrorIs(t, e.Feed(fpdu, func(mpa.ULPDU) error { return nil }), ErrMismatch, "a failed engine stays failed")
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
