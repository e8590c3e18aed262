package model

import (
	"fmt"
	"sync"

	"github.com/openiwarp/openiwarp/host/driver"
)

// Register offsets of the model card. They describe the card rather than
// steer it: the model takes its commands through the Card methods.
const (
	RegID      = 0x00 // RO 32: IDValue
	RegVersion = 0x04 // RO 32: Version
	RegQPs     = 0x08 // RO 32: QPs attached now
	RegMRs     = 0x0c // RO 32: memory regions registered now
	RegCQs     = 0x10 // RO 32: completion queues created
	RegScratch = 0x20 // RW 64: scratch, for bus tests
	RegSpace   = 0x28 // size of the register space
)

// Register values.
const (
	IDValue = 0x69574152 // "iWAR"
	Version = 0x00010000 // 1.0
)

type regFile struct {
	card    *Card
	mu      sync.Mutex
	scratch uint64
}

func (r *regFile) check(off uint32, size uint32) error {
	if off%size != 0 || off+size > RegSpace {
		return fmt.Errorf("%w: %d-bit register access at %#x (space %#x, aligned)", driver.ErrInvalid, size*8, off, RegSpace)
	}
	r.card.mu.Lock()
	defer r.card.mu.Unlock()
	return r.card.live()
}

func (r *regFile) value(off uint32) uint64 {
	c := r.card
	switch off {
	case RegID:
		return IDValue
	case RegVersion:
		return Version
	case RegQPs, RegMRs, RegCQs:
		c.mu.Lock()
		defer c.mu.Unlock()
		return uint64(map[uint32]int{RegQPs: len(c.qps), RegMRs: c.nMR, RegCQs: c.nCQ}[off])
	case RegScratch, RegScratch + 4:
		r.mu.Lock()
		defer r.mu.Unlock()
		if off != RegScratch {
			return r.scratch >> 32
		}
		return r.scratch
	}
	return 0 // reserved: reads as zero
}

// Read32 reads a 32-bit register.
func (r *regFile) Read32(off uint32) (uint32, error) {
	if err := r.check(off, 4); err != nil {
		return 0, err
	}
	return uint32(r.value(off)), nil
}

// Read64 reads a 64-bit register (or two adjacent 32-bit ones).
func (r *regFile) Read64(off uint32) (uint64, error) {
	if err := r.check(off, 8); err != nil {
		return 0, err
	}
	if off == RegScratch {
		return r.value(off), nil
	}
	return r.value(off) | r.value(off+4)<<32, nil
}

func (r *regFile) write(off uint32, v uint64, size uint32) error {
	if err := r.check(off, size); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case off == RegScratch && size == 8:
		r.scratch = v
	case off == RegScratch:
		r.scratch = r.scratch&^0xffffffff | v&0xffffffff
	case off == RegScratch+4:
		r.scratch = r.scratch&0xffffffff | v<<32
	default:
		return fmt.Errorf("%w: register %#x is read-only", driver.ErrInvalid, off)
	}
	return nil
}

// Write32 writes a 32-bit register.
func (r *regFile) Write32(off uint32, v uint32) error { return r.write(off, uint64(v), 4) }

// Write64 writes a 64-bit register.
func (r *regFile) Write64(off uint32, v uint64) error { return r.write(off, v, 8) }
