// Package stagtab programs the STag table and page list of the card's
// placement engine through its register map (docs/regmap.md, generated as
// host/driver/regs from hw/gen/regmap_placement.go).
//
// A Programmer writes one entry at a time through a driver.Regs, at a base
// offset within the card's register space (BAR0 on a board): the page-list
// slots of a paged entry first, then every staging register, then
// STAG_COMMIT, so the engine switches from the old entry to the new one in
// one cycle and never sees a mix. It owns the page-list slots: a paged
// entry gets a run of consecutive slots from a next-fit allocator (freed
// slots are reused as late as possible, which keeps a segment still in
// flight through an old entry away from a new region's pages), and
// replacing or removing an entry frees its slots only after the commit or
// invalidation that stops the engine using them.
//
// Translation is contiguous (the region is one IOVA range) or paged (a list
// of 4 KiB IOVA pages, what an IOMMU mapping of ordinary host memory gives).
// Translate computes, from the same description, the host address a tagged
// offset lands at: tests and mirrors use it to know where the card must
// write.
//
// The engine ignores commits until it has cleared its table after reset and
// raised init_done: a Programmer refuses to write until Init has seen
// init_done, and Reset forgets everything it programmed when the card is
// reset.
//
// The encoder (AppendWrites) is a pure function of the entry; Decoder is
// the register map's semantics written independently from the map's
// documentation (staging registers, commands), the way the RTL decodes the
// writes, so that tests can check one against the other.
package stagtab
