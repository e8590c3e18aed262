package simhost_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/simhost"
)

// Every access inside a mapping reaches its buffer; a read may also
// cover the rest of its last page (zeros); every other access that leaves
// it (a write past its end, the guard page after it, before it, after
// Unmap, Free or Revoke) is refused with ErrUnmapped.
func TestSpace(t *testing.T) {
	s := simhost.New()
	buf := make([]byte, 5000)
	m, err := s.Map(buf)
	require.NoError(t, err)
	require.True(t, m.Contiguous())
	require.Zero(t, m.IOVA%4096)
	b, err := s.DMA().Alloc(100)
	require.NoError(t, err)
	require.GreaterOrEqual(t, b.IOVA, m.IOVA+8192, "a guard page between mappings")

	require.NoError(t, s.WriteMem(m.IOVA+4990, []byte("0123456789")))
	require.Equal(t, "0123456789", string(buf[4990:]))
	got := make([]byte, 10)
	require.NoError(t, s.ReadMem(m.IOVA+4990, got))
	require.Equal(t, "0123456789", string(got))
	require.NoError(t, s.WriteMem(b.IOVA, []byte{1, 2, 3, 4, 5, 6, 7, 8}), "a record: atomic words")
	require.Equal(t, []byte{1, 2, 3, 4, 5, 6, 7, 8}, b.Bytes[:8])

	// Reads see the buffer's last page whole (past its end: zeros), as
	// through an IOMMU; writes there are refused.
	beat := make([]byte, 64)
	for i := range beat {
		beat[i] = 0xee
	}
	require.NoError(t, s.ReadMem(m.IOVA+4992, beat), "a beat across the buffer's end")
	require.Equal(t, "23456789", string(beat[:8]))
	require.Equal(t, make([]byte, 56), beat[8:], "past the end: zeros")
	require.NoError(t, s.ReadMem(m.IOVA+8192-64, beat), "the last page's end")
	require.Equal(t, make([]byte, 64), beat)
	require.ErrorIs(t, s.WriteMem(m.IOVA+4995, make([]byte, 10)), simhost.ErrUnmapped, "a write across the end")

	for _, tc := range []struct {
		name string
		addr uint64
		n    int
	}{
		{"across the page's end", m.IOVA + 8190, 10},
		{"guard page", m.IOVA + 8192, 1},
		{"before the first", simhost.Base - 1, 1},
		{"zero", 0, 4},
		{"wrapping", ^uint64(0) - 1, 4},
	} {
		require.ErrorIs(t, s.ReadMem(tc.addr, make([]byte, tc.n)), simhost.ErrUnmapped, tc.name)
		require.ErrorIs(t, s.WriteMem(tc.addr, make([]byte, tc.n)), simhost.ErrUnmapped, tc.name)
	}

	require.NoError(t, s.Unmap(m))
	require.ErrorIs(t, s.ReadMem(m.IOVA, got), simhost.ErrUnmapped, "after Unmap")
	require.ErrorIs(t, s.Unmap(m), driver.ErrInvalid, "twice")
	require.True(t, s.Revoke(b.Bytes))
	require.ErrorIs(t, s.ReadMem(b.IOVA, got), simhost.ErrUnmapped, "after Revoke")
	require.ErrorIs(t, s.DMA().Free(b), driver.ErrInvalid, "revoked")
	_, err = s.Map(nil)
	require.ErrorIs(t, err, driver.ErrInvalid)
	_, err = s.DMA().Alloc(0)
	require.ErrorIs(t, err, driver.ErrInvalid)
}

func Example() {
	s := simhost.New()
	buf := make([]byte, 64)
	m, _ := s.Map(buf)
	fmt.Println(s.WriteMem(m.IOVA, []byte("hi")), string(buf[:2]))
	fmt.Println(s.WriteMem(m.IOVA+64, []byte("x")))
	// Output:
	// <nil> hi
	// simhost: DMA outside every mapping (IOMMU fault): 1 bytes at 0x100000040
}

// Refuse makes the IOMMU refuse a range of a live mapping: every access
// touching it fails, the rest of the mapping still works.
func TestRefuse(t *testing.T) {
	s := simhost.New()
	b, err := s.DMA().Alloc(3 * 4096)
	require.NoError(t, err)
	s.Refuse(b.IOVA+4096, 4096)
	require.NoError(t, s.WriteMem(b.IOVA+4096-8, make([]byte, 8)), "just before")
	require.NoError(t, s.WriteMem(b.IOVA+8192, make([]byte, 8)), "just after")
	require.ErrorIs(t, s.WriteMem(b.IOVA+4096-4, make([]byte, 8)), simhost.ErrUnmapped, "across its start")
	require.ErrorIs(t, s.ReadMem(b.IOVA+8000, make([]byte, 32)), simhost.ErrUnmapped, "inside")
	_, err = s.Lookup(b.IOVA+8191, 1)
	require.ErrorIs(t, err, simhost.ErrUnmapped, "its last byte")
}

// Mapping and unmapping while the card's accesses run (as the driver
// registers memory beside a running card) never loses a mapping that
// stays: every access to it succeeds. Run with -race.
func TestConcurrentMap(t *testing.T) {
	s := simhost.New()
	keep := make([]byte, 4096)
	km, err := s.Map(keep)
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 2000; i++ {
			m, err := s.Map(make([]byte, 100))
			if err != nil {
				t.Error(err)
				return
			}
			if i%2 == 0 {
				if err := s.Unmap(m); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	b := make([]byte, 64)
	for i := 0; ; i++ {
		require.NoError(t, s.WriteMem(km.IOVA+uint64(i%64)*64, b), "access %d", i)
		select {
		case <-done:
			return
		default:
		}
	}
}

// BenchmarkWriteMem is a card's 32-byte record write (a CQE) while the
// driver's thread polls the same space (ReadMem beside it), as in a
// round trip of the model card.
func BenchmarkWriteMem(b *testing.B) {
	s := simhost.New()
	ring := make([]byte, 1<<16)
	m, err := s.Map(ring)
	require.NoError(b, err)
	for i := 0; i < 64; i++ { // other mappings: rings and buffers
		_, err := s.Map(make([]byte, 4096))
		require.NoError(b, err)
	}
	rec := make([]byte, 32)
	b.RunParallel(func(pb *testing.PB) {
		i := uint64(0)
		for pb.Next() {
			if err := s.WriteMem(m.IOVA+i%2048*32, rec); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}
