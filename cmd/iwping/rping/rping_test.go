package rping

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInfoRoundTrip(t *testing.T) {
	in := Info{Addr: 0x0102030405060708, RKey: 0x0a0b0c0d, Size: 64}
	b := in.Append(nil)
	require.Equal(t, []byte{1, 2, 3, 4, 5, 6, 7, 8, 0x0a, 0x0b, 0x0c, 0x0d, 0, 0, 0, 64}, b)
	out, err := ParseInfo(b)
	require.NoError(t, err)
	require.Equal(t, in, out)
}

func TestParseInfoBogus(t *testing.T) {
	for _, n := range []int{0, 15, 17, 64} {
		_, err := ParseInfo(make([]byte, n))
		require.True(t, errors.Is(err, ErrBogus), "len %d: %v", n, err)
	}
}

// The first cycles as a real rping -v -S 64 prints them (captured from
// rdmacm-utils 44 between two siw guests).
func TestExpectedLineMatchesRealRping(t *testing.T) {
	require.Equal(t, "rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr", ExpectedLine(0, 64))
	require.Equal(t, "rdma-ping-1: BCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrs", ExpectedLine(1, 64))
	require.Equal(t, "rdma-ping-2: CDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrst", ExpectedLine(2, 64))
}

func TestFillPingWrapsAndTerminates(t *testing.T) {
	buf := make([]byte, 200)
	next := FillPing(buf, 7, 'y')
	require.Equal(t, byte('z'), next)
	require.True(t, bytes.HasPrefix(buf, []byte("rdma-ping-7: yzABC")))
	require.Equal(t, byte(0), buf[199])
	require.Equal(t, byte('A'), FillPing(buf, 8, 'z'))
	for _, c := range buf[len("rdma-ping-8: ") : len(buf)-1] {
		require.True(t, c >= 65 && c <= 122, "letter %q out of range", c)
	}
	// A cycle number longer than the buffer is truncated, still NUL-terminated.
	small := make([]byte, 5)
	FillPing(small, 123456, 'A')
	require.Equal(t, []byte("rdma\x00"), small)
}

// FuzzParseInfo: any input either decodes to an Info that re-encodes to the
// same 16 octets, or is rejected as bogus.
func FuzzParseInfo(f *testing.F) {
	f.Add(Info{Addr: 0x7f1000000000, RKey: 0x1234, Size: 64}.Append(nil))
	f.Add([]byte{})
	f.Add(make([]byte, 17))
	f.Fuzz(func(t *testing.T, b []byte) {
		i, err := ParseInfo(b)
		if err != nil {
			if !errors.Is(err, ErrBogus) || len(b) == InfoLen {
				t.Fatalf("len %d: unexpected error %v", len(b), err)
			}
			return
		}
		if !bytes.Equal(i.Append(nil), b) {
			t.Fatalf("round trip of %x gave %x", b, i.Append(nil))
		}
	})
}
