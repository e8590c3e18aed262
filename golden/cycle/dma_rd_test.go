package cycle

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One unaligned request through the model with a slave that answers each
// burst at once: the bytes come out from lane 0, in order.
func TestDMARdModelRealigns(t *testing.T) {
	for _, w := range []int{64, 512} {
		m, err := NewDMARd(DMARdConfig{Width: w, IDBits: 6, ROBBeats: 512, TagBits: 8})
		require.NoError(t, err)
		L := w / 8
		mem := func(a uint64) byte { return byte(a*7 + a>>8) }
		for _, tc := range []struct {
			addr uint64
			n    int
		}{{0x1003, 1}, {0x1003, 10}, {0x0FFD, 4100}, {0x2000, 3 * L}, {0x7, L}} {
			var in DMARdIn
			var out DMARdOut
			in.Reset = true
			m.Step(&in, &out)
			in = DMARdIn{ReqValid: true, ReqAddr: tc.addr, ReqLenM1: uint16(tc.n - 1), ReqTag: 9, ARReady: true, OReady: true}
			type burst struct {
				id    uint32
				a     uint64
				beats int
			}
			var bursts []burst
			var got []byte
			for c := 0; c < 10000 && !(len(got) == tc.n && out.OLast); c++ {
				in.RValid = false
				if len(bursts) > 0 {
					b := &bursts[0]
					in.RValid, in.RID, in.RData = true, b.id, make([]byte, L)
					for i := range in.RData {
						in.RData[i] = mem(b.a + uint64(i))
					}
					b.a += uint64(L)
					if b.beats--; b.beats == 0 {
						bursts = bursts[1:]
					}
				}
				m.Step(&in, &out)
				if out.ReqReady {
					in.ReqValid = false
				}
				if out.ARValid {
					assert.Equal(t, out.ARAddr/4096, (out.ARAddr+uint64(int(out.ARLen)+1)*uint64(L)-1)/4096, "no 4 KiB crossing")
					bursts = append(bursts, burst{out.ARID, out.ARAddr, int(out.ARLen) + 1})
				}
				if out.OValid {
					assert.Equal(t, uint32(9), out.OTag)
					for i := 0; i < L && out.OKeep>>i&1 != 0; i++ {
						got = append(got, out.OData[i])
					}
				}
			}
			require.Len(t, got, tc.n, "width %d address %#x", w, tc.addr)
			for i, c := range got {
				require.Equal(t, mem(tc.addr+uint64(i)), c, "width %d address %#x byte %d", w, tc.addr, i)
			}
		}
	}
}
