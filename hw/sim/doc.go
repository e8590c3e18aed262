// Package sim co-simulates the generated RTL against the cycle models of
// golden/cycle.
//
// Each block is Verilated (mk/hw.mk) into a shared object with the generic
// wrapper cxx/block.cpp and loaded here with dlopen, so one test binary can
// drive any number of blocks. A Bench joins the three parts of a block: the
// Verilated library, its port layout (from the hw/gen module) and a Model
// (a golden/cycle model behind a vector adapter). Run drives the RTL and the
// model with the same closed-loop random stimulus, batch by batch (the
// cycles of a batch run inside C++; Go compares afterwards), and compares
// every output port on every cycle. A mismatch names the cycle, the port,
// the expected and the actual value, and replays the failing window through
// a --trace build of the block into a VCD waveform.
//
// The same stimulus and expected outputs can be written as vector files for
// the generated VHDL test bench run by GHDL (ghdl.go).
//
// Benches ship for every block: CRC32CBench, MPATxBench, MPARxBench (with
// RxDriver, whose streams of FPDUs are cut into TCP segments and can carry
// faults) and the placement engine; PlacementEngine co-simulates the
// placement RTL segment by segment for other users (the STag table tests).
//
// # The whole card
//
// Card runs the card's top, iwcard_w64 or iwcard_w512 (hw/gen.CardTop),
// cycle by cycle with a simulated host around it; it is the physical
// card the driver's sim backend (host/driver/simcard's Device) runs:
//
//	mem := simhost.New()                       // an IOMMU: host/driver/simhost's IOVA space
//	m, err := mem.Map(buf)                     // buf at m's IOVA
//	c, err := sim.NewCard(sim.CardConfig{Width: 64, Seed: seed, Mem: mem,
//		Timing: sim.AXITiming{ReadLatency: 1, ReadJitter: 300, WriteJitter: 200, Reorder: true, Ready: 200},
//		Interrupt: func(v int) { ... },        // inside the call that clocks the card
//		Fault:     func(f sim.AXIFault) { ... }})
//	v, err := c.RegRead(cs.Status)            // BAR0: a blocking AXI4-Lite read (Read32 too)
//	err = c.RegWrite(cs.QPDBBase+..., pi)     // a blocking write; SLVERR is a *RegRespError (Write32 too)
//	busy, err := c.Run(1000)                  // clock the card; busy: DMA in flight or started
//	err = c.RunUntil(func() bool { ... }, limit)
//
// RegRead and RegWrite clock the card until the access completes (a few
// cycles; the card works meanwhile). The card's AXI4 master is served by
// an AXIHost over CardConfig.Mem (any Memory; the driver's backend gives
// host/driver/simhost.Space, an IOMMU whose refusals are faults and which
// stores records as ascending atomic 32-bit words, so a driver may poll an
// owner bit from another goroutine): reads after a latency with jitter,
// reordered and interleaved across IDs, write responses after theirs,
// random backpressure; an access Mem refuses is answered SLVERR and
// reported to Fault. Every cycle checks the AXI rules the card promises
// (INCR bursts of whole beats, aligned, never crossing 4 KiB, payload held
// under valid until taken, W after its address, wlast); a violation is an
// ErrAXI error from every later call. A Card is not safe for concurrent use: a backend
// serialises its calls, and the callbacks, which run inside those calls,
// must not call the Card.
package sim
