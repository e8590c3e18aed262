// Package simcard is the "sim" card: the one driver of the openiwarp card
// (host/driver/rnic) over the Verilated card top iwcard_w<W> (hw/sim),
// with a simulated host, and the card's transaction-level model
// (host/driver/cardmodel) beside it checking every DMA write.
//
// # The simulated host
//
// Phys is the driver.Phys the driver runs on. The card runs on one
// goroutine locked to its OS thread (its CPU time, CardCPU, is the card's,
// to subtract from the host's): it serves BAR0 accesses (each one an
// AXI4-Lite transaction the simulation clocks until it completes, so a
// read's side effects are exact) and clocks the card while it has work,
// until it has been quiet for Config.QuietCycles. The card's AXI4 master
// reaches host memory through an IOMMU model (host/driver/simhost): DMA
// memory and the buffers the driver mapped are reachable, anything else is
// refused with an error response. The RTL reports a refused status record,
// CQE or EQE write in DMA_FAULT_*, and a status record's or EQE's stops
// it (STATUS.FATAL: rnic.ErrCardFatal with its rnic.DMAFaultError to the
// verbs user), and a refused SQ or RQ read fails its QP (DMA_FAULT,
// QP_ERROR DMA); the other QP-level faults the card model reports (a
// CQE's, payload and ring accesses) it does not serve yet, and the
// checker then ends the QP naming the event the RTL did not
// write. Config.Timing sets the DMA latency, its jitter, reordering across
// AXI IDs and backpressure (hw/sim.AXITiming). The card's interrupt wakes
// WaitInterrupt.
//
// # The check
//
// The card model checks the RTL beside it (host/driver/cardcheck, which
// cardserve shares): every DMA write of the RTL must match one of the
// model's before it reaches host memory. A disagreement ends the QP it
// concerns (the driver's driver.Checker hook) with a *MismatchError naming
// the transaction: kind, address, QP, the model's bytes and the RTL's.
package simcard
