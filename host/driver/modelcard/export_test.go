package modelcard

import (
	"slices"
	"unsafe"
)

// RevokeForTest removes buf's mapping behind the driver's back, as an
// IOMMU whose entry went away: the card's next DMA to it faults.
func (p *Phys) RevokeForTest(buf []byte) bool {
	p.mapMu.Lock()
	defer p.mapMu.Unlock()
	for i, s := range p.spans {
		if len(s.buf) > 0 && unsafe.SliceData(s.buf) == unsafe.SliceData(buf) {
			p.spans = slices.Delete(p.spans, i, i+1)
			return true
		}
	}
	return false
}
