package ipoib

import (
	"net/netip"
	"testing"

	"github.com/openiwarp/openiwarp/golden/ipoibcm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigValidate(t *testing.T) {
	good := func() Config {
		return Config{Underlay: netip.MustParseAddr("::ffff:198.18.0.1"), EPID: 7, MTU: 65520, Depth: 64}
	}
	c := good()
	require.NoError(t, c.Validate())
	assert.Equal(t, uint32(65524), c.RecvMTU, "RecvMTU defaults to MTU plus the header")
	assert.True(t, c.Underlay.Is4(), "a v4-mapped underlay address is unmapped")

	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no underlay", func(c *Config) { c.Underlay = netip.Addr{} }, "no underlay"},
		{"epid zero", func(c *Config) { c.EPID = 0 }, "endpoint ID 0"},
		{"epid too big", func(c *Config) { c.EPID = ipoibcm.MaxQPN + 1 }, "endpoint ID 16777216"},
		{"mtu too small", func(c *Config) { c.MTU = ipoibcm.MinMTUIPv4 - 1 }, "MTU 67"},
		{"mtu too big", func(c *Config) { c.MTU = ipoibcm.MaxIPv4MTU + 1 }, "MTU 65536"},
		{"recv mtu too small", func(c *Config) { c.RecvMTU = ipoibcm.HeaderLen + ipoibcm.MinMTUIPv4 - 1 }, "receive MTU 71"},
		{"depth too small", func(c *Config) { c.Depth = ipoibcm.MinQueueDepth - 1 }, "queue depth"},
		{"depth too big", func(c *Config) { c.Depth = 1 << 16 }, "queue depth 65536"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good()
			tc.edit(&c)
			err := c.Validate()
			require.ErrorIs(t, err, ErrConfig)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
