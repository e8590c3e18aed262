package vfio

import "time"

// Board is what the vfio card needs to know about an openiwarp board beyond
// the placement block's own register map (host/driver/regs): how to
// recognise it and where its blocks sit in BAR0.
//
// PROVISIONAL. The board's full register map (identification, status,
// queues, doorbells, interrupt causes) does not exist yet; until hw/gen
// defines it and generates it like the placement map, the values below are
// the one place that says where the placement block is and what stands for
// its status. They change when that map lands.
type Board struct {
	// Vendor and Device are the PCI IDs of the board's function. Only a
	// device with these IDs gets its STag table programmed: registers of
	// any other device are never written by the operational methods.
	Vendor, Device uint16
	// PlacementBase is the byte offset of the placement block's registers
	// in BAR0.
	PlacementBase uint32
	// TableDepth and PBLDepth size the placement engine's STag table and
	// page list (hw/gen.PlacementDefault).
	TableDepth, PBLDepth int
	// InitWait stands for init_done, which no register shows yet: after
	// reset the engine clears one table entry per cycle, 4096 cycles, 16 µs
	// at 250 MHz and 82 µs at 50 MHz; the card counts the engine as
	// initialised this long after it opened the device.
	InitWait time.Duration
}

// DefaultBoard is the board the card recognises (provisional, see Board):
// vendor 0x1234 is the unassigned ID QEMU and test boards use, device
// 0x1f1a names openiwarp's bitstream; the placement block at BAR0 offset
// 0x10000 leaves the first 64 KiB for the identification, status and
// queue registers still to come.
var DefaultBoard = Board{
	Vendor: 0x1234, Device: 0x1f1a,
	PlacementBase: 0x10000,
	TableDepth:    4096, PBLDepth: 4096,
	InitWait: time.Millisecond,
}

// maxMR is the most memory regions the card offers: three quarters of the
// table, below which stagtab.RegisterMirror finds a free index quickly.
func (b Board) maxMR() int { return b.TableDepth * 3 / 4 }
