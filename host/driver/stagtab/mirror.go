package stagtab

import (
	"fmt"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
)

// mirrorTries bounds the draws of RegisterMirror: with a quarter of a
// 4096-entry table free, a draw lands below the depth once in 16384; after
// 2^22 draws a failure has a probability below e^-256.
const mirrorTries = 1 << 22

// RegisterMirror registers buf in pd's table, the host-side mirror of a
// card's STag table, under an STag whose index the card can hold (below
// tableDepth). mem.Table draws indexes at random over all 24 bits (RFC
// 5040 §8.1.1 #8: unpredictable STags) and has no depth of its own, so
// this redraws, registering and deregistering, until the index fits: about
// 2^24/free draws, some milliseconds for a 4096-entry table that is not
// nearly full. It fails with mem.ErrFull when the draws run out. (A depth
// for mem.Table would make it one draw.)
func RegisterMirror(pd *mem.PD, tableDepth int, buf []byte, addr uint64, access mem.Access, qp uint32) (*mem.MR, error) {
	for try := 0; try < mirrorTries; try++ {
		mr, err := pd.RegisterMR(buf, addr, access, qp)
		if err != nil {
			return nil, err
		}
		if mr.STag.Index() < uint32(tableDepth) {
			return mr, nil
		}
		if err := mr.Deregister(); err != nil {
			return nil, fmt.Errorf("stagtab: dropping a mirror draw: %w", err)
		}
	}
	return nil, fmt.Errorf("%w: no free index below the card's table depth %d after %d draws", mem.ErrFull, tableDepth, mirrorTries)
}
