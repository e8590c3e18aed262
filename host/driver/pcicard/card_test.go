package pcicard

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/vfio"
)

func TestParseArg(t *testing.T) {
	for _, tc := range []struct {
		arg, addr, irq, bad string
	}{
		{arg: "0000:00:03.0", addr: "0000:00:03.0"},
		{arg: "0000:00:03.0,irq=0000:00:04.0", addr: "0000:00:03.0", irq: "0000:00:04.0"},
		{arg: "", bad: "needs a PCI address"},
		{arg: ",irq=0000:00:04.0", bad: "needs a PCI address"},
		{arg: "0000:00:03.0,irq=", bad: "irq= needs a PCI address"},
		{arg: "0000:00:03.0,irq=0000:00:04.0,irq=0000:00:05.0", bad: "given twice"},
		{arg: "0000:00:03.0,msi=1", bad: `option "msi=1" unknown`},
		{arg: "0000:00:03.0,", bad: `option "" unknown`},
	} {
		addr, o, err := ParseArg(tc.arg)
		if tc.bad != "" {
			require.ErrorIs(t, err, driver.ErrInvalid, "%q", tc.arg)
			assert.Contains(t, err.Error(), tc.bad, "%q", tc.arg)
			continue
		}
		require.NoError(t, err, "%q", tc.arg)
		assert.Equal(t, tc.addr, addr, "%q", tc.arg)
		assert.Equal(t, vfio.PhysOptions{Interrupts: tc.irq}, o, "%q", tc.arg)
	}
}

// Opening a card that is not there fails with VFIO's typed error, through
// the registry as iwping and iwperf open it.
func TestOpenErrors(t *testing.T) {
	_, err := driver.Open("pci:not-an-address")
	require.ErrorIs(t, err, vfio.ErrBadAddress)
	_, err = driver.Open("pci:0000:7e:1f.7")
	require.ErrorIs(t, err, vfio.ErrNoDevice)
	_, err = driver.Open("pci:")
	require.ErrorIs(t, err, driver.ErrInvalid)
}
