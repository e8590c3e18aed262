package cycle

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Three writes of three QPs; the second gets SLVERR. Its response names
// its QP and its first strobed byte (block address 0x1040, strobes from
// lane 5), the others name nothing; responses are taken only while
// BHold is low, in issue order.
func TestPlaceAXIFaultNamed(t *testing.T) {
	p := NewPlaceAXI(64)
	blocks := []struct {
		addr uint64
		strb uint64
		qp   uint32
	}{{0x1000, 0xff, 3}, {0x1043, 0xe0, 7}, {0x2000, 0x01, 9}}
	for _, b := range blocks {
		o := p.Step(PlaceAXIIn{Addr: b.addr, Data: make([]byte, 8), Strb: b.strb, QP: b.qp, Valid: true, AWReady: true, WReady: true})
		require.True(t, o.Ready)
	}
	o := p.Step(PlaceAXIIn{BValid: true, BHold: true, AWReady: true, WReady: true})
	require.False(t, o.BReady, "held")
	o = p.Step(PlaceAXIIn{BValid: true, AWReady: true, WReady: true})
	require.True(t, o.BReady)
	require.False(t, o.BErr)
	o = p.Step(PlaceAXIIn{BValid: true, BResp: 2, AWReady: true, WReady: true})
	require.True(t, o.BErr)
	require.EqualValues(t, 7, o.BErrQP)
	require.EqualValues(t, 0x1045, o.BErrAddr)
	o = p.Step(PlaceAXIIn{BValid: true, AWReady: true, WReady: true})
	require.True(t, o.BReady)
	require.False(t, o.BErr)
	require.Zero(t, o.BErrQP)
	o = p.Step(PlaceAXIIn{BValid: true, AWReady: true, WReady: true})
	require.False(t, o.BReady, "every write answered")
}
