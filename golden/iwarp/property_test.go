package iwarp

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/stretchr/testify/require"
)

// TestRandomTraffic is a seeded property test: random configurations
// (markers, CRC, MULPDU) and random mixes of Writes, Reads and Sends with
// random sizes, offsets and SGL splits. A shadow copy of each side's
// memory predicts every byte; completions must come in posting order.
func TestRandomTraffic(t *testing.T) {
	checkLeaks(t)
	seed := rand.Uint64()
	r := rand.New(rand.NewPCG(seed, 7))
	t.Logf("seed %d", seed)
	for round := 0; round < 3; round++ {
		o := pairOpts{markers: r.IntN(2) == 0, noCRC: r.IntN(2) == 0, cfg: Config{MULPDU: 128 + r.IntN(8000), ORD: 1 + r.IntN(4), IRD: 8}}
		a, b := pair(t, o)
		const memSize = 1 << 16
		amem, bmem := make([]byte, memSize), make([]byte, memSize)
		fill(amem, byte(r.Uint32()))
		fill(bmem, byte(r.Uint32()))
		ashadow, bshadow := bytes.Clone(amem), bytes.Clone(bmem)
		amr := a.reg(t, amem, 0x1000, all)
		bmr := b.reg(t, bmem, 0x80000, all)
		rbuf := make([]byte, memSize)
		rmr := b.reg(t, rbuf, 0, mem.LocalWrite)
		sgl := func(addr uint64, n int, key mem.STag) []SGE {
			var out []SGE
			for n > 0 {
				k := 1 + r.IntN(n)
				if r.IntN(3) == 0 {
					k = n
				}
				out = append(out, SGE{Addr: addr, Length: uint32(k), LKey: key})
				addr += uint64(k)
				n -= k
			}
			return out
		}
		type recvCheck struct {
			off  int
			want []byte // the Send's source bytes when it is sent
		}
		var recvs []recvCheck
		var wrs []SendWR
		rOff := 0
		for i := 0; i < 40; i++ {
			n := r.IntN(3000)
			lo, ro := r.IntN(memSize-n), r.IntN(memSize-n)
			switch r.IntN(3) {
			case 0: // Write a[lo:] -> b[ro:]
				copy(bshadow[ro:], ashadow[lo:lo+n])
				wrs = append(wrs, SendWR{ID: uint64(i), Opcode: WRWrite, SGL: sgl(0x1000+uint64(lo), n, amr.STag), RemoteAddr: 0x80000 + uint64(ro), RKey: bmr.STag, Signaled: true, Fence: true})
			case 1: // Read b[ro:] -> a[lo:]; a sink takes one SGE.
				copy(ashadow[lo:], bshadow[ro:ro+n])
				wrs = append(wrs, SendWR{ID: uint64(i), Opcode: WRRead, SGL: []SGE{{Addr: 0x1000 + uint64(lo), Length: uint32(n), LKey: amr.STag}}, RemoteAddr: 0x80000 + uint64(ro), RKey: bmr.STag, Signaled: true})
			default: // Send a[lo:] into the next receive
				if rOff+n > memSize {
					continue
				}
				require.NoError(t, b.ep.PostRecv(RecvWR{ID: uint64(len(recvs)), SGL: sgl(uint64(rOff), n, rmr.STag)}))
				recvs = append(recvs, recvCheck{rOff, bytes.Clone(ashadow[lo : lo+n])})
				wrs = append(wrs, SendWR{ID: uint64(i), Opcode: WRSend, SGL: sgl(0x1000+uint64(lo), n, amr.STag), Signaled: true, Fence: true})
				rOff += n
			}
		}
		// Writes and Sends are fenced behind the Reads before them, so each
		// sees the memory the shadow predicts; Reads overlap up to ORD, and
		// their responses land in order.
		require.NoError(t, a.ep.PostSend(wrs...))
		for _, w := range wrs {
			c := wait(t, a.scq)
			require.Equal(t, WCSuccess, c.Status, "seed %d", seed)
			require.Equal(t, w.ID, c.ID, "seed %d: completions out of posting order", seed)
		}
		for i, rc := range recvs {
			c := waitOK(t, b.rcq, uint64(i), WCRecv)
			require.Equal(t, uint32(len(rc.want)), c.ByteLen, "seed %d", seed)
			require.True(t, bytes.Equal(rc.want, rbuf[rc.off:rc.off+len(rc.want)]), "seed %d: Send %d payload", seed, i)
		}
		// A final Read of all of b orders after every Write.
		check := make([]byte, memSize)
		cmr := a.reg(t, check, 0, all)
		require.NoError(t, a.ep.PostSend(SendWR{ID: 999, Opcode: WRRead, SGL: []SGE{{Addr: 0, Length: memSize, LKey: cmr.STag}}, RemoteAddr: 0x80000, RKey: bmr.STag, Signaled: true}))
		waitOK(t, a.scq, 999, WCRead)
		require.True(t, bytes.Equal(bshadow, check), "seed %d: b's memory differs from the shadow", seed)
		require.True(t, bytes.Equal(ashadow, amem), "seed %d: a's memory differs from the shadow", seed)
	}
}
