// Package driver is the host side of an openiwarp card: the Card interface
// that every backend implements, and the registry that picks a backend by
// name (database/sql style), so that the verbs layer runs unchanged on:
//
//   - "model": the openiwarp card's one driver (host/driver/rnic) over the
//     card's Go transaction-level model (host/driver/cardmodel), in process,
//     the default (package host/driver/modelcard, always linked by
//     host/verbs): every test drives the real rings, doorbells and stream
//     bridge;
//   - "sim" ("sim:64", "sim:512"): the same driver over the Verilated card
//     top iwcard_w64 or iwcard_w512 (hw/sim.Card) with a simulated host:
//     host memory behind an IOMMU model, DMA latency, reordering and
//     backpressure, interrupts; the card model runs beside it and checks
//     every DMA write, a disagreement ending the QP with a typed error
//     naming the transaction (package host/driver/simcard, cgo; import it
//     for its side effect). No golden engine is in its data path: every
//     byte is moved by RTL or the operation fails. The operations the
//     RTL does not serve yet are listed in the README;
//   - "pci:<PCI address>[,irq=<PCI address>]": the card's one driver over
//     the card in a PCI slot, bound to vfio-pci (package
//     host/driver/pcicard, import it for its side effect);
//   - "vfio:<PCI address>": a board behind VFIO (a separate package that
//     registers "vfio" the same way).
//
// The golden engine behind driver.Card (host/driver/model) is no longer a
// card: it is not registered, and stays only as the baseline the
// benchmarks compare the openiwarp card with (host/verbs/perf registers it
// as "golden" in its test binary).
//
// # What a card is
//
// A Card has two views. The physical view is what a PCIe function offers:
// 32/64-bit MMIO registers (Regs), memory the card reads and writes by DMA,
// addressed by IOVA (DMA), and asynchronous events (Events). The
// operational view is what the driver asks of the card: keep its STag
// table (protection domains, memory regions; RegisterMR), create completion
// queues (CreateCQ), and attach a queue pair to a connection's stream with
// the MPA parameters negotiated on it (Attach), after which work requests
// are posted to the QP and completions come out of its CQs.
//
// # The stream bridge
//
// The card's network side is a byte stream per connection (see the
// offload split in ARCHITECTURE.md). The connection manager (host/verbs)
// dials or accepts a kernel TCP socket, runs the MPA startup exchange on it
// (golden/mpa: private data, markers, CRC, revision, reject), and hands the
// socket and the negotiated mpa.Params to Card.Attach. The openiwarp card
// (model, sim, and a board) has per-QP stream rings in host memory that
// the driver's stream bridge copies to and from the socket with writev and
// read, straight from and into the rings. Either way the card talks to any iWARP peer on the
// network.
//
// # Work requests and completions
//
// Work requests, completions and their status codes are the golden
// engine's types (iwarp.SendWR, iwarp.RecvWR, iwarp.Completion with
// iwarp.Status, modelled on ibv_send_wr, ibv_recv_wr, ibv_wc and
// ibv_wc_status), and memory protection uses golden/iwarp/mem (PD, MR,
// STag = lkey = rkey, Access), so every backend reports the same thing in
// the same words. A backend with a hardware STag table keeps a mem.Table
// as its host-side mirror and writes each entry to the card as well.
//
// Errors wrap the sentinels of this package (ErrUnknownCard, ErrClosed,
// ErrInvalid) or the golden engine's (iwarp.ErrQueueFull,
// iwarp.ErrInvalidWR, iwarp.ErrCQOverflow, iwarp.ErrClosed, ...), so callers
// match them with errors.Is.
package driver
