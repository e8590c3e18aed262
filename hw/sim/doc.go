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
// placement RTL segment by segment for other users (the sim card).
package sim
