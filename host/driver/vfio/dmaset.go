package vfio

import (
	"errors"
	"fmt"
	"sync"

	"github.com/openiwarp/openiwarp/host/driver"
)

// dmaSet is driver.DMA over a device's DMA buffers: the buffers it handed
// out, by the address the card sees, so that Free finds them and close
// frees whatever the driver left.
type dmaSet struct {
	dev  *Device
	what string // "vfio card", for messages

	mu     sync.Mutex
	bufs   map[uint64]*DMABuffer
	closed bool
}

func newDMASet(dev *Device, what string) *dmaSet {
	return &dmaSet{dev: dev, what: what, bufs: map[uint64]*DMABuffer{}}
}

// Alloc allocates n bytes of DMA memory.
func (s *dmaSet) Alloc(n int) (*driver.Buffer, error) {
	if err := s.live(); err != nil {
		return nil, err
	}
	var opts []DMAOption
	if s.dev.c.NoIOMMU() && n > pmPage {
		opts = append(opts, HugePages()) // physically contiguous beyond one page
	}
	b, err := s.dev.AllocDMA(n, opts...)
	if err != nil {
		return nil, cardErr(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		b.Free()
		return nil, fmt.Errorf("%w: %s %s", driver.ErrClosed, s.what, s.dev)
	}
	s.bufs[b.IOVA()] = b
	return &driver.Buffer{Bytes: b.Bytes(), IOVA: b.IOVA()}, nil
}

// Free returns a buffer Alloc handed out.
func (s *dmaSet) Free(buf *driver.Buffer) error {
	if buf == nil {
		return fmt.Errorf("%w: nil DMA buffer", driver.ErrInvalid)
	}
	s.mu.Lock()
	b, ok := s.bufs[buf.IOVA]
	if ok && b.Len() == len(buf.Bytes) {
		delete(s.bufs, buf.IOVA)
	}
	s.mu.Unlock()
	if !ok || b.Len() != len(buf.Bytes) {
		return fmt.Errorf("%w: buffer at IOVA %#x is not a live DMA buffer of this %s", driver.ErrInvalid, buf.IOVA, s.what)
	}
	buf.Bytes = nil
	return b.Free()
}

func (s *dmaSet) live() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("%w: %s %s", driver.ErrClosed, s.what, s.dev)
	}
	return nil
}

// close frees every buffer still out; later calls fail with ErrClosed.
func (s *dmaSet) close() error {
	s.mu.Lock()
	bufs := s.bufs
	s.bufs, s.closed = nil, true
	s.mu.Unlock()
	var errs []error
	for _, b := range bufs {
		errs = append(errs, b.Free())
	}
	return errors.Join(errs...)
}
