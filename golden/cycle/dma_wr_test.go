package cycle

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One unaligned write through the model with an always-ready slave: the
// strobed bytes are the data at their addresses, and one completion comes.
func TestDMAWrModelStrobes(t *testing.T) {
	for _, w := range []int{64, 512} {
		m, err := NewDMAWr(DMAWrConfig{Width: w, IDBits: 4, Bursts: 32, TagBits: 8})
		require.NoError(t, err)
		L := w / 8
		for _, tc := range []struct {
			addr uint64
			n    int
		}{{0x1003, 1}, {0x1003, 10}, {0x0FFD, 4100}, {0x2000, 3 * L}, {0x7, L}} {
			var in DMAWrIn
			var out DMAWrOut
			in.Reset = true
			m.Step(&in, &out)
			data := func(i int) byte { return byte(i*5 + 1) }
			in = DMAWrIn{ReqValid: true, ReqAddr: tc.addr, ReqLenM1: uint16(tc.n - 1), ReqTag: 3,
				AWReady: true, WReady: true, DReady: true, SData: make([]byte, L)}
			fed, written, done := 0, map[uint64]byte{}, 0
			var aw []uint64 // beat addresses of the bursts, in order
			pending := 0
			for c := 0; c < 20000 && done == 0; c++ {
				in.SValid = fed < tc.n
				for i := range in.SData {
					in.SData[i] = data(fed + i)
				}
				in.BValid = pending > 0
				m.Step(&in, &out)
				if out.ReqReady {
					in.ReqValid = false
				}
				if in.SValid && out.SReady {
					fed += L
				}
				if out.AWValid {
					aw = append(aw, out.AWAddr)
				}
				if out.WValid {
					require.NotEmpty(t, aw, "W after its address")
					for i := 0; i < L; i++ {
						if out.WStrb>>i&1 != 0 {
							written[aw[0]+uint64(i)] = out.WData[i]
						}
					}
					aw[0] += uint64(L)
					if out.WLast {
						aw = aw[1:]
						pending++
					}
				}
				if in.BValid && out.BReady {
					pending--
				}
				if out.DValid {
					assert.Equal(t, uint32(3), out.DTag)
					done++
				}
			}
			require.Equal(t, 1, done, "width %d address %#x", w, tc.addr)
			require.Len(t, written, tc.n)
			for i := 0; i < tc.n; i++ {
				require.Equal(t, data(i), written[tc.addr+uint64(i)], "width %d address %#x byte %d", w, tc.addr, i)
			}
		}
	}
}
