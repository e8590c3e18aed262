package gen

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUARTTxDivisor(t *testing.T) {
	d, err := UARTTxDivisor(12_000_000, 115200)
	require.NoError(t, err)
	assert.Equal(t, 104, d)
	for _, c := range []struct{ clk, baud int }{{0, 9600}, {12_000_000, 0}, {12_000_000, 5_000_000}, {100, 9600}, {1_000_000_000, 1}} {
		_, err := UARTTxDivisor(c.clk, c.baud)
		assert.ErrorIs(t, err, ErrInvalid, "clock %d baud %d", c.clk, c.baud)
	}
	_, err = UARTTx(1)
	assert.ErrorIs(t, err, ErrInvalid)
}

func TestSelftestConfigErrors(t *testing.T) {
	for _, c := range []SelftestConfig{
		{Name: "selftest_x", ClockHz: 12_000_000, Baud: 115200, EpisodesPerLine: 1000},
		{Name: "selftest_x", ClockHz: 12_000_000, Baud: 115200, EpisodesPerLine: 1},
		{Name: "selftest_x", ClockHz: 12_000_000, Baud: 0, EpisodesPerLine: 1024},
	} {
		_, _, err := SelftestModules(c)
		assert.ErrorIs(t, err, ErrInvalid, "%+v", c)
	}
	top, subs, err := SelftestModules(SelftestHX8K)
	require.NoError(t, err)
	assert.Equal(t, "selftest_hx8k", top.Name)
	require.Len(t, subs, 2)
	assert.Equal(t, "mpa_rx_w64_b16", subs[0].Name)
}

func TestSelftestLine(t *testing.T) {
	assert.Equal(t, "ep 00000400 ok 0000ABCD crc 00000100 mrk 00000100 bad 00000000\r\n",
		SelftestLine([]uint32{0x400, 0xabcd, 0x100, 0x100, 0}))
}
