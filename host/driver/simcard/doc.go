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
// refused with an error response, which the card reports as a DMA fault
// (rnic.DMAFaultError to the verbs user). Config.Timing sets the DMA
// latency, its jitter, reordering across AXI IDs and backpressure
// (hw/sim.AXITiming). The card's interrupt wakes WaitInterrupt.
//
// # The check
//
// The model is fed the same register writes in the same order and runs
// to idle at each one, so it is ahead of the RTL; what it writes is kept
// as expectations, and every DMA write of the RTL must match one before
// it reaches host memory: stream and payload bytes by address (each byte
// once, against the model's earliest pending write there, however the RTL
// cuts its bursts), CQEs by content in order per CQ and QP (and at the
// ring slot and owner bit of the RTL's own count), events in order per
// object, QP status records equal to one of the model's or between the
// RTL's last and the model's latest. Register writes whose effect depends
// on how far the card has got (commands, the STag table, a lost
// connection) wait until the RTL has caught up with the model. Events
// whose existence depends on when the host armed something (CQ_NOTIFY,
// TX_DATA, RX_SPACE) are accepted without a counterpart.
//
// A disagreement ends the QP it concerns (the driver's driver.Checker
// hook) with a *MismatchError naming the transaction: kind, address, QP,
// the model's bytes and the RTL's. A wrong payload or stream write is
// dropped, a wrong CQE reaches the driver with STATUS FATAL_ERR, never as
// a success. Something the model wrote and the RTL still has not once it
// is idle (an operation the RTL does not serve) ends the QP the same way,
// so a user never waits for it forever.
package simcard
