// Package qp is the protocol core of openiwarp's reference iWARP engine:
// one RDMAP (RFC 5040) over DDP (RFC 5041) queue pair as a deterministic,
// single-threaded state machine that does no I/O. It has no goroutines,
// locks, clocks or sockets; everything it does happens inside a method
// call, and the same calls in the same order give the same results.
//
// Verbs and bytes go in:
//
//   - PostSend and PostRecv validate work requests (opcode, SGL against
//     the local STag check, sizes, queue depth) and copy them onto the
//     send and receive queues.
//   - Receive takes one inbound ULPDU, as the MPA deframer delivers it, and
//     runs the receive-side error matrix (CheckHeaders, CheckSend,
//     CheckReadRequest, ...: digest §3.7) before a byte is placed.
//   - MPAError, LLPEnded, Close and Fail report what the layers below and
//     the application decide: an MPA error, the peer's FIN or a broken
//     connection, a graceful close, a transmit failure.
//
// Segments, placements, completions and Terminates come out:
//
//   - Peek says what the transmitter should do next (Job): emit a send
//     WR's or a Read Response's segments, hand over what was emitted, send
//     the Terminate, or end. Next emits one DDP segment as header bytes
//     and payload references (views of registered memory the caller may
//     send in place, with writev, or a copy), honouring posting order,
//     ORD (a Read beyond it waits, and every WR behind it), Fence, Read
//     Responses within IRD in request order, segmentation at the MULPDU,
//     the RFC 6581 RTR message and the MPA Responder's silence before the
//     Initiator's first FPDU. Memory WRs (Local Invalidate, Bind) take
//     effect in Next, in send-queue order.
//   - HandOver and Written bracket the caller's write to the LLP: a Send
//     or Write completes once its last segment is handed over (RFC 5040
//     §5.5 rule 14), and a failure racing with the write no longer
//     flushes it.
//   - Placement goes through Memory (*mem.Table satisfies it), with the
//     STag check of package mem on every call; completions go to a
//     Completer (the CQs), in posting order (RFC 5040 §5.5 rule 15).
//   - The first error builds the Terminate of its matrix row (layer, type,
//     code, copied headers), drops every later inbound segment and
//     completes every outstanding WR in error; TakeTerminate returns it as
//     a ULPDU to frame. A Terminate received fails the stream without an
//     answer.
//
// # Who drives it
//
// golden/iwarp.Endpoint runs a QP over a net.Conn: it holds one mutex
// around every call and keeps outside the core what a socket needs, its
// transmit and receive goroutines, MPA framing and deframing, writev from
// registered memory, the PostSend caller transmitting a small WR itself,
// the receive path answering small Reads, and CQ waiters reading the
// socket. The core's tests drive QPs directly: the error matrix
// (golden/iwarp/internal/matrix, which the endpoint's tests also send over
// TCP), transmit scheduling, and random verbs on two QPs wired back to
// back in memory.
//
// # Phase 2: the card's golden model
//
// host/driver/cardmodel (the card's transaction-level model) still
// implements the same protocol with its own queues, calling only the
// receive checks of this package. Adopting the core there means supplying:
//
//   - Memory backed by the card's STag table (cardmodel/stag.go) and the
//     Host's DMA: Verify is the table check alone; View and Read are a DMA
//     read into a card buffer (View's buffer must stay valid until Written
//     completes the WR, as a payload FIFO does); Place and PlaceTagged are
//     the check followed by the DMA write; Invalidate and RemoteInvalidate
//     update the card's table. Memory-window binds today call mem.MW.Bind
//     from Next; the card would need a Bind method on Memory instead.
//   - A Completer that writes CQEs (with the WQE index the card keeps for
//     each WR ID) and raises interrupts, returning false on CQ overrun;
//     the card's EQEs (Terminate sent or received, QP in error) follow
//     from Err and State after each call that may fail the stream.
//   - WQE decoding into SendWR/RecvWR before PostSend/PostRecv (SGLs and
//     inline data fetched by DMA first), and its transmit stream ring in
//     place of the socket: the card calls Next only while the ring has
//     room for a MULPDU-sized FPDU, frames with golden/mpa, then
//     HandOver/Written once the octets are in the ring.
//
// The co-simulation of the RTL card compares the card model's exact DMA
// transaction sequence, so the adoption must keep the order of Memory
// and Completer calls equal to the model's present DMA order (or change
// the RTL and model together).
package qp
