package stagtab

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
)

// FuzzEncode builds an entry and a translation from the input, and checks
// the encoder against the decoder: whatever Validate accepts, the writes
// AppendWrites makes decode (through Image, the engine's semantics) to the
// same entry, translation and page slots, at every table index and slot
// position; whatever it refuses, the Programmer refuses without writing.
func FuzzEncode(f *testing.F) {
	f.Add([]byte{})
	f.Add(binary.LittleEndian.AppendUint64(make([]byte, 40), 0x1000))
	f.Add([]byte("\x05\xa5\x0f\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x80\x0f\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x20"))
	f.Fuzz(func(t *testing.T, data []byte) {
		const tableDepth, pblDepth = 64, 16
		in := fuzzInput{data: data}
		index := uint32(in.byte()) // up to 255: past the table too
		e := mem.Entry{Valid: in.byte()&1 == 1, Key: in.byte(), Access: mem.Access(in.byte() & 0x1f), PD: in.u32(), QP: in.u32(),
			Base: in.u64(), Length: in.u64()}
		mode := in.byte()
		var tr Translation
		if mode&1 == 0 {
			tr = Contiguous(in.u64())
		} else {
			tr = Paged(in.u64()&0x1fff, nil)
			if mode&2 == 0 { // a plausible length, so that most inputs get through
				e.Length &= 8*PageSize - 1
			}
			n := min(PagesFor(tr.Addr, e.Length), 20)
			for k := uint64(0); k < n; k++ {
				pg := in.u64()
				if mode&4 == 0 {
					pg &^= PageSize - 1
				}
				tr.Pages = append(tr.Pages, pg)
			}
		}
		img := NewImage(tableDepth, pblDepth)
		r := &recRegs{img: img}
		p, err := New(r, Config{TableDepth: tableDepth, PBLDepth: pblDepth, InitDone: func() (bool, error) { return true, nil }})
		require.NoError(t, err)
		require.NoError(t, p.Init(t.Context()))
		// Move the allocator so the list may start anywhere.
		if skip := int(mode>>4) % pblDepth; skip > 0 {
			require.NoError(t, p.Write(0, mem.Entry{Length: uint64(skip) * PageSize}, Paged(0, make([]uint64, skip))))
			require.NoError(t, p.Remove(0))
		}
		r.writes = nil
		verr := Validate(index, e, tr, tableDepth, pblDepth)
		err = p.Write(index, e, tr)
		if verr != nil {
			require.EqualError(t, err, verr.Error())
			require.Empty(t, r.writes, "a refused entry wrote registers")
			return
		}
		require.NoError(t, err)
		got, gtr, ok := img.Lookup(index)
		require.True(t, ok)
		require.Equal(t, e, got)
		require.Equal(t, tr.Paged, gtr.Paged)
		require.Equal(t, tr.Addr, gtr.Addr)
		require.Equal(t, len(tr.Pages), len(gtr.Pages))
		for k := range tr.Pages {
			require.Equal(t, tr.Pages[k], gtr.Pages[k], "page %d", k)
		}
		// And every byte translates to the same place.
		for _, to := range []uint64{e.Base, e.Base + e.Length/2, e.Base + e.Length - 1, e.Base - 1, e.Base + e.Length} {
			a, aok := Translate(e, tr, to)
			b, bok := Translate(got, gtr, to)
			require.Equal(t, aok, bok)
			require.Equal(t, a, b)
		}
	})
}

type fuzzInput struct{ data []byte }

func (f *fuzzInput) take(n int) []byte {
	var b [8]byte
	k := copy(b[:n], f.data)
	f.data = f.data[k:]
	return b[:n]
}
func (f *fuzzInput) byte() byte  { return f.take(1)[0] }
func (f *fuzzInput) u32() uint32 { return binary.LittleEndian.Uint32(f.take(4)) }
func (f *fuzzInput) u64() uint64 { return binary.LittleEndian.Uint64(f.take(8)) }
