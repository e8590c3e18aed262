// Package verbs is openiwarp's RDMA verbs API: the objects and calls of
// libibverbs and librdmacm, in Go idioms, over any openiwarp card.
//
//	ctx, _ := verbs.Open("model")        // ibv_open_device: "model", "sim", "vfio:0000:03:00.0"
//	pd, _ := ctx.AllocPD()               // ibv_alloc_pd
//	mr, _ := pd.RegMR(buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite) // ibv_reg_mr
//	cq, _ := ctx.CreateCQ(256)           // ibv_create_cq
//	qp, _ := pd.CreateQP(verbs.QPInitAttr{SendCQ: cq, RecvCQ: cq}) // ibv_create_qp (RC)
//	verbs.Dial(c, "192.0.2.1:4791", qp, verbs.ConnParam{})         // rdma_connect
//	qp.PostSend(verbs.SendWR{Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{mr.SGE(0, n)},
//		RemoteAddr: raddr, RKey: rkey, Signaled: true})              // ibv_post_send
//	wc, _ := cq.Wait(c)                  // ibv_poll_cq, or a blocking wait with a context
//
// Memory regions are Go byte slices; their addresses are virtual
// addresses as in libibverbs, and one STag serves as lkey and rkey.
// Work requests support RDMA Write, RDMA Read, Send, Send with Invalidate
// and Send with Solicited Event, scatter/gather lists, signaled and
// unsignaled completion, inline data and the read fence. Completions carry
// ibv_wc_status-like codes.
//
// The connection manager runs over kernel TCP: Listen and Accept on the
// passive side (ConnRequest.Accept or Reject, with private data), Dial on
// the active side, and the MPA options of RFC 5044 and RFC 6581 (markers,
// CRC, revision, IRD/ORD, peer-to-peer RTR) in ConnParam and
// ListenConfig. After the MPA exchange the socket is handed to the card's
// QP (see host/driver's stream bridge), so a QP talks to any iWARP peer,
// Linux soft-iWARP included. The MPA exchange has its own limit
// (StartupTimeout, DefaultStartupTimeout), and a listener keeps at most
// ListenConfig.MaxStartups exchanges half-done, closing further
// connections at once, so a peer that stalls in its startup cannot
// exhaust a server; Listener.Stats and ListenConfig.OnStartupError report
// the failed ones.
//
// Misuse never panics or hangs: use after Close or Destroy returns
// ErrClosed, posting before a connection ErrNotConnected, posting to a QP
// whose stream ended ErrQPError (wrapping why), a bad lkey or SGE
// iwarp.ErrInvalidWR, a CQ that lost a completion iwarp.ErrCQOverflow,
// and a wait whose context ends returns the context's error.
//
// The same test suite (host/verbs/verbstest) runs on the model card here
// and on the Verilated card in host/driver/simcard.
package verbs
