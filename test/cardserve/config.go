package cardserve

import (
	"encoding/binary"

	"github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// PCI configuration header offsets (type 0).
const (
	cfgVendor    = 0x00
	cfgCommand   = 0x04
	cfgRevision  = 0x08
	cfgBAR0      = 0x10
	cfgSubVendor = 0x2c
	cfgIntLine   = 0x3c
	cfgIntPin    = 0x3d
	cfgSize      = 256
)

// Class is the card's PCI class code: network controller (0x02), other
// (0x80), programming interface 0.
const Class = 0x028000

// commandMask is the PCI command bits the card implements: I/O space (it
// has none, so it stays 0), memory space, bus master, parity and SERR
// reporting, and INTx disable.
const commandMask = 0x0002 | 0x0004 | 0x0040 | 0x0100 | 0x0400

// config is the card's 256-byte type-0 configuration header: what QEMU's
// proxy device probes at start and what the guest reads and writes through
// it. Only the command register, BAR0 and the interrupt line are
// writable; everything else reads as the card's fixed values or zero.
type config struct {
	b       [cfgSize]byte
	barSize uint32
}

func newConfig(barSize uint32) *config {
	c := &config{barSize: barSize}
	le := binary.LittleEndian
	le.PutUint16(c.b[cfgVendor:], cardspec.VendorID)
	le.PutUint16(c.b[cfgVendor+2:], cardspec.DeviceID)
	le.PutUint32(c.b[cfgRevision:], Class<<8|0x01) // revision 1
	le.PutUint16(c.b[cfgSubVendor:], cardspec.VendorID)
	le.PutUint16(c.b[cfgSubVendor+2:], cardspec.DeviceID)
	// Header type 0, single function; no capabilities (status bit 4
	// clear), no INTx (interrupt pin 0): interrupts come through ivshmem.
	return c
}

// bar0 is the bus address BAR0 decodes at (its writable bits).
func (c *config) bar0() uint64 {
	return uint64(binary.LittleEndian.Uint32(c.b[cfgBAR0:]) &^ 0xf)
}

// memoryOn reports whether the command register enables memory decoding.
func (c *config) memoryOn() bool { return c.b[cfgCommand]&0x2 != 0 }

// read returns n bytes (1, 2 or 4) at off, little-endian; beyond the
// header, or an access that would cross its end, reads as zero.
func (c *config) read(off uint32, n int) uint32 {
	if off >= cfgSize || int(off)+n > cfgSize {
		return 0
	}
	var v uint32
	for i := n - 1; i >= 0; i-- {
		v = v<<8 | uint32(c.b[int(off)+i])
	}
	return v
}

// write stores n bytes of v at off, byte by byte, keeping only the bits
// the card implements.
func (c *config) write(off uint32, v uint32, n int) {
	for i := 0; i < n; i++ {
		a := off + uint32(i)
		if a >= cfgSize {
			return
		}
		c.writeByte(a, byte(v>>(8*i)))
	}
}

func (c *config) writeByte(a uint32, v byte) {
	switch {
	case a == cfgCommand:
		c.b[a] = v & byte(commandMask&0xff)
	case a == cfgCommand+1:
		c.b[a] = v & byte(commandMask>>8)
	case a >= cfgBAR0 && a < cfgBAR0+4:
		// 32-bit memory BAR, not prefetchable: the low 4 bits read 0,
		// and the address bits below the size read 0, so that writing
		// all ones reads back the size mask.
		mask := ^(c.barSize - 1) &^ 0xf
		c.b[a] = v & byte(mask>>(8*(a-cfgBAR0)))
	case a == cfgIntLine:
		c.b[a] = v
	}
}
