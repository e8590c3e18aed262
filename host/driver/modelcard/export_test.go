package modelcard

// RevokeForTest removes buf's mapping behind the driver's back, as an
// IOMMU whose entry went away: the card's next DMA to it faults.
func (p *Phys) RevokeForTest(buf []byte) bool { return p.Revoke(buf) }
