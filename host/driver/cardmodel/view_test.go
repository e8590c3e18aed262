package cardmodel

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// withInPlace runs fn with every test host readable in place (Viewer)
// and returns the DMA writes of every host it made, in order.
func withInPlace(on bool, fn func()) []DMAWrite {
	inPlace, hostsMade = on, nil
	defer func() { inPlace, hostsMade = false, nil }()
	fn()
	var all []DMAWrite
	for _, h := range hostsMade {
		all = append(all, h.writes...)
	}
	return all
}

// A card that reads the receive ring in place (Viewer) makes the same DMA
// writes, in the same order and with the same bytes, as one that copies
// it out first: random traffic both ways, markers and CRC on or off.
func TestReadInPlaceSameWrites(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	for i := range uint64(6) {
		s := seed + i
		t.Run(fmt.Sprint(s), func(t *testing.T) {
			copied := withInPlace(false, func() { propertyTraffic(t, s) })
			viewed := withInPlace(true, func() { propertyTraffic(t, s) })
			if len(copied) != len(viewed) {
				t.Fatalf("seed %d: %d DMA writes reading in place, %d copying", s, len(viewed), len(copied))
			}
			for k := range copied {
				c, v := copied[k], viewed[k]
				if c.Kind != v.Kind || c.QPN != v.QPN || c.Addr != v.Addr || !bytes.Equal(c.Data, v.Data) {
					t.Fatalf("seed %d: DMA write %d: %v QP %d at %#x (%d bytes) reading in place, %v QP %d at %#x (%d bytes) copying",
						s, k, v.Kind, v.QPN, v.Addr, len(v.Data), c.Kind, c.QPN, c.Addr, len(c.Data))
				}
			}
		})
	}
}

// The hostile peer's rows and the MPA errors give the same Terminates when
// the card reads the ring in place: the headers a Terminate copies are
// its own, not the ring's bytes, which the host reuses.
func TestReadInPlaceHostile(t *testing.T) {
	withInPlace(true, func() {
		t.Run("peer", TestHostilePeer)
		t.Run("MPA", TestHostileMPA)
		t.Run("stream end", TestStreamEnd)
		t.Run("DMA fault", TestDMAFault)
	})
}
