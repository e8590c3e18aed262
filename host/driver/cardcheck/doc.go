// Package cardcheck checks a card (the Verilated iwcard top, hw/sim.Card)
// against the card's transaction-level golden model
// (host/driver/cardmodel) running beside it, transaction by transaction.
// It is shared by the sim card (host/driver/simcard: a simulated host) and
// cardserve (test/cardserve: the card in a QEMU guest's PCI slot).
//
// A Pair is the device and the model: the model is fed the same register
// writes in the same order and runs to idle at each one, so it is ahead of
// the device; what it writes is kept as expectations, and every DMA write
// of the device must match one before it reaches host memory: stream and
// payload bytes by address (each byte once, against the model's earliest
// pending write there, however the RTL cuts its bursts), CQEs by content in
// order per CQ and QP (and at the ring slot and owner bit of the RTL's own
// count), events in order per object, QP status records equal to one of
// the model's or between the RTL's last and the model's latest. Register
// writes whose effect depends on how far the card has got (commands, the
// STag table, a lost connection) wait until the device has caught up with
// the model. Events whose existence depends on when the host armed
// something (CQ_NOTIFY, TX_DATA, RX_SPACE) are accepted without a
// counterpart.
//
// A disagreement is reported once per QP (Pair.OnMismatch) as a
// *MismatchError naming the transaction: kind, address, QP, the model's
// bytes and the device's. A wrong payload or stream write is dropped, a
// wrong CQE reaches the host with STATUS FATAL_ERR, never as a success.
// Something the model wrote and the device still has not once it is idle
// (an operation the RTL does not serve) is reported the same way, so a
// user never waits for it forever.
package cardcheck
