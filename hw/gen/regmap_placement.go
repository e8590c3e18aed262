package gen

import "fmt"

// PlacementFailSlots is how many failed connections the placement engine
// remembers (and drops the segments of) until the host clears them.
const PlacementFailSlots = 8

// PageShift is the page size of page-list translation (4 KiB pages); every
// DMA write of the placement engine stays inside one such page.
const PageShift = 12

// Access-right bits of STAG_CTRL.ACCESS, in the order of golden/iwarp/mem.Access.
const (
	AccessLocalWrite  = 1 << 0
	AccessRemoteRead  = 1 << 1
	AccessRemoteWrite = 1 << 2
	AccessBind        = 1 << 3
)

// PlacementRegMap is the register map of the placement engine's STag table
// and page-list memory.
func PlacementRegMap() *RegMap {
	return &RegMap{
		Name: "placement",
		Doc: []string{
			"The host fills the STag table of the placement engine (hw/rtl/placement_w*.v) through staging registers and a commit: write STAG_INDEX and the entry's fields in any order, then STAG_COMMIT; the whole entry is written to the table in one cycle, so a lookup sees either the old or the new entry, never a mix. STAG_INVALIDATE clears one entry's valid bit in one write. Page-list slots are written the same way (PBL_INDEX, PBL_ADDR_LO/HI, PBL_COMMIT).",
			"Translation: a contiguous entry (PAGED = 0) maps tagged offset TO to host address ADDR + (TO - BASE). A paged entry (PAGED = 1) maps TO to page-list slot PBL + (v >> 12) at byte v mod 4096 of that page, where v = ADDR + (TO - BASE) and ADDR is the offset of BASE in the first page (below 4096). Page addresses are 4 KiB aligned. Slot numbers wrap at the page-list depth.",
			fmt.Sprintf("With CTRL.DROP_AFTER_FAIL set, after a segment fails a check every later segment of its connection is dropped without a word (RFC 5041 §7.1) until the host writes the connection to CONN_CLEAR. The engine remembers the last %d failed connections; a further failure replaces the oldest.", PlacementFailSlots),
			"After reset the engine clears the valid bit of every entry, one per cycle, and raises init_done; commits and invalidations are ignored until then. Table indexes at or above the table depth are never stored: a commit or invalidation of such an index does nothing, and an STag whose index is that large is an invalid STag.",
		},
		AddrBits: 8,
		Regs: []Reg{
			{Name: "STAG_INDEX", Offset: 0x00, Doc: "Table index (STag bits 31:8) of the entry STAG_COMMIT writes.",
				Fields: []RegField{{Name: "INDEX", Lo: 0, Width: 24, Doc: "STag index"}}},
			{Name: "STAG_CTRL", Offset: 0x04, Doc: "Key, access rights, translation mode and valid bit of the staged entry.",
				Fields: []RegField{
					{Name: "KEY", Lo: 0, Width: 8, Doc: "STag key (STag bits 7:0): a segment's STag must carry it"},
					{Name: "ACCESS", Lo: 8, Width: 4, Doc: "rights: bit 0 local write (Read Response sink), 1 remote read, 2 remote write (RDMA Write target), 3 bind"},
					{Name: "PAGED", Lo: 16, Width: 1, Doc: "1: translate through the page list from slot STAG_PBL; 0: contiguous from STAG_ADDR"},
					{Name: "VALID", Lo: 31, Width: 1, Doc: "1: the entry may be used"},
				}},
			{Name: "STAG_PD", Offset: 0x08, Doc: "Protection domain of the staged entry; a segment's connection must be in it.",
				Fields: []RegField{{Name: "PD", Lo: 0, Width: 32, Doc: "protection domain"}}},
			{Name: "STAG_QP", Offset: 0x0C, Doc: "Stream association of the staged entry: 0 for any connection of the PD, else the one connection (QP) that may use it.",
				Fields: []RegField{{Name: "QP", Lo: 0, Width: 32, Doc: "connection id, 0 for PD scope"}}},
			{Name: "STAG_BASE_LO", Offset: 0x10, Doc: "First valid tagged offset, bits 31:0."},
			{Name: "STAG_BASE_HI", Offset: 0x14, Doc: "First valid tagged offset, bits 63:32."},
			{Name: "STAG_LEN_LO", Offset: 0x18, Doc: "Length in bytes of the tagged range, bits 31:0."},
			{Name: "STAG_LEN_HI", Offset: 0x1C, Doc: "Length in bytes of the tagged range, bits 63:32."},
			{Name: "STAG_ADDR_LO", Offset: 0x20, Doc: "Contiguous: host address of BASE, bits 31:0. Paged: offset of BASE in its first page (bits 11:0)."},
			{Name: "STAG_ADDR_HI", Offset: 0x24, Doc: "Contiguous: host address of BASE, bits 63:32. Paged: zero."},
			{Name: "STAG_PBL", Offset: 0x28, Doc: "Paged: page-list slot of the entry's first page.",
				Fields: []RegField{{Name: "SLOT", Lo: 0, Width: 16, Doc: "first page-list slot"}}},
			{Name: "STAG_COMMIT", Offset: 0x2C, Command: true, Doc: "Writes the staged entry at STAG_INDEX (the value written is ignored)."},
			{Name: "STAG_INVALIDATE", Offset: 0x30, Command: true, Doc: "Clears the valid bit of the entry whose index is written.",
				Fields: []RegField{{Name: "INDEX", Lo: 0, Width: 24, Doc: "STag index"}}},
			{Name: "PBL_INDEX", Offset: 0x40, Doc: "Page-list slot PBL_COMMIT writes.",
				Fields: []RegField{{Name: "SLOT", Lo: 0, Width: 16, Doc: "slot"}}},
			{Name: "PBL_ADDR_LO", Offset: 0x44, Doc: "Host address of the page, bits 31:12 (bits 11:0 are ignored).",
				Fields: []RegField{{Name: "PAGE", Lo: 12, Width: 20, Doc: "page address bits 31:12"}}},
			{Name: "PBL_ADDR_HI", Offset: 0x48, Doc: "Host address of the page, bits 63:32."},
			{Name: "PBL_COMMIT", Offset: 0x4C, Command: true, Doc: "Writes the staged page address at PBL_INDEX (the value written is ignored)."},
			{Name: "CONN_CLEAR", Offset: 0x50, Command: true, Doc: "Forgets that the connection written had a failed segment, so its segments are checked again (write it once the connection is torn down or before it is reused).",
				Fields: []RegField{{Name: "QP", Lo: 0, Width: 32, Doc: "connection id"}}},
			{Name: "CTRL", Offset: 0x54, Doc: "Engine options (zero after reset).",
				Fields: []RegField{{Name: "DROP_AFTER_FAIL", Lo: 0, Width: 1, Doc: "1: after a failed segment, drop the connection's later segments silently until CONN_CLEAR (RFC 5041 §7.1)"}}},
		},
	}
}
