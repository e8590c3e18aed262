package model

import (
	"fmt"
	"sync"

	"github.com/openiwarp/openiwarp/host/driver"
)

// dmaBase is the first IOVA handed out, so that 0 is never a valid one.
const dmaBase = 1 << 32

// MaxDMA bounds one allocation.
const MaxDMA = 1 << 30

// dmaSpace gives out page-aligned IOVAs over Go memory: the model card
// "reaches" the buffer because it runs in the same process.
type dmaSpace struct {
	card *Card
	mu   sync.Mutex
	next uint64
	live map[uint64]int
}

func (d *dmaSpace) Alloc(n int) (*driver.Buffer, error) {
	if n <= 0 || n > MaxDMA {
		return nil, fmt.Errorf("%w: DMA buffer of %d bytes (1 to %d)", driver.ErrInvalid, n, MaxDMA)
	}
	d.card.mu.Lock()
	err := d.card.live()
	d.card.mu.Unlock()
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.live == nil {
		d.live = map[uint64]int{}
	}
	iova := d.next
	d.next += (uint64(n) + 4095) &^ 4095
	d.live[iova] = n
	return &driver.Buffer{Bytes: make([]byte, n), IOVA: iova}, nil
}

func (d *dmaSpace) Free(b *driver.Buffer) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if b == nil {
		return fmt.Errorf("%w: nil DMA buffer", driver.ErrInvalid)
	}
	if n, ok := d.live[b.IOVA]; !ok || n != len(b.Bytes) {
		return fmt.Errorf("%w: buffer is not a live DMA buffer of this card", driver.ErrInvalid)
	}
	delete(d.live, b.IOVA)
	b.Bytes = nil
	return nil
}
