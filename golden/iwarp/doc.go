// Package iwarp is openiwarp's reference iWARP protocol engine: an RDMAP
// (RFC 5040) over DDP (RFC 5041) endpoint that runs over any net.Conn after
// the MPA startup exchange (golden/mpa). The software card of the host
// driver, the RTL checks and the interoperability tests all use it.
//
// The API mirrors libibverbs so the verbs layer can wrap it 1:1:
//
//	tab := mem.NewTable()                // the device's STag table
//	pd := tab.AllocPD()                  // protection domain
//	mr, _ := pd.RegisterMR(buf, addr, mem.LocalWrite|mem.RemoteWrite, 0)
//	cq := iwarp.NewCQ(256)
//	p, _ := mpa.Initiate(ctx, conn, mpa.Config{})
//	ep, _ := iwarp.New(conn, p, iwarp.Config{PD: pd, SendCQ: cq, RecvCQ: cq})
//	ep.PostRecv(iwarp.RecvWR{ID: 1, SGL: []iwarp.SGE{{Addr: addr, Length: 4096, LKey: mr.STag}}})
//	ep.PostSend(iwarp.SendWR{ID: 2, Opcode: iwarp.WRWrite, SGL: ..., RemoteAddr: raddr, RKey: rkey, Signaled: true})
//	wc, _ := cq.Wait(ctx)
//
// The protocol lives in package qp, a deterministic, single-threaded,
// sans-I/O core (work requests and ULPDUs in; segments, placements,
// completions and Terminates out) that the endpoint calls with one mutex
// held; the endpoint adds the connection around it. What the core does:
//
//   - Transmit: work requests leave in posting order, segmented to the
//     MULPDU (from the TCP MSS), RDMA Reads limited by ORD (later WRs wait
//     behind a Read that cannot go yet), Fence honoured, Read Responses
//     produced in request order. Send and Write complete when handed to
//     TCP; a Read when its whole Read Response is placed; completions come
//     out in posting order (RFC 5040 §5.5 rule 15).
//   - Memory work requests (WRBindMW, WRLocalInvalidate) take effect in
//     send-queue order and complete in posting order, as in verbs.
//   - Receive: every segment is checked before a byte is placed (RFC 5041
//     §7, RFC 5040 §7.2): DDP and RDMAP version, QN, MSN, MO, receive
//     buffer space, the STag check of package mem (PD, stream, rights,
//     bounds, wrap), IRD, and remote invalidation rights.
//   - Errors: the first error builds a Terminate with the layer, type, code
//     and copied headers of the receive-side error matrix (see
//     rdmap.Cause.Headers), drops every later inbound segment, completes
//     every outstanding work request in error (WCFlushErr), sends the
//     Terminate, closes TCP gracefully and reports the reason from Err. A
//     received Terminate is parsed (siw's swapped layout is accepted) and
//     reported the same way, without answering it.
//
// The work request, completion and error types, and the receive checks
// the card's golden model shares (CheckHeaders and the rest), are the
// core's, named here by aliases.
//
// Connection start follows MPA: the DDP/RDMAP version comes from the
// negotiated revision (1 for Rev 1 and 2, 0 for the draft-01 Rev 0); an MPA
// Responder sends nothing before the Initiator's first FPDU has arrived
// (RFC 5044 §7.1.2 rule 4); with the RFC 6581 peer-to-peer model the
// Initiator first sends the agreed RTR message (a zero-length Write, Read
// or Send). The MULPDU comes from the TCP MSS of the connection.
//
// What the endpoint adds is the connection. The MPA layer sits behind two
// small interfaces, Framer and Deframer, which mpa.Framer and
// *mpa.Deframer satisfy; the simulated-RTL card supplies its own. Each
// endpoint runs two goroutines, a transmitter and a receiver, both of
// which have exited when Close returns. Two shortcuts
// save a goroutine handoff at each end of a round trip: a lone WR of up
// to 4 KiB (or an RDMA Read) posted on an idle endpoint is sent by the
// PostSend caller itself, and a goroutine waiting on a CQ that one endpoint alone feeds reads that
// endpoint's socket itself while the receiver steps aside (CQ.Wait), so
// the netpoller wakes the goroutine that wants the completion. With the
// golden MPA layer, no markers and a TCP socket, Sends and Writes go out
// by writev with their payload read in place from registered memory.
// Config.AlignFPDUs writes one FPDU per Write, for captures read by
// dissectors that expect every TCP segment to start with an FPDU.
//
// Stream association: an endpoint's QPN is the stream that stream-scoped
// STags (mem.PD.RegisterMR with a QP) and type 2 windows are bound to; only
// such STags can be invalidated by the peer (RFC 5040 §8.1.1 #7).
package iwarp
