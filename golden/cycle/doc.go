// Package cycle holds cycle-level models of the card's RTL blocks: for each
// block, its timing contract (latency, one beat per cycle, what it does under
// backpressure) written from the block's documentation and the RFCs, with
// the data computed by the golden protocol functions (hash/crc32 and
// golden/...). The models are never generated from the hardware IR: the
// co-simulation in hw/sim checks the generated RTL against them cycle by
// cycle, so they must stay independent.
//
// A model's Step takes one cycle's inputs, returns the outputs the block
// shows during that cycle (registered state plus combinational paths from
// the inputs), then takes the rising clock edge.
package cycle
