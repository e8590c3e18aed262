package vfio

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAddress(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Address
		str  string
	}{
		{"0000:03:00.0", Address{0, 3, 0, 0}, "0000:03:00.0"},
		{"03:00.0", Address{0, 3, 0, 0}, "0000:03:00.0"},
		{"0000:00:1f.7", Address{0, 0, 0x1f, 7}, "0000:00:1f.7"},
		{"10000:e1:00.1", Address{0x10000, 0xe1, 0, 1}, "10000:e1:00.1"},
		{"1:2:3.4", Address{1, 2, 3, 4}, "0001:02:03.4"},
		{"0000:FF:1F.0", Address{0, 0xff, 0x1f, 0}, "0000:ff:1f.0"},
	} {
		got, err := ParseAddress(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
		assert.Equal(t, tc.str, got.String(), tc.in)
	}
	for _, bad := range []string{"", "03:00", "0000:03:00", "0000:03:20.0", "0000:03:00.8", "0000:03:00.00",
		"0000:103:00.0", "x:03:00.0", "0000:zz:00.0", "000000000:03:00.0", "0:0:0:0.0", ":03:00.0", "0000::00.0", "0000:03:.0", "0000:03:00."} {
		_, err := ParseAddress(bad)
		assert.ErrorIs(t, err, ErrBadAddress, "%q", bad)
	}
}

func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{"0000:03:00.0", "03:00.0", "10000:e1:00.1", "0:0:0.8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAddress(s)
		if err != nil {
			return
		}
		b, err := ParseAddress(a.String())
		if err != nil || b != a {
			t.Fatalf("%q -> %v does not round-trip: %v %v", s, a, b, err)
		}
	})
}
