package gen

import (
	"fmt"
	"math/big"
)

// CardTxWidths lists the data widths card_tx ships at.
var CardTxWidths = []int{64, 512}

// CardTxGatherWidths lists the widths at which card_tx serves SGE WQEs
// (gathered payload): every width it ships at.
var CardTxGatherWidths = []int{64, 512}

// CardTxGathers reports whether card_tx_w<width> serves SGE WQEs.
func CardTxGathers(width int) bool {
	for _, w := range CardTxGatherWidths {
		if w == width {
			return true
		}
	}
	return false
}

// Sizes of card_tx.
const (
	CardTxQPs        = 1024 // QP contexts
	CardTxPushSlots  = 4    // pushed blocks held until their WQE is fetched
	CardTxCplDepth   = 16   // WQEs framed whose completion waits for its ring writes
	CardTxRingGuard  = 1024 // free TX ring bytes a WQE needs before it starts
	cardTxRecDepth   = 4    // FPDUs framed whose ring writes are not yet issued
	cardTxFeedDepth  = 3    // payload words read ahead for ddp_tx
	cardTxMaxWQEByte = 512  // bytes of the largest WQE (8 basic blocks)
	cardTxHdrBytes   = 32   // WQE header
	cardTxMaxInline  = 480  // inline bytes of a WQE
)

// card_tx engine states.
const (
	txIdle = iota
	txPop
	txCtx
	txDecide
	txFirst  // the first block is coming in (DMA or push)
	txHdr    // the header is in: check it, fetch the other blocks
	txFetch  // issuing the other blocks' reads
	txRest   // the other blocks are coming in
	txFlush  // 512 bits: the last half block goes to the buffer
	txFeed   // descriptor and payload to ddp_tx
	txDrain  // the message's last segment goes into mpa_tx
	txWB     // context written back, completion queued
	txChk    // every SGE's lkey is checked through placement
	txRsp    // a Read Request record is read from the pool
	txRspLd  // ... its Read Response set up as a one-SGE RDMA Write (SGE word 0)
	txRspSge // 64 bits: SGE word 1
	txMop    // a Local Invalidate or bind goes through placement's mop port
	txFault  // a read of the WQE or of its payload faulted: its DMA_FAULT event is taken before the QP's QP_ERROR DMA is raised
)

// thermo is the w-bit mask of the bits below n (n a signal of any width).
func thermo(n *Signal, w int) Expr {
	parts := make([]Expr, w)
	for i := 0; i < w; i++ {
		parts[w-1-i] = Lt(C(n.W, uint64(i)), n)
	}
	return Cat(parts...)
}

// incr is x + 1.
func incr(x *Signal) Expr { return Add(x, C(x.W, 1)) }

// CardTx builds card_tx_w<width>: the card's transmit engine
// (docs/card-rtl.md), with dma_rd, dma_wr, ddp_tx and mpa_tx inside.
func CardTx(width int) (*Module, error) {
	if width != 64 && width != 512 {
		return nil, fmt.Errorf("%w: card_tx data width %d (64 or 512)", ErrInvalid, width)
	}
	W := width
	L := W / 8
	LB := log2(L)
	rdCfg, wrCfg := DMARdDefault(W), DMAWrDefault(W)
	ddp, err := DDPTx(W)
	if err != nil {
		return nil, err
	}
	mpa, err := MPATx(W)
	if err != nil {
		return nil, err
	}
	drd, err := DMARd(rdCfg)
	if err != nil {
		return nil, err
	}
	dwr, err := DMAWr(wrCfg)
	if err != nil {
		return nil, err
	}
	const QB = 10 // QP number bits
	m := NewModule(fmt.Sprintf("card_tx_w%d", W),
		"RFC 5040 §4.4, §5.1, §7 (Send, Send with Invalidate, Send with Solicited Event, RDMA Write, RDMA Read Request; ORD; completions in posting order); RFC 5041 §5.2 (segmentation at the MULPDU); RFC 5044 §4 (FPDU framing, markers, CRC); docs/card.md (QP context, doorbells, push window, WQE, transmit stream ring)",
		fmt.Sprintf("The card's transmit engine, %d-bit data path (docs/card-rtl.md): per-QP transmit context in block RAM (%d QPs) written by the QP command; SQ_PI, TXS_CI and push doorbells; a round-robin scheduler over QPs with posted work (a FIFO of QP numbers in block RAM and one queued bit per QP: a QP is in it at most once, so it never overflows, and a QP sends one WQE per turn); WQE fetch by DMA (dma_rd: the first basic block, then the others in one read, two where they wrap the ring), from a pushed block (%d held, matched by QP and SQ index), or from a read ahead (%d entries, by QP number: a window of up to eight of the QP's posted blocks, read from its next WQE as soon as its current WQE's size is known and extended from its end, up to two reads in flight, once half of it is behind the next WQE; or an idle QP's first WQE's one or two blocks at the SQ_PI doorbell that posts it) without a DMA read (a QP popped while its next WQE's read ahead is still coming goes back to the scheduler until it lands); the first payload read of a gathered Send or Write read ahead into one of %d slots of %d KiB (the first page, and the next ones of a contiguous run up to the slot's end) as soon as its WQE's block is (its lkey looked up first), and taken for the gather's first requests when the WQE starts if the slot's QP, SQ index, host address and length match; WQE decode; the inline payload through ddp_tx (DDP/RDMAP headers, segmentation at the QP's MULPDU) and mpa_tx (markers and CRC at the QP's stream offset; each FPDU's wire length is computed here as it enters mpa_tx); the transmit stream ring writer (dma_wr: each FPDU at TXS_PI modulo the ring size, in two writes where it wraps, the second realigned to lane 0); one record per WQE in posting order once its last ring write has its write response.", W, CardTxQPs, CardTxPushSlots, CardTxPrefetch, CardTxPaySlots, cardTxSlotBytes(L)/1024),
		fmt.Sprintf("This increment serves inline Send, Send with Invalidate (either with Solicited Event) and RDMA Write WQEs, signaled or not, and RDMA Read WQEs (at most one SGE, the sink, not inline): the Read Request (untagged, QN 1, its own MSN) goes out while fewer than the QP's ORD Reads are outstanding, and the Read completes when its Read done (s_rdone, placement's m_done) is taken, oldest first: the engine then reads the Read WQE's first block again from the SQ for its WR_ID, SIGNALED, BBS and sink length (no per-QP ORQ memory). A fenced WQE waits while Reads are outstanding, a Read while ORD are; any other WQE starts behind outstanding Reads, and its completion waits for them: when a Read completes, the engine walks the SQ from SQ_CI, completing (first block read again; an SGL's lengths summed by a check pass over its blocks) every WQE sent behind it up to the next outstanding Read or the first WQE not started, so completions stay in posting order with no per-QP completion memory. Local Invalidate and BIND_MW WQEs (not inline) go to placement's mop port (m_mop) when they start and send nothing: the STag is invalidated, or the window's entry written, before the next WQE starts; one refused completes with LOC_PROT_ERR (MW_BIND_ERR for a bind) and fails the QP as a failed lkey check does (a WQE that fails so, or is malformed, behind an outstanding Read completes after the Read, which the QP's flush completes first, with its own status). A malformed WQE (an opcode the SQ does not take, an inline length or SGL its blocks cannot hold, a bad BBS) completes with LOC_QP_OP_ERR and fails the QP with a Local Catastrophic Terminate, as the card model does. A DMA error response to a WQE read (a new WQE's, before anything of it is sent) fails the QP as the card model's fetch does: a DMA_FAULT event (OBJ the QP, INFO the faulted block's address bits 31:0; m_fault_* name it for DMA_FAULT_*), then QP_ERROR with INFO DMA and a Local Catastrophic Terminate, and what was posted from that WQE to SQ_PI is dropped without completions (SQ_CI moves past it); stat_halt/stat_halt_qpn report it too. A read error of a WQE fetched to flush it (the QP in error) raises DMA_FAULT the same way and drops everything from SQ_CI to SQ_PI without completions, as the model's flush does (a flush waits for the event slot). A read error of a WQE fetched again to complete it (a Read's, or one sent behind outstanding Reads; the card model keeps such WQEs and never reads one twice) fails the QP as a new WQE's does, and drops everything from SQ_CI to SQ_PI with its outstanding Reads; every fetch of a WQE at SQ_CI waits for the event slot. A DMA error response to a payload read (a gathered WQE's, a Read Response's source; read one request per 4 KiB page) cuts the message at the FPDU holding the refused request's first byte, as the card model, which reads a segment before framing it, sends nothing of that segment: no further byte is read (zeros end the message), DMA_FAULT (OBJ the QP, INFO the request's address bits 31:0) is raised, an FPDU past the cut already in mpa_tx is written to the ring but never published and the ones entering later are dropped before the ring writer, the QP's TXS_PI goes back to the cut, and the QP fails with QP_ERROR DMA and a Local Catastrophic Terminate (sent at the cut); the WQE is not retired, so the flush completes it with WR_FLUSH_ERR. A transmit ring write the host refuses (an error completion of dma_wr, taken only once no record can go out before more write responses) fails its QP as the card model's drain does, a write response late: the QP is dead until CREATE (its records that complete a WQE complete it WR_FLUSH_ERR, and none moves TXS_PI: m_cpl_keep_txs), goes to error with a silent record, and its turn raises DMA_FAULT (OBJ the QP, INFO the first refused byte from dma_wr's m_done_err_burst; m_fault_write), then QP_ERROR DMA, and gives the Terminate record with TXS_PI at the refused FPDU's start and no Terminate sent; the FPDUs written past it are never published. A QP already in error gets a quiet silent record in place of its Terminate record (a Terminate not yet sent never is): DMA_FAULT, no second QP_ERROR. QP commands: CREATE takes the staged context; ERROR puts a live QP in error (taken one cycle after it is offered: the QP's state is read first; a QP that does not exist is left alone), after which every WQE posted and not completed, the ones posted later included, completes in posting order with WR_FLUSH_ERR (its first block read from the SQ at SQ_CI for its opcode, WR_ID and BBS; a bad BBS takes every block posted, as the card model does) and nothing more is sent, but for a Read whose Read done is taken before the flush reaches it (card_rx places nothing on a QP in error, so every Read done is of a response placed before the error, though it may reach card_tx after the ERROR) and the WQEs sent behind it: once the QP's Terminate is sent and its Read Requests dropped, they complete as on a live QP (the card model completes a Read as its response's last segment is placed); DESTROY frees a QP in error; CLOSE is taken without effect here (card_stat decides CLOSED: it asks m_owed whether the QP still owes a Read Response, from the pool, the engine or a record not yet taken, and reports CLOSED on s_closed, after which the QP's Read Requests are dropped with their IRD entries kept, as the card model's CLOSED QP sends nothing). A WQE starts only when its TX ring has %d bytes free (more than the FPDUs of %d inline bytes take at any MULPDU); otherwise the QP waits for a TXS_CI doorbell, so no QP blocks another. One WQE is segmented at a time; framing, ring writes and completions of earlier WQEs overlap it, except on a tight CQ (cq_tight): there a WQE starts only once every completion before it has its verdict (cpl_hold low, its own completion queue empty), so that the WQE behind one whose completion overran is flushed, never sent, as in the card model; its QP goes back to the scheduler meanwhile. A record of s_term with s_term_reason (the top's sweep of a CQ that overran) raises QP_ERROR with that INFO instead of TERM_SENT.", CardTxRingGuard, cardTxMaxInline),
		"Records out (m_cpl_*): one per WQE in posting order once its ring bytes are written: a CQE to write if m_cpl_cqe (the WQE was signaled), and the QP's new SQ_CI and TXS_PI for its status record either way. A message longer than a quarter of the ring also gives progress records (no CQE, SQ_CI unchanged, TXS_PI at the end of an FPDU that is not the message's last and whose end crosses a quarter of the ring), so the host drains the ring while the message is written. An RDMA Read gives two: one without a CQE when its Read Request is written (TXS_PI moves, SQ_CI does not), and its completion when its Read done is taken (SQ_CI moves past it); so does a WQE sent behind an outstanding Read (its completion comes from the walk).",
	)
	clk := m.Clock()
	rst := m.ResetPort()

	// --- ports ---
	qpValidIn := m.Input("s_qp_valid", 1, "a QP command (card_regs qp_cmd)")
	qpReady := m.Output("s_qp_ready", 1, "")
	qpOpIn := m.Input("s_qp_op", 4, "QP_OP: 1 CREATE, 3 ERROR (a live QP: flush), 4 DESTROY (a QP in error); 2 CLOSE is taken without effect (card_stat's; s_closed)")
	qpNumIn := m.Input("s_qp_num", QB, "QP number")
	qpSQBase := m.Input("s_qp_sq_base", 64, "staged: SQ ring address (aligned to its size)")
	qpSQLog := m.Input("s_qp_sq_log", 5, "staged: log2 of the SQ's basic blocks (0..16)")
	qpTXSBase := m.Input("s_qp_txs_base", 64, "staged: TX stream ring address (aligned to its size)")
	qpTXSLog := m.Input("s_qp_txs_log", 5, "staged: log2 of the TX ring's bytes (12..24)")
	qpMULPDU := m.Input("s_qp_mulpdu", 16, "staged: MULPDU (128..64768)")
	qpMarkers := m.Input("s_qp_markers", 1, "staged: insert markers")
	qpCRC := m.Input("s_qp_crc", 1, "staged: CRC32c on")
	qpRev0 := m.Input("s_qp_rev0", 1, "staged: MPA revision 0 peer (DDP and RDMAP version 0)")
	qpSendCQ := m.Input("s_qp_send_cq", QB, "staged: CQ of send completions")
	qpORD := m.Input("s_qp_ord", 5, "staged: ORD, RDMA Reads outstanding to the peer (1..16)")
	qpPD := m.Input("s_qp_pd", 32, "staged: the QP's protection domain (lkey checks)")

	dbValid := m.Input("s_db_valid", 1, "a doorbell (card_regs m_db)")
	dbReady := m.Output("s_db_ready", 1, "")
	dbKind := m.Input("s_db_kind", 3, "DB_KIND: QP_DB_SQ_PI, QP_DB_TXS_CI and QP_DB_PUSH act, and QP_DB_STREAM with RX_LOST (no WQE or Read Response of the QP starts until its ERROR comes on s_end); others are taken without effect")
	dbIndex := m.Input("s_db_index", QB, "QP number")
	dbValue := m.Input("s_db_value", 32, "the value written")
	dbPushOK := m.Input("s_db_push_ok", 1, "QP_DB_PUSH: s_db_push_data holds the whole block")
	dbPushData := m.Input("s_db_push_data", 512, "QP_DB_PUSH: the block, byte 0 in bits 7:0")

	rdnValid := m.Input("s_rdone_valid", 1, "Read done (card_rx m_rdone: placement's m_done once the writes up to it have their responses): the last Read Response segment of a QP is placed")
	rdnReady := m.Output("s_rdone_ready", 1, "")
	rdnQP := m.Input("s_rdone_qp", QB, "its QP (placement m_done_qp, low bits)")
	rdnSTag := m.Input("s_rdone_stag", 32, "its STag (m_done_stag; not checked here)")
	rdnTO := m.Input("s_rdone_to", 64, "its TO (m_done_to; not checked here)")
	rdnLen := m.Input("s_rdone_len", 16, "its ULPDU length (m_done_len; not checked here)")

	endValid := m.Input("s_end_valid", 1, "the peer's stream of a QP ended (card_stat m_end: RX_FIN and RXS_CI at RXS_PI, behind every Read done of that stream) or was lost (RX_LOST)")
	endReady := m.Output("s_end_ready", 1, "")
	endQPN := m.Input("s_end_qpn", QB, "its QP")
	endLost := m.Input("s_end_lost", 1, "RX_LOST: the QP goes to error (as QP_CMD ERROR); else its outstanding Reads are flushed")

	rrValid := m.Input("s_rreq_valid", 1, "a Read Request to answer (card_rx m_rreq): it passed every receive check")
	rrReady := m.Output("s_rreq_ready", 1, fmt.Sprintf("a record is taken while one of the %d pool slots is free (paces only)", CardTxRReqPool))
	rrQPN := m.Input("s_rreq_qpn", QB, "")
	rrSinkSTag := m.Input("s_rreq_sink_stag", 32, "Data Sink STag: the Read Responses' STag")
	rrSinkTO := m.Input("s_rreq_sink_to", 64, "Data Sink TO: the first Read Response's TO")
	rrSize := m.Input("s_rreq_size", 32, "bytes to read")
	rrSrcSTag := m.Input("s_rreq_src_stag", 32, "Data Source STag (checked again, remote read, before each piece is read)")
	rrSrcTO := m.Input("s_rreq_src_to", 64, "Data Source TO")
	rrDDP := m.Input("s_rreq_hdr", 8*untaggedHdr, "the Read Request's DDP header (kept for the Terminate of a source revoked before the response is sent)")
	tmValid := m.Input("s_term_valid", 1, "a receive-side error (card_rx m_rxterm): the QP goes to error (as QP_CMD ERROR, taken when no command of card_regs or lost record is offered and the event slot is free), TERM_SENT is raised, and its Terminate is sent at the QP's next turn")
	tmReady := m.Output("s_term_ready", 1, "")
	tmQPN := m.Input("s_term_qpn", QB, "")
	tmCause := m.Input("s_term_cause", 16, "the Terminate's Layer (15:12), EType (11:8), Error Code (7:0)")
	tmHdr := m.Input("s_term_hdr", 8*untaggedHdr, "the offending segment's DDP header, byte 0 in bits 7:0")
	tmSegLen := m.Input("s_term_seglen", 16, "the offending segment's length")
	tmRDMA := m.Input("s_term_rdma", 8*cardTxReadReqBytes, "a Read Request's RDMAP header, byte 0 in bits 7:0 (copied when the cause asks for it)")
	tmRecv := m.Input("s_term_recv", 1, "the record is a Terminate the peer sent (card_rx m_rxterm_recv; cause: its own): TERM_RECV, no Terminate is sent, and the oldest WQE started and not done completes with the cause's status")
	tmFault := m.Input("s_term_fault", 1, "the record is a DMA fault's (card_rx's receive WQE read, receive ring read or payload write): DMA_FAULT (OBJ the QP, INFO s_term_fault_addr's bits 31:0) is raised before the record is taken, and named on m_fault_*")
	tmFaultAddr := m.Input("s_term_fault_addr", 64, "the faulted address")
	tmFaultWr := m.Input("s_term_fault_write", 1, "the faulted access is a write (card_rx's payload writes): named on m_fault_write")
	tmReason := m.Input("s_term_reason", 8, "QP_ERR, not 0 for a local failure of the QP (a CQ overrun): its event is QP_ERROR with this INFO instead of TERM_SENT (the model's toError), and its Terminate (s_term_cause) is sent as for any record")
	evValid := m.Output("m_ev_valid", 1, "TERM_SENT, TERM_RECV or QP_ERROR (card_cq's second event port): a record of s_term put its QP in error")
	evReady := m.Input("m_ev_ready", 1, "")
	evType := m.Output("m_ev_type", 8, "EQE_TYPE: TERM_SENT, TERM_RECV or QP_ERROR")
	evQPN := m.Output("m_ev_qpn", QB, "OBJ: the QP")
	evCause := m.Output("m_ev_cause", 16, "TERM_LAYER (15:12), TERM_TYPE (11:8), TERM_CODE (7:0); 0 for QP_ERROR")
	evInfo := m.Output("m_ev_info", 32, "INFO: QP_ERROR's QP_ERR (s_term_reason, or DMA), DMA_FAULT's address bits 31:0, else 0")
	faultV := m.Output("m_fault_valid", 1, "pulse: a WQE read of the engine got an error response, or a DMA fault's record came (its DMA_FAULT event is raised now)")
	faultQPN := m.Output("m_fault_qpn", QB, "the QP")
	faultAddr := m.Output("m_fault_addr", 64, "the faulted WQE block's address")
	faultWr := m.Output("m_fault_write", 1, "the fault is a write's (a record's s_term_fault_write); the engine's own are reads")
	rissV := m.Output("m_rd_issue_valid", 1, "an RDMA Read Request went out: placement counts the QP's Reads outstanding (placement s_rd_issue)")
	rissQP := m.Output("m_rd_issue_qp", QB, "")
	rissN := m.Output("m_rd_issue_count", 16, "the QP's Read Requests so far, plus one (its next Read Request MSN)")
	rissSTag := m.Output("m_rd_issue_stag", 32, "the Read's sink: STag (its SGE's LKEY; zero without an SGE)")
	rissTO := m.Output("m_rd_issue_to", 64, "... TO (the SGE's ADDR)")
	rissLen := m.Output("m_rd_issue_len", 32, "... length (the SGE's LENGTH)")
	rdoValid := m.Output("m_rreq_done_valid", 1, "a Read Request is answered (its last Read Response segment is on the ring) or dropped (its QP is in error): card_rx's IRD entry is free")
	rdoReady := m.Input("m_rreq_done_ready", 1, "")
	rdoQPN := m.Output("m_rreq_done_qpn", QB, "")

	cplValid := m.Output("m_cpl_valid", 1, "a WQE is done (posting order)")
	cplReady := m.Input("m_cpl_ready", 1, "")
	cplCQE := m.Output("m_cpl_cqe", 1, "write a CQE (signaled); else only the status record moves")
	cplCQ := m.Output("m_cpl_cq", QB, "the QP's send CQ")
	cplQPN := m.Output("m_cpl_qpn", QB, "QP number")
	cplWRID := m.Output("m_cpl_wr_id", 64, "CQE WR_ID")
	cplOp := m.Output("m_cpl_opcode", 8, "CQE OPCODE (WC_OPCODE)")
	cplStatus := m.Output("m_cpl_status", 8, "CQE STATUS (WC_STATUS)")
	cplLen := m.Output("m_cpl_byte_len", 32, "CQE BYTE_LEN")
	cplSQCI := m.Output("m_cpl_sq_ci", 16, "the QP's SQ_CI after this WQE (status record)")
	cplTXSPI := m.Output("m_cpl_txs_pi", 32, "the QP's TXS_PI after this WQE's FPDUs (status record)")
	cplTerm := m.Output("m_cpl_term", 1, "the record is a Terminate's (no CQE): the QP is in ERROR and its transmit stream closed")
	cplKeep := m.Output("m_cpl_keep_txs", 1, "the record leaves TXS_PI where it is: a record of a QP whose transmit ring write was refused (its WQE completes WR_FLUSH_ERR), which publishes nothing past the refused FPDU")
	cplTermCause := m.Output("m_cpl_term_cause", 16, "CQE TERM_LAYER (15:12), TERM_TYPE (11:8), TERM_CODE (7:0): the peer's Terminate that blames the WQE, else 0")
	bdbValid := m.Output("m_baddb_valid", 1, "an SQ_PI doorbell (or a push) moved SQ_PI more than the SQ's size past SQ_CI, or behind the blocks the engine has taken (SQ_PI unchanged), or the engine found TXS_CI past TXS_PI when the QP had bytes to send: the QP goes to error with QP_ERROR BAD_DOORBELL (the top's QP command fork); doorbells wait until it is taken")
	bdbReady := m.Input("m_baddb_ready", 1, "")
	bdbQPN := m.Output("m_baddb_qpn", QB, "")
	cqTight := m.Input("cq_tight", CardTxQPs, "card_cq's cq_tight: bit n, CQ n has few entries free")
	cplHold := m.Input("cpl_hold", 1, "a completion is on its way to card_cq (card_stat, card_cq) or a CQ overrun is being served: a WQE on a tight CQ waits")
	haltOut := m.Output("stat_halt", 1, "sticky: a DMA read of a WQE got an error response")
	haltQPN := m.Output("stat_halt_qpn", QB, "the QP of the last such read")
	dmaErrOut := m.Output("stat_dma_err", 1, "sticky: a DMA of card_tx got an error response")

	// lkey checks through placement's check port (s_chk_* there, m_chk_* here and back).
	ckReqV := m.Output("m_chk_valid", 1, "an lkey check or lookup for placement's s_chk port")
	ckReqR := m.Input("m_chk_ready", 1, "placement's s_chk_ready")
	ckSTag := m.Output("m_chk_stag", 32, "the SGE's lkey")
	ckPD := m.Output("m_chk_pd", 32, "the QP's PD")
	ckQP := m.Output("m_chk_qp", 32, "the QP number")
	ckNeed := m.Output("m_chk_need", 4, "rights needed (0: a local read)")
	ckTO := m.Output("m_chk_to", 64, "tagged offset")
	ckLen := m.Output("m_chk_len", 32, "bytes")
	ckTag := m.Output("m_chk_tag", 8, "0")
	ckV := m.Input("s_chk_valid", 1, "a verdict from placement's m_chk port (card_tx takes every one at once)")
	ckR := m.Output("s_chk_ready", 1, "always 1")
	ckRTag := m.Input("s_chk_tag", 8, "not used")
	ckFault := m.Input("s_chk_fault", 3, "0 OK, else the mem.Fault")
	ckAddr := m.Input("s_chk_addr", 64, "host address of the piece")
	ckRun := m.Input("s_chk_run", 32, "bytes contiguous from there")
	tblWr := m.Input("s_tbl_wr", 1, "placement's m_tbl_wr: the STag table is written (a read-ahead lookup's verdict no longer holds)")

	// Local Invalidate and bind through placement's mop port (s_mop_* there).
	mopV := m.Output("m_mop_valid", 1, "a Local Invalidate or bind for placement's s_mop port")
	mopR := m.Input("m_mop_ready", 1, "placement's s_mop_ready")
	mopBind := m.Output("m_mop_bind", 1, "1: bind (BIND_MW), 0: Local Invalidate")
	mopSTag := m.Output("m_mop_stag", 32, "INV_STAG: the STag invalidated, or the window's new STag")
	mopPD := m.Output("m_mop_pd", 32, "the QP's PD")
	mopQP := m.Output("m_mop_qp", 32, "the QP number")
	mopMR := m.Output("m_mop_mr", 32, "BIND.MR_STAG")
	mopAddr := m.Output("m_mop_addr", 64, "BIND.ADDR")
	mopLen := m.Output("m_mop_len", 64, "BIND.LENGTH")
	mopAcc := m.Output("m_mop_access", 4, "BIND.ACCESS")
	mopT2 := m.Output("m_mop_type2", 1, "BIND.TYPE2")
	mopDone := m.Input("s_mop_valid", 1, "placement's m_mop_valid: the operation is done")
	mopOK := m.Input("s_mop_ok", 1, "placement's m_mop_ok")

	// AXI4 master ports: read channels of dma_rd, write channels of dma_wr.
	axi := map[string]*Signal{}
	for _, sub := range []*Module{drd, dwr} {
		for _, p := range sub.Ports {
			if len(p.Name) > 6 && p.Name[:6] == "m_axi_" {
				if p.Dir == In {
					axi[p.Name] = m.Input(p.Name, p.W, p.Comment)
				} else {
					axi[p.Name] = m.Output(p.Name, p.W, p.Comment)
				}
			}
		}
	}
	var unused []Expr

	st := m.RegDecl("eng_state", 5, "engine state")
	stIs := func(s int) *Signal {
		return m.WireOf(fmt.Sprintf("in_state%d", s), Eq(st, C(5, uint64(s))), "")
	}
	sIdle, sPop, sCtx, sDecide := stIs(txIdle), stIs(txPop), stIs(txCtx), stIs(txDecide)
	sFirst, sHdr, sFetch, sRest := stIs(txFirst), stIs(txHdr), stIs(txFetch), stIs(txRest)
	sFlush, sFeed, sDrain, sWB := stIs(txFlush), stIs(txFeed), stIs(txDrain), stIs(txWB)
	sChk := stIs(txChk)
	sRsp, sRspLd, sRspSge := stIs(txRsp), stIs(txRspLd), stIs(txRspSge)
	sMop := stIs(txMop)

	// --- QP commands ---
	dbv := m.RegDecl("db_v", 1, "a doorbell is being served")
	bdbV := m.RegDecl("baddb_v", 1, "a bad SQ_PI's QP waits to go to error")
	// RX_LOST (card_stat's m_end with lost) is served as an ERROR command
	// of the QP when no command of card_regs is offered; once its state
	// read has started it keeps the command port until it is taken.
	// A Terminate record (s_term) is served so too, when neither is.
	lostSel := m.RegDecl("lost_sel", 1, "the lost record is the command whose state was read")
	termSel := m.RegDecl("term_sel", 1, "the Terminate record is the command whose state was read")
	evV := m.RegDecl("term_ev_v", 1, "a TERM_SENT event waits to be taken")
	lostOffer := m.WireOf("cmd_lost_offer", And(endValid, endLost, Not(qpValidIn)), "")
	selL := m.WireOf("cmd_sel_lost", Or(lostSel, And(lostOffer, Not(termSel))), "the command is the lost record's ERROR")
	// A DMA fault's record raises its DMA_FAULT first (fltGo, the engine
	// idle and the event slot free), and is taken only after that.
	fltDone := m.RegDecl("term_fault_raised", 1, "the offered record's DMA_FAULT is raised")
	recFree := m.WireOf("cmd_term_free", And(tmValid, Not(qpValidIn), Not(And(endValid, endLost)), Not(lostSel), Not(evV)), "")
	fltGo := m.WireOf("term_fault_go", And(recFree, tmFault, Not(fltDone), Not(termSel), sIdle), "the record's DMA_FAULT is raised now")
	selT := m.WireOf("cmd_sel_term", Or(termSel, And(recFree, Or(Not(tmFault), fltDone))), "the command is the Terminate record's ERROR")
	qpValid := m.WireOf("cmd_valid", Or(selL, selT, qpValidIn), "")
	qpOp := m.WireOf("cmd_op", Sel(Or(selL, selT), C(4, 3), qpOpIn), "")
	qpNum := m.WireOf("cmd_num", Sel(selL, endQPN, Sel(selT, tmQPN, qpNumIn)), "")
	isCreate := m.WireOf("cmd_is_create", Eq(qpOp, C(4, 1)), "")
	cmdRd := m.RegDecl("cmd_rd", 1, "the QP's state for a command other than CREATE was read last cycle")
	m.Assign(qpReady, And(Not(selL), Not(selT), Not(dbv), sIdle, Or(isCreate, cmdRd)))
	cmdGo := m.WireOf("cmd_go", And(qpValid, Not(dbv), sIdle, Or(isCreate, cmdRd)), "a QP command is taken")
	cmdRdNext := m.WireOf("cmd_rd_next", And(qpValid, Not(dbv), sIdle, Not(isCreate), Not(cmdRd)), "")
	m.Drive(cmdRd, big.NewInt(0), cmdRdNext, nil)
	m.Drive(lostSel, big.NewInt(0), And(selL, cmdRdNext), nil)
	m.Drive(termSel, big.NewInt(0), And(selT, cmdRdNext), nil)
	m.Assign(tmReady, And(selT, cmdGo))
	m.Drive(fltDone, big.NewInt(0), And(Or(fltDone, fltGo), Not(And(selT, cmdGo))), nil)
	create := m.WireOf("cmd_create", And(cmdGo, isCreate), "")
	ctxRdAddr := m.Wire("ctx_rd_addr", QB, "")
	cur := m.RegDecl("cur_qp", QB, "the QP the engine serves")
	protErr := m.Wire("prot_err", 1, "an lkey check failed: the engine puts its QP in error")
	closedV := m.Input("s_closed_valid", 1, "pulse: card_stat found the QP CLOSED (m_done with m_done_closed): its Read Requests are no longer answered (dropped, IRD entry kept, as the card model's CLOSED QP sends nothing)")
	closedQPN := m.Input("s_closed_qpn", QB, "")
	// A refused transmit ring write (below) puts its QP in error when no
	// command or engine writes a state (rf_store).
	rfStore := m.Wire("rf_store", 1, "a refused ring write's QP goes to error now, with its silent Terminate record")
	rfQP := m.RegDecl("rf_qp", QB, "the QP of the refused ring write being stored")
	rfStAddr := m.Wire("rf_state_addr", QB, "the QP whose state the ring-fault path reads")
	dbRdAddr := m.Wire("dbs_rd_addr", QB, "")
	qpSt := qpStates(m, cmdGo, qpOp, qpNum, ctxRdAddr, protErr, cur, closedV, closedQPN, rfStore, rfQP, rfStAddr, dbRdAddr)
	// A Terminate record that finds its QP live: TERM_SENT now, the
	// Terminate at the QP's next turn (a record for a QP already in error
	// is dropped, as the model's terminate is). A Terminate received
	// raises TERM_RECV instead, and its turn sends nothing (a Terminate is
	// never answered with one): it only gives the record that closes the
	// transmit stream (the model's fail with no Terminate).
	// A WQE that fails its lkey check (the engine's protTerm, below) puts
	// its QP in error with a Local Catastrophic Terminate, no headers
	// (the model's localError): TERM_SENT then too, and the Terminate at
	// the QP's next turn. A WQE starts only while no TERM_SENT waits, and
	// no record is taken while the engine is busy, so the event slot is
	// free when it fails.
	termNew := m.WireOf("term_new", And(selT, cmdGo, qpSt.toErr), "a Terminate record puts its QP in error")
	// A Read Response whose source fails its remote-read check (revoked
	// since card_rx checked it) does the same with the model's
	// ReadSourceRevoked Terminate.
	protTerm := m.Wire("prot_term", 1, "the engine's WQE failed its lkey check or memory operation (a Local Catastrophic Terminate), or a Read Response its source check (the revoked source's Terminate)")
	const termRecW = 1 + 16 + 16 + 8*untaggedHdr + 8*cardTxReadReqBytes
	engCause := m.Wire("eng_term_cause", 16, "the engine's Terminate's cause")
	engRec := m.Wire("eng_term_rec", termRecW, "... and its record")
	evSet := m.WireOf("term_ev_set", Or(termNew, protTerm), "")
	// A faulted WQE read raises DMA_FAULT first (wfEv, the slot is free:
	// a WQE starts only while it is), and its QP_ERROR DMA once card_cq
	// has taken that (txFault waits), as the card model's dmaFailed.
	wfEv := m.Wire("wf_ev", 1, "a WQE read faulted: DMA_FAULT is raised")
	wfR := m.RegDecl("wqe_fault", 1, "a read of the WQE faulted: the QP fails with QP_ERROR DMA")
	wfAddr := m.RegDecl("wqe_fault_addr", 64, "the faulted block's address")
	wfAddrNow := m.Wire("wqe_fault_addr_now", 64, "... with a fault on the WQE's last beat, this cycle's")
	// A payload read fault (a gather's or a Read Response source's) raises
	// DMA_FAULT while the message is still fed (gfEv: nothing else loads
	// the slot while the engine is busy), and QP_ERROR DMA at the
	// write-back, which waits for it (txFault).
	gfR := m.Wire("gf_fault", 1, "a payload read of the message faulted: the QP fails with QP_ERROR DMA")
	gfPend := m.RegDecl("gf_ev_pend", 1, "the payload read fault's DMA_FAULT waits for the event slot")
	gfEv := m.WireOf("gf_ev", And(gfPend, Not(evV)), "the payload read fault's DMA_FAULT is raised")
	gfAddr := m.Wire("gf_addr", 64, "the faulted payload request's address")
	wfErr := m.WireOf("wf_qp_error", And(protTerm, Or(wfR, gfR)), "the faulted WQE's QP_ERROR DMA (not TERM_SENT)")
	// A silent record's turn raises DMA_FAULT (rfEv) and, at its
	// write-back, QP_ERROR DMA (rfErrEv).
	rfEv := m.Wire("rf_ev", 1, "a refused ring write's DMA_FAULT is raised (its QP's silent turn)")
	rfErrEv := m.Wire("rf_err_ev", 1, "... and its QP_ERROR DMA (the turn's write-back)")
	rfEvAddr := m.Wire("rf_ev_addr", 64, "the refused ring write's address")
	evLoad := m.WireOf("term_ev_load", Or(evSet, wfEv, fltGo, gfEv, rfEv, rfErrEv), "")
	m.Drive(evV, big.NewInt(0), Or(evLoad, And(evV, Not(evReady))), nil)
	m.Assign(evValid, evV)
	m.Assign(evQPN, m.Reg("term_ev_qpn", QB, big.NewInt(0), Sel(Or(protTerm, wfEv, gfEv, rfEv, rfErrEv), cur, tmQPN), evLoad, ""))
	local := m.WireOf("term_local", And(termNew, RedOr(tmReason)), "the record is a local failure's: QP_ERROR, not TERM_SENT")
	m.Assign(evCause, m.Reg("term_ev_cause", 16, big.NewInt(0), Sel(Or(wfEv, wfErr, fltGo, gfEv, rfEv, rfErrEv), C(16, 0), Sel(protTerm, engCause, Sel(local, C(16, 0), tmCause))), evLoad, ""))
	m.Assign(evInfo, m.Reg("term_ev_info", 32, big.NewInt(0), Sel(wfEv, Bits(wfAddrNow, 31, 0), Sel(gfEv, Bits(gfAddr, 31, 0), Sel(rfEv, Bits(rfEvAddr, 31, 0), Sel(fltGo, Bits(tmFaultAddr, 31, 0), Sel(Or(wfErr, rfErrEv), C(32, cardTxErrDMA), Sel(local, zext(tmReason, 32), C(32, 0))))))), evLoad, ""))
	m.Assign(evType, m.Reg("term_ev_type", 8, big.NewInt(cardTxEvTermSent), Sel(Or(wfEv, fltGo, gfEv, rfEv), C(8, cardStatEvDMAFault), Sel(And(termNew, tmRecv), C(8, cardTxEvTermRecv),
		Sel(Or(local, wfErr, rfErrEv), C(8, cardStatEvQPError), C(8, cardTxEvTermSent)))), evLoad, ""))
	m.Assign(faultV, Or(wfEv, fltGo, gfEv, rfEv))
	m.Assign(faultQPN, Sel(Or(wfEv, gfEv, rfEv), cur, gate(fltGo, tmQPN)))
	m.Assign(faultAddr, Sel(wfEv, wfAddrNow, Sel(gfEv, gfAddr, Sel(rfEv, rfEvAddr, gate(fltGo, tmFaultAddr)))))
	m.Assign(faultWr, Or(rfEv, And(fltGo, Not(wfEv), Not(gfEv), tmFaultWr)))
	// A refused ring write's record (rf_rec) is silent: it ends the QP's
	// stream with no Terminate (the ring cannot carry one), at the cut
	// (its RDMAP field holds {address, cut}).
	rfRec := m.Wire("rf_rec", termRecW+1, "a refused ring write's silent record")
	termRd := m.Mem("term", termRecW+1, CardTxQPs, Or(evSet, rfStore), Sel(evSet, Sel(protTerm, cur, qpNum), rfQP),
		Sel(evSet, Cat(C(1, 0), Sel(protTerm, engRec, Cat(tmRecv, tmRDMA, tmHdr, tmSegLen, tmCause))), rfRec), nil, ctxRdAddr,
		"the Terminate each QP has to send, or received: {silent (a refused ring write's: DMA_FAULT, QP_ERROR DMA unless quiet, nothing sent), received (nothing to send), RDMAP header (a silent record's: {quiet, address, cut}), DDP header, segment length, cause}")
	// A received Terminate's cause, for the WQE it blames, has its own
	// memory: a refused ring write's silent record may replace the
	// received record before the flush reaches that WQE.
	blameRd := m.Mem("term_blame_cause", 16, CardTxQPs, And(termNew, tmRecv), qpNum, tmCause, nil, ctxRdAddr,
		"the cause of the Terminate each QP received")

	// Static context, written by CREATE.
	const ctxW = 58 + 5 + 52 + 5 + 16 + 3 + QB + 5 + 32
	ctxRd := m.Mem("ctx", ctxW, CardTxQPs, create, qpNum,
		Cat(Bits(qpSQBase, 63, 6), qpSQLog, Bits(qpTXSBase, 63, 12), qpTXSLog, qpMULPDU, qpMarkers, qpCRC, qpRev0, qpSendCQ, qpORD, qpPD),
		nil, ctxRdAddr, "static TX context per QP: SQ base and log, TXS base and log, MULPDU, markers, CRC, rev0, send CQ, ORD, PD")
	unused = append(unused, Bits(qpSQBase, 5, 0), Bits(qpTXSBase, 11, 0))

	// Doorbell state {Read dones, TXS_CI, SQ_PI}: written by doorbells, Read
	// dones and CREATE; two copies so that the doorbell path and the engine
	// each have a read port.
	dbWrEn := m.Wire("dbs_wr_en", 1, "")
	dbWrAddr := m.Wire("dbs_wr_addr", QB, "")
	dbWrData := m.Wire("dbs_wr_data", 59, "{stream ended, Read Request records, rdone count, txs_ci, sq_pi}")
	dbsA := m.Mem("dbs_a", 59, CardTxQPs, dbWrEn, dbWrAddr, dbWrData, nil, dbRdAddr, "doorbell state, read by the doorbell path")
	dbsE := m.Mem("dbs_e", 59, CardTxQPs, dbWrEn, dbWrAddr, dbWrData, nil, ctxRdAddr, "doorbell state, read by the engine")
	// What the doorbell path checks an SQ_PI against (the card model's
	// ringMoved): SQ_CI and the next block to start, copied from the
	// engine's write-back, and the SQ's size, from CREATE.
	sqWB := m.Wire("sq_wb_data", 32, "{next block to start, SQ_CI} as the engine writes them back")
	sqDB := m.Mem("sq_db", 32, CardTxQPs, Or(create, sWB), Sel(create, qpNum, cur), Sel(create, C(32, 0), sqWB), nil, dbRdAddr,
		"{next block to start, SQ_CI}, read by the doorbell path")
	sqLogDB := m.Mem("sq_log_db", 5, CardTxQPs, create, qpNum, qpSQLog, nil, dbRdAddr, "the SQ's log2 size, read by the doorbell path")
	sqBaseDB := m.Mem("sq_base_db", 58, CardTxQPs, create, qpNum, Bits(qpSQBase, 63, 6), nil, dbRdAddr, "the SQ's base (bits 63:6), read by the doorbell path for its read ahead")

	// Engine state {Read dones used, Reads outstanding, next WQE, Read
	// Request MSN, Send MSN, TXS_PI, SQ_CI}: written by the engine and CREATE.
	const engW = 1 + 5 + 1 + 5 + 5 + 5 + 16 + 32 + 32 + 32 + 16
	engWBData := m.Wire("eng_wb_data", engW, "{end_seen, end_flush, walk, rreq_used, rdone_used, orq, sq_next, read msn, msn, txs_pi, sq_ci}")
	engMem := m.Mem("eng", engW, CardTxQPs, Or(create, sWB), Sel(create, qpNum, cur),
		Sel(create, Cat(C(38, 0), C(32, 1), C(32, 1), C(48, 0)), engWBData), nil, ctxRdAddr,
		"engine state per QP: the stream end taken and the Reads it flushes still to complete, walk (the WQE at SQ_CI may be done: sent behind a Read that has completed), Read Request records answered, Read dones taken, RDMA Reads outstanding (ORQ), next SQ block to start, next Read Request MSN, next Send MSN, TXS_PI (the stream offset), SQ_CI")

	// --- scheduler: a FIFO of QP numbers, one queued bit per QP ---
	const FB = QB + 1
	fHead := m.RegDecl("sched_head", FB, "")
	fTail := m.RegDecl("sched_tail", FB, "")
	fEmpty := m.WireOf("sched_empty", Eq(fHead, fTail), "")
	fPush := m.Wire("sched_push", 1, "")
	fPushQP := m.Wire("sched_push_qp", QB, "")
	popped := m.Mem("sched", QB, CardTxQPs, fPush, Bits(fTail, QB-1, 0), fPushQP, nil, Bits(fHead, QB-1, 0), "QPs with work, in turn")
	cplRoom := m.Wire("cpl_room", 1, "the completion queue can take a WQE")
	// The write-back pops the next QP itself (no idle cycle between two
	// turns) when no command or Terminate record waits for the engine to
	// be idle and the completion queue keeps a slot for the next WQE
	// beside the write-back's own record.
	pubSlot := m.Wire("pub_slot", 1, "the completion queue has two slots free")
	wbPop := m.WireOf("sched_pop_wb", And(sWB, Not(fEmpty), Not(qpValid), Not(tmValid), pubSlot), "the write-back takes the next QP")
	pop := m.WireOf("sched_pop", Or(And(sIdle, Not(fEmpty), Not(qpValid), cplRoom), wbPop), "the engine takes the next QP")
	// The quick turn: the FIFO's read data is its head's once the head
	// has stood a cycle, so the context memories (read at the head every
	// cycle) hold the next QP's context the cycle after txDrain's last
	// (drain_go). txWB then takes it as txCtx would and goes to txDecide:
	// no txPop, no txCtx. Not for the QP the engine holds (its context is
	// being written back).
	headOK := m.Reg("sched_head_ok", 1, big.NewInt(0), Not(fEmpty), nil, "the FIFO held an entry last cycle: its read data is the head's")
	aheadRd := m.Wire("ctx_ahead_rd", 1, "txDrain's last cycle: the head QP's context is read for txWB")
	ahead := m.Reg("ctx_ahead", 1, big.NewInt(0), aheadRd, nil, "the head QP's context was read last cycle")
	// The same QP again (the head is the engine's QP) takes its engine
	// state from the write-back rather than from eng, which is written in
	// this cycle; not after a WQE that puts it in error (its state, read
	// with the context, is written now too).
	same := m.WireOf("turn_same", And(sWB, Eq(popped, cur)), "txWB: the head QP is the engine's own")
	engRd := m.WireOf("eng_ld", Sel(same, engWBData, engMem), "the loading QP's engine state")
	quick := m.WireOf("turn_quick", And(wbPop, ahead, Or(Ne(popped, cur), Not(protErr))), "txWB takes the next QP's context (txCtx's loads; for its own QP, eng from the write-back) and goes to txDecide")
	ctxLoad := m.WireOf("ctx_load", Or(sCtx, quick), "the engine's context registers take the QP's context")
	takeQP := m.WireOf("sched_take", Or(sPop, quick), "the popped QP becomes the engine's")
	ldQP := m.WireOf("ctx_load_qp", Sel(sWB, popped, cur), "the QP whose context is loaded (txWB: the one it may take)")
	m.Drive(fHead, big.NewInt(0), incr(fHead), pop)
	m.Drive(fTail, big.NewInt(0), incr(fTail), fPush)
	queued := m.RegDecl("queued", CardTxQPs, "the QP is in the scheduler FIFO")
	dec := func(name string, q Expr) *Signal { return oneHot(m, name, q, CardTxQPs) }
	clr1h := dec("qclr", popped)
	set1h := dec("qset", fPushQP)
	m.Drive(queued, big.NewInt(0), Or(And(queued, Not(And(clr1h, Rep(takeQP, CardTxQPs)))), And(set1h, Rep(fPush, CardTxQPs))), nil)
	isQueued := func(name string, q Expr) Expr { return BitAt(queued, m.WireOf(name+"_qp", q, "")) }
	curHot := dec("qcur", cur)
	tset1h := dec("qterm", qpNum)
	// qpFlag is a bit per QP: set by sets (one-hot vectors), cleared when
	// the engine's QP uses it (used) and by CREATE.
	qpFlag := func(name, doc string, used Expr, sets ...Expr) *Signal {
		v := m.RegDecl(name, CardTxQPs, doc)
		keep := And(v, Not(And(curHot, Rep(used, CardTxQPs))), Not(And(tset1h, Rep(create, CardTxQPs))))
		m.Drive(v, big.NewInt(0), Or(keep, sets[0], sets[1:]...), nil)
		return v
	}
	termSent := m.Wire("term_sent", 1, "the engine wrote its QP's Terminate back")
	rfHot := dec("qrf", rfQP)
	termPend := qpFlag("term_pend", "the QP has a Terminate to send", termSent,
		And(tset1h, Rep(termNew, CardTxQPs)), And(curHot, Rep(protTerm, CardTxQPs)), And(rfHot, Rep(rfStore, CardTxQPs)))
	termPendCur := m.WireOf("term_pend_cur", BitAt(termPend, cur), "the engine's QP has a Terminate to send")
	// The peer's Terminate blames the oldest WQE the card started and did
	// not finish (the model's fail): the first flushed WQE that was
	// started completes with the cause's status instead of WR_FLUSH_ERR.
	blameUsed := m.Wire("term_blame_used", 1, "the engine's flushed WQE took its QP's blame")
	blame := qpFlag("term_blame", "a Terminate received blames the QP's oldest WQE started and not done", blameUsed,
		And(tset1h, Rep(And(termNew, tmRecv), CardTxQPs)))
	blameCur := m.WireOf("term_blame_cur", BitAt(blame, cur), "")
	// A WQE that fails its lkey check or memory operation, or is
	// malformed, behind an outstanding Read gives no record then (its
	// completion waits for the Read's) and stays the first WQE not
	// started; the flush that reaches it completes it with its own status
	// (late_mal: LOC_QP_OP_ERR), as the card model's localError does, not
	// WR_FLUSH_ERR.
	lateSet := m.Wire("late_prot_set", 1, "the engine's WQE failed behind an outstanding Read")
	lateMalSet := m.Wire("late_mal_set", 1, "... and is malformed")
	lateUsed := m.Wire("late_prot_used", 1, "the flush reached the failed WQE (or dropped it)")
	lateProt := qpFlag("late_prot", "the QP's first WQE not started failed behind a Read", lateUsed, And(curHot, Rep(lateSet, CardTxQPs)))
	lateMal := qpFlag("late_mal", "... because it is malformed", lateUsed, And(curHot, Rep(lateMalSet, CardTxQPs)))
	lateCur := m.WireOf("late_prot_cur", BitAt(lateProt, cur), "")
	lateMalCur := m.WireOf("late_mal_cur", BitAt(lateMal, cur), "")
	m.Assign(ctxRdAddr, popped)
	m.Drive(cur, nil, popped, takeQP)

	// --- push slots ---
	type slot struct{ v, qp, idx, data *Signal }
	slots := make([]slot, CardTxPushSlots)
	for i := range slots {
		slots[i] = slot{m.RegDecl(fmt.Sprintf("push%d_v", i), 1, ""), m.RegDecl(fmt.Sprintf("push%d_qp", i), QB, ""),
			m.RegDecl(fmt.Sprintf("push%d_idx", i), 16, "its SQ index"), m.RegDecl(fmt.Sprintf("push%d_data", i), 512, "")}
	}
	pushRR := m.RegDecl("push_rr", log2(CardTxPushSlots), "the slot the next push takes")

	// --- doorbells: take, read the QP's doorbell state, update ---
	rrFree := m.Wire("rrp_room", 1, "the Read Request pool has a free slot")
	rrCan := m.WireOf("rreq_can", And(rrValid, rrFree), "a Read Request record can be taken")
	endCan := m.WireOf("end_can", And(endValid, Not(endLost)), "a stream-end record (not lost) is offered")
	m.Assign(dbReady, And(Not(dbv), Not(qpValid), Not(rdnValid), Not(endCan), Not(rrCan), Not(bdbV)))
	m.Assign(rdnReady, And(Not(dbv), Not(qpValid)))
	m.Assign(rrReady, And(Not(dbv), Not(qpValid), Not(rdnValid), Not(endCan), rrFree))
	rdTake := m.WireOf("rdone_take", And(rdnValid, Not(dbv), Not(qpValid)), "a Read done is taken (before a doorbell)")
	endTake := m.WireOf("end_take", And(endCan, Not(dbv), Not(qpValid), Not(rdnValid)), "a stream-end record is taken (after a Read done)")
	m.Assign(endReady, Or(endTake, And(selL, cmdGo)))
	rrTake := m.WireOf("rreq_take", And(rrCan, Not(dbv), Not(qpValid), Not(rdnValid), Not(endCan)), "a Read Request record is taken (after a Read done, before a doorbell)")
	dbTake := m.WireOf("db_take", And(dbValid, Not(dbv), Not(qpValid), Not(rdnValid), Not(endCan), Not(rrCan), Not(bdbV)), "")
	pool := newRReqPool(m, rrTake, rrQPN, Cat(rrDDP, rrSrcTO, rrSrcSTag, rrSize, rrSinkTO, rrSinkSTag), sRsp, cur, sRspLd)
	m.Assign(rrFree, pool.canTake)
	pd := pool.data
	rsSinkSTag, rsSinkTO := Bits(pd, 31, 0), Bits(pd, 95, 32)
	rsSize, rsSrcSTag, rsSrcTO := Bits(pd, 127, 96), Bits(pd, 159, 128), Bits(pd, 223, 160)
	unused = append(unused, pool.have)
	// A Read Response goes through the engine as a one-SGE RDMA Write WQE
	// (BBS 0, unsignaled): STag and TO the sink's, the SGE the source.
	rspHdr := m.WireOf("rsp_hdr", Cat(C(32, 0), rsSinkSTag, rsSinkTO, C(64, 0), C(32, 0), C(3, 0), C(5, 1), C(16, 0), C(8, 2)),
		"the Read Response's stand-in WQE header")
	anyTake := Or(dbTake, rdTake, rrTake, endTake)
	unused = append(unused, rdnSTag, rdnTO, rdnLen)
	dKind := m.Reg("db_kind_q", 3, nil, Sel(rdTake, C(3, 7), Sel(Or(rrTake, endTake), C(3, 0), dbKind)), anyTake, "DB_KIND, 7 for a Read done")
	dRR := m.Reg("db_rreq_q", 1, nil, rrTake, anyTake, "the record is a Read Request's (kind 0 then)")
	dEnd := m.Reg("db_end_q", 1, nil, endTake, anyTake, "the record is a stream end (kind 0 then)")
	dQP := m.Reg("db_qp", QB, nil, Sel(rdTake, rdnQP, Sel(endTake, endQPN, Sel(rrTake, rrQPN, dbIndex))), anyTake, "")
	m.Assign(dbRdAddr, Sel(dbv, dQP, Sel(rdnValid, rdnQP, Sel(endCan, endQPN, Sel(rrCan, rrQPN, dbIndex)))))
	dVal := m.Reg("db_value_q", 32, nil, dbValue, dbTake, "")
	dPushOK := m.Reg("db_push_ok_q", 1, nil, dbPushOK, dbTake, "")
	dPushData := m.Reg("db_push_data_q", 512, nil, dbPushData, dbTake, "")
	isSQ := m.WireOf("db_is_sq", Eq(dKind, C(3, 1)), "")
	isTXS := m.WireOf("db_is_txs", Eq(dKind, C(3, 3)), "")
	isPush := m.WireOf("db_is_push", Eq(dKind, C(3, 6)), "")
	oldPI := m.WireOf("db_old_pi", Bits(dbsA, 15, 0), "")
	oldCI := m.WireOf("db_old_ci", Bits(dbsA, 47, 16), "")
	isRD := m.WireOf("db_is_rdone", Eq(dKind, C(3, 7)), "")
	isStream := m.WireOf("db_is_stream", Eq(dKind, C(3, 5)), "")
	oldRC := m.WireOf("db_old_rc", Bits(dbsA, 52, 48), "")
	newRC := m.WireOf("db_new_rc", Sel(isRD, incr(oldRC), oldRC), "Read dones received (modulo 32)")
	oldRR := m.WireOf("db_old_rr", Bits(dbsA, 57, 53), "")
	newRR := m.WireOf("db_new_rr", Sel(dRR, incr(oldRR), oldRR), "Read Request records received (modulo 32)")
	newEnd := m.WireOf("db_new_end", Or(Bit(dbsA, 58), dEnd), "the peer's stream ended (sticky until CREATE)")
	askPI := m.WireOf("db_ask_pi", Sel(isPush, incr(oldPI), Sel(isSQ, Bits(dVal, 15, 0), oldPI)), "the SQ_PI the doorbell asks for")
	dbCI := m.WireOf("db_sq_ci", Bits(sqDB, 15, 0), "")
	dbSQMask := m.WireOf("db_sq_mask", thermo(sqLogDB, 16), "the doorbell's SQ's size - 1, in blocks (its bad-doorbell check and read ahead)")
	badDB := m.WireOf("db_bad", And(Or(isSQ, isPush), producerMoveBad(m, "db", "SQ", askPI, dbCI, Bits(sqDB, 31, 16), dbSQMask)), "a bad SQ_PI: the QP goes to error, SQ_PI stays")
	newPI := m.WireOf("db_new_pi", Sel(badDB, oldPI, askPI), "")
	newCI := m.WireOf("db_new_ci", Sel(isTXS, dVal, oldCI), "")
	requeue := m.Wire("eng_requeue", 1, "the engine puts its QP back in the FIFO")
	dbFire := m.WireOf("db_fire", And(dbv, Not(requeue)), "the doorbell takes effect")
	acts := m.WireOf("db_acts", Or(isSQ, isTXS, isPush, isRD, dRR, dEnd), "")
	dbEnq := m.WireOf("db_enqueue", And(dbFire, acts, Not(isQueued("qdb", dQP))), "")
	// STREAM with RX_LOST comes here in BAR0 order, before any SQ_PI
	// written after it; the ERROR it becomes comes later, through
	// card_stat (s_end, after a status write's response). Until then no
	// WQE and no Read Response of the QP starts: the card model puts the
	// QP in error at the STREAM write and flushes what is posted after.
	lostDB := m.WireOf("db_rx_lost", And(dbFire, isStream, Bit(dVal, 1)), "a STREAM doorbell with RX_LOST takes effect")
	lostFlag := qpFlag("rx_lost", "the QP's stream was lost (STREAM.RX_LOST): nothing starts until its ERROR", C(1, 0), And(dec("qlost", dQP), Rep(lostDB, CardTxQPs)))
	lostCur := m.WireOf("rx_lost_cur", BitAt(lostFlag, cur), "the engine's QP's stream was lost")
	m.Drive(dbv, big.NewInt(0), Or(anyTake, And(dbv, Not(dbFire))), nil)
	m.Assign(dbWrEn, Or(create, And(dbFire, acts)))
	m.Assign(dbWrAddr, Sel(create, qpNum, dQP))
	m.Assign(dbWrData, Sel(create, C(59, 0), Cat(newEnd, newRR, newRC, newCI, newPI)))
	errEnq := m.WireOf("err_enqueue", And(qpSt.toErr, Not(isQueued("qerr", qpNum))), "a QP put in error flushes its posted work")
	rfEnq := m.Wire("rf_enqueue", 1, "a refused ring write's QP gets a turn for its silent record")
	m.Assign(fPush, Or(requeue, dbEnq, errEnq, rfEnq))
	m.Assign(fPushQP, Sel(requeue, cur, Sel(dbEnq, dQP, Sel(errEnq, qpNum, rfQP))))
	pushNew := m.WireOf("push_new", And(dbFire, isPush, dPushOK, Not(badDB)), "a pushed block is kept")
	bdbSet := m.Wire("baddb_set", 1, "a bad doorbell is found: the doorbell path's SQ_PI or the engine's TXS_CI")
	m.Drive(bdbV, big.NewInt(0), Or(bdbSet, And(bdbV, Not(bdbReady))), nil)
	m.Assign(bdbValid, bdbV)
	bdbEng := m.Wire("baddb_eng", 1, "the engine found its QP's TXS_CI bad")
	m.Assign(bdbSet, Or(And(dbFire, badDB), bdbEng))
	m.Assign(bdbQPN, m.Reg("baddb_qpn", QB, big.NewInt(0), Sel(bdbEng, cur, dQP), bdbSet, ""))

	// --- the engine's copy of its QP's context ---
	cSQBase := m.RegDecl("cur_sq_base", 58, "")
	cSQLog := m.RegDecl("cur_sq_log", 5, "")
	cTXBase := m.RegDecl("cur_txs_base", 52, "")
	cTXMask := m.RegDecl("cur_txs_mask", 24, "TX ring size - 1")
	cMULPDU := m.RegDecl("cur_mulpdu", 16, "")
	cMk := m.RegDecl("cur_markers", 1, "")
	cCRC := m.RegDecl("cur_crc", 1, "")
	cRev0 := m.RegDecl("cur_rev0", 1, "")
	cCQ := m.RegDecl("cur_cq", QB, "")
	cOrd := m.RegDecl("cur_ord", 5, "")
	cPD := m.RegDecl("cur_pd", 32, "")
	cSQCI := m.RegDecl("cur_sq_ci", 16, "")
	cMSN := m.RegDecl("cur_msn", 32, "")
	cPI := m.RegDecl("cur_sq_pi", 16, "live: doorbells to cur_qp update it")
	cCI := m.RegDecl("cur_txs_ci", 32, "live")
	fOff := m.RegDecl("f_off", 32, "stream offset (TXS_PI) of cur_qp's next FPDU")
	o := ctxW
	field := func(w int) Expr { o -= w; return Bits(ctxRd, o+w-1, o) }
	ldSQBase, ldSQLog, ldTXBase := field(58), field(5), field(52)
	ldTXLog := m.WireOf("ld_txs_log", field(5), "")
	ldMULPDU, ldMk, ldCRC, ldRev0, ldCQ, ldOrd, ldPD := field(16), field(1), field(1), field(1), field(QB), field(5), field(32)
	m.Drive(cPD, nil, ldPD, ctxLoad)
	m.Drive(cSQBase, nil, ldSQBase, ctxLoad)
	m.Drive(cSQLog, nil, ldSQLog, ctxLoad)
	m.Drive(cTXBase, nil, ldTXBase, ctxLoad)
	m.Drive(cTXMask, nil, thermo(ldTXLog, 24), ctxLoad)
	m.Drive(cMULPDU, nil, ldMULPDU, ctxLoad)
	m.Drive(cMk, nil, ldMk, ctxLoad)
	m.Drive(cCRC, nil, ldCRC, ctxLoad)
	m.Drive(cRev0, nil, ldRev0, ctxLoad)
	m.Drive(cCQ, nil, ldCQ, ctxLoad)
	m.Drive(cOrd, nil, ldOrd, ctxLoad)
	m.Drive(cSQCI, nil, Bits(engRd, 15, 0), ctxLoad)
	// Doorbells to cur_qp while the engine holds it; the one in the read
	// cycle (txPop, or txDrain's last before a quick txWB) is remembered
	// for the load (txCtx, or that txWB, which compares the QP it takes).
	dbHit := m.WireOf("db_hit_cur", And(dbFire, acts, Eq(dQP, ldQP), Not(sIdle), Not(sPop)), "")
	lastW := m.Reg("dbw_last_v", 1, big.NewInt(0), And(dbFire, acts), nil, "")
	lastQP := m.Reg("dbw_last_qp", QB, nil, dQP, nil, "")
	lastPI := m.Reg("dbw_last_pi", 16, nil, newPI, nil, "")
	lastCI := m.Reg("dbw_last_ci", 32, nil, newCI, nil, "")
	lastRC := m.Reg("dbw_last_rc", 5, nil, newRC, nil, "")
	lastRR := m.Reg("dbw_last_rr", 5, nil, newRR, nil, "")
	lastEnd := m.Reg("dbw_last_end", 1, nil, newEnd, nil, "")
	lastHit := m.WireOf("dbw_last_hit", And(lastW, Eq(lastQP, ldQP)), "")
	ramPI := Sel(lastHit, lastPI, Bits(dbsE, 15, 0))
	ramCI := Sel(lastHit, lastCI, Bits(dbsE, 47, 16))
	m.Drive(cPI, nil, Sel(dbHit, newPI, ramPI), Or(ctxLoad, dbHit))
	m.Drive(cCI, nil, Sel(dbHit, newCI, ramCI), Or(ctxLoad, dbHit))
	cRC := m.RegDecl("cur_rdone", 5, "live: Read dones received")
	rcNow := m.WireOf("rdone_now", Sel(dbHit, newRC, Sel(lastHit, lastRC, Bits(dbsE, 52, 48))), "")
	m.Drive(cRC, nil, rcNow, Or(ctxLoad, dbHit))
	cRR := m.RegDecl("cur_rreq", 5, "live: Read Request records received")
	m.Drive(cRR, nil, Sel(dbHit, newRR, Sel(lastHit, lastRR, Bits(dbsE, 57, 53))), Or(ctxLoad, dbHit))
	cEnd := m.RegDecl("cur_end", 1, "live: the peer's stream ended")
	m.Drive(cEnd, nil, Sel(dbHit, newEnd, Sel(lastHit, lastEnd, Bit(dbsE, 58))), Or(ctxLoad, dbHit))
	cRRUsed := m.Reg("cur_rreq_used", 5, nil, Bits(engRd, 142, 138), ctxLoad, "Read Request records answered")
	// The Read state of the engine's QP.
	cRMSN := m.RegDecl("cur_rmsn", 32, "next Read Request MSN")
	cNext := m.RegDecl("cur_sq_next", 16, "first SQ block not started (SQ_CI while no Read is outstanding)")
	cOrq := m.RegDecl("cur_orq", 5, "RDMA Reads outstanding")
	cWk := m.Reg("cur_walk", 1, nil, Bit(engRd, 143), ctxLoad, "the WQE at SQ_CI may be done (a Read before it completed): walk the SQ from there")
	cRUsed := m.RegDecl("cur_rdone_used", 5, "Read dones taken")
	m.Drive(cRMSN, nil, Bits(engRd, 111, 80), ctxLoad)
	ctxNextLd := m.WireOf("ctx_next_ld", Bits(engRd, 127, 112), "the loading QP's next block to start")
	m.Drive(cNext, nil, ctxNextLd, ctxLoad)
	ldOrq := Bits(engRd, 132, 128)
	m.Drive(cOrq, nil, ldOrq, ctxLoad)
	cSt := m.Reg("cur_state", 2, nil, qpSt.eng, ctxLoad, "the QP's state (0 none, 1 live, 2 error)")
	live := m.WireOf("cur_live", Eq(cSt, C(2, txQPLive)), "")
	inErr := m.WireOf("cur_error", Eq(cSt, C(2, txQPError)), "")
	cClosed := m.Reg("cur_closed", 1, nil, Bit(qpSt.closed, 0), ctxLoad, "the QP is CLOSED: its Read Requests are dropped")
	unused = append(unused, Bit(qpSt.closed, 1))
	// A Read done with no Read outstanding (the receive side lets none
	// through) is dropped: with none outstanding the count is caught up.
	m.Drive(cRUsed, nil, Sel(Eq(ldOrq, C(5, 0)), rcNow, Bits(engRd, 137, 133)), ctxLoad)

	// --- WQE header ---
	hdr := m.RegDecl("wqe_hdr", 256, "the WQE's header")
	hOpcode := m.WireOf("h_opcode", Bits(hdr, 7, 0), "")
	hSignaled := m.WireOf("h_signaled", Bit(hdr, 8), "")
	hSolicited := m.WireOf("h_solicited", Bit(hdr, 9), "")
	hFence := m.WireOf("h_fence", Bit(hdr, 10), "")
	hInline := m.WireOf("h_inline", Bit(hdr, 11), "")
	hNSGE := m.WireOf("h_nsge", Bits(hdr, 28, 24), "")
	bbs := m.WireOf("h_bbs", Bits(hdr, 19, 16), "")
	hLen := m.WireOf("h_inline_len", Bits(hdr, 47, 32), "")
	hWRID := m.WireOf("h_wr_id", Bits(hdr, 127, 64), "")
	hRAddr := m.WireOf("h_remote_addr", Bits(hdr, 191, 128), "")
	hRKey := m.WireOf("h_rkey", Bits(hdr, 223, 192), "")
	hInv := m.WireOf("h_inv_stag", Bits(hdr, 255, 224), "")
	unused = append(unused, Bits(hdr, 15, 12), Bits(hdr, 23, 20), Bits(hdr, 31, 29), Bits(hdr, 63, 48))

	// --- decide: work, ring room, a pushed first block ---
	hasWork := m.WireOf("has_work", Ne(cNext, cPI), "a posted WQE is not started")
	pend := m.WireOf("rdone_pending", Sub(cRC, cRUsed), "Read dones not yet taken")
	// WQEs sent behind an outstanding Read complete after it: a Read done
	// completes the Read at SQ_CI (ret), then the walk (wk) completes every
	// WQE at SQ_CI that was sent, up to the next outstanding Read or the
	// first WQE not started (the card model's retire).
	// A QP in error completes so too what was done before the error (its
	// Terminate sent and the Read Requests dropped first): a Read whose
	// Read done came has all its data, and completes as in the card
	// model, which completes it as the response's last segment is placed;
	// the flush takes what is left.
	rrPend := m.WireOf("rreq_pending", Ne(cRR, cRRUsed), "Read Request records of the QP to answer (or, in error, to drop)")
	errCpl := m.WireOf("err_complete", And(inErr, Not(termPendCur), Not(rrPend)), "in error, the completions of work done before it")
	doWalk := m.WireOf("walk_go", And(sDecide, Or(live, errCpl), cWk, Ne(cSQCI, cNext), Not(evV)), "complete the WQE at SQ_CI if it was sent (stop at a Read)")
	// The peer's stream ended: no Read Response can come any more, so the
	// Reads outstanding then (less those whose Read done came before the
	// end) complete with WR_FLUSH_ERR, oldest first, after the Read dones
	// (the card model's rxStep). The count is taken once per end, at the
	// first turn after it; Reads started later stay outstanding, as in
	// the model.
	cEndSeen := m.RegDecl("cur_end_seen", 1, "the stream end was taken")
	cEndFl := m.RegDecl("cur_end_flush", 5, "Reads the stream end flushes, not yet completed")
	endNew := m.WireOf("end_new", And(cEnd, Not(cEndSeen)), "the stream end is taken at this turn")
	flNow := m.WireOf("end_flush_now", Sel(endNew, Sel(Lt(cOrq, pend), C(5, 0), Sub(cOrq, pend)), cEndFl), "")
	m.Drive(cEndSeen, nil, Sel(ctxLoad, Bit(engRd, 149), Or(cEndSeen, cEnd)), Or(ctxLoad, sDecide))
	m.Drive(cEndFl, nil, Sel(ctxLoad, Bits(engRd, 148, 144), flNow), Or(ctxLoad, sDecide))
	// Every fetch of a WQE at SQ_CI waits for the event slot: its read
	// may fault, whose DMA_FAULT takes the slot at once.
	doRetOK := m.WireOf("ret_done_go", And(sDecide, Or(live, errCpl), Not(doWalk), Ne(cOrq, C(5, 0)), Ne(pend, C(5, 0)), Not(evV)), "complete the oldest outstanding Read (its Read done came)")
	doRfl := m.WireOf("ret_flush_go", And(sDecide, live, Not(doWalk), Ne(cOrq, C(5, 0)), Eq(pend, C(5, 0)), Ne(flNow, C(5, 0)), Not(evV)), "flush the oldest outstanding Read (the stream ended)")
	doRet := m.WireOf("ret_go", Or(doRetOK, doRfl), "complete the oldest outstanding Read")
	// A flush waits for the event slot: the WQE's read may fault, whose
	// DMA_FAULT takes the slot at once.
	doFlush := m.WireOf("flush_go", And(sDecide, errCpl, Not(doRet), Not(doWalk), Ne(cSQCI, cPI), Not(evV)), "flush the WQE at SQ_CI (the QP is in error)")
	canStart := m.WireOf("ord_room", Lt(cOrq, cOrd), "a Read can start within ORD")
	used := m.WireOf("ring_used", Sub(fOff, cCI), "")
	size32 := m.WireOf("ring_size", Add(Cat(C(8, 0), cTXMask), C(32, 1)), "")
	room := m.WireOf("ring_room_ok", And(Not(Lt(size32, used)), Not(Lt(Sub(size32, used), C(32, CardTxRingGuard)))), "the ring has the guard's bytes free")
	var hits []Expr
	for i, s := range slots {
		hits = append(hits, m.WireOf(fmt.Sprintf("push%d_hit", i), And(s.v, Eq(s.qp, cur), Eq(s.idx, cNext)), ""))
	}
	hitAny := m.WireOf("push_hit", RedOr(Cat(hits...)), "the WQE's first block was pushed")
	pfHit := m.Wire("pf_use_hit", 1, "the WQE's first block was read ahead (card_tx_prefetch.go)")
	pfTwo := m.Wire("pf_use_two", 1, "... and the block after it")
	pfData := m.Wire("pf_use_data", 1024, "in txCtx: the popped QP's read-ahead entry's blocks")
	var hitData Expr = slots[0].data
	for i := 1; i < len(slots); i++ {
		hitData = Sel(hits[i], slots[i].data, hitData)
	}
	// A block pushed before the QP's context is loaded goes into push_blk
	// with it, as a read-ahead block does, so that txDecide can take its
	// first beat (push_ld; it is used only if its slot still holds it
	// then). push_blk then does not hold the read-ahead blocks: a WQE whose
	// push went meanwhile is read by DMA.
	var ldHits []Expr
	for i, s := range slots {
		ldHits = append(ldHits, m.WireOf(fmt.Sprintf("push%d_ld_hit", i), And(s.v, Eq(s.qp, ldQP), Eq(s.idx, ctxNextLd)), ""))
	}
	ldHitAny := m.WireOf("push_ld_hit", RedOr(Cat(ldHits...)), "")
	var ldHitData, ldSlot Expr = slots[0].data, C(pushRR.W, 0)
	for i := 1; i < len(slots); i++ {
		ldHitData = Sel(ldHits[i], slots[i].data, ldHitData)
		ldSlot = Sel(ldHits[i], C(pushRR.W, uint64(i)), ldSlot)
	}
	pushLd := m.Reg("push_ld", 1, big.NewInt(0), ldHitAny, ctxLoad, "push_blk holds the QP's pushed next block, loaded with its context")
	pushLdSlot := m.Reg("push_ld_slot", pushRR.W, nil, ldSlot, ctxLoad, "... from this slot")
	hitsLSB := make([]Expr, len(hits)) // slot i in bit i
	for i, h := range hits {
		hitsLSB[len(hits)-1-i] = h
	}
	pushEarly := m.WireOf("push_early", And(pushLd, BitAt(m.WireOf("push_hits", Cat(hitsLSB...), ""), pushLdSlot)), "that slot still holds the WQE's first block")
	pfHitB := m.WireOf("pf_use_hit_blk", And(pfHit, Not(pushLd)), "the read-ahead first block is in push_blk")
	pfTwoB := m.WireOf("pf_use_two_blk", And(pfTwo, Not(pushLd)), "... and the block after it")
	// Read Requests are answered ahead of the QP's next WQE (the card
	// model's txStep); a QP in error drops them, giving IRD back.
	// A QP put in error by a Terminate record sends its Terminate first
	// (the model's errorStep), then drops and flushes.
	silentWait := m.Wire("term_silent_wait", 1, "the QP's record is silent and the event slot is taken: its DMA_FAULT waits")
	doTerm := m.WireOf("term_go", And(sDecide, inErr, termPendCur, Not(silentWait)), "send the QP's Terminate (a silent record: raise DMA_FAULT)")
	rspReady := m.WireOf("rsp_ready", And(sDecide, rrPend, Not(doTerm), Or(inErr, cClosed, And(live, Not(lostCur), Not(doRet), Not(doWalk), room))), "the QP's oldest Read Request can be answered (dropped)")
	// A live QP's Read Response waits for the event slot as a WQE does:
	// its source check may fail (TERM_SENT).
	doRsp := m.WireOf("rsp_go", And(rspReady, Or(inErr, cClosed, Not(evV))), "answer (drop) the QP's oldest Read Request")
	wqeReady := m.WireOf("wqe_ready", And(sDecide, live, Not(lostCur), Not(doRet), Not(doWalk), Not(rrPend), hasWork, room), "a WQE can start")
	// A WQE on a tight CQ (card_cq's cq_tight) starts only once every
	// completion before it has its verdict (written, or lost to an
	// overrun whose QPs are then in error), as in the card model, which
	// completes a WQE before it starts the next: the WQE behind one whose
	// completion overran is flushed, never sent. Until then the QP goes
	// back to the scheduler.
	tightCur := m.WireOf("cq_tight_cur", BitAt(cqTight, cCQ), "the QP's send CQ is tight")
	cplOut := m.Wire("cpl_unresolved", 1, "a completion has no verdict yet")
	gateHold := m.WireOf("wqe_cq_hold", And(wqeReady, Not(evV), tightCur, cplOut), "the WQE waits for the completions before it: its QP is put back")
	// A WQE whose first block is being read ahead (its QP came round
	// again before the read landed) waits for it: its QP goes back to
	// the scheduler, as on a tight CQ, and the engine serves the others.
	pfPend := m.Wire("pf_use_pend", 1, "the WQE's first block is being read ahead (card_tx_prefetch.go)")
	pfWait := m.WireOf("wqe_pf_wait", And(wqeReady, Not(evV), Not(gateHold), pfPend, Not(hitAny), Not(pfHit)), "the WQE waits for its read ahead: its QP is put back")
	goWQE := m.WireOf("wqe_go", And(wqeReady, Not(evV), Not(gateHold), Not(pfWait)), "a WQE starts (no TERM_SENT waits: its lkey check may fail)")
	// TXS_CI past TXS_PI (the ring would hold more than its size): the
	// card model's drain refuses it when the QP next has bytes to write,
	// BAD_DOORBELL, as a bad SQ_PI (m_baddb); the QP goes back to the
	// scheduler while one is offered.
	txsBad := m.WireOf("txs_ci_bad", And(sDecide, live, Not(doRet), Not(doWalk), Or(hasWork, rrPend), Lt(size32, used)), "TXS_CI ran past TXS_PI and the QP has bytes to send")
	txsBadGo := m.WireOf("txs_ci_bad_go", And(txsBad, Not(bdbV), Not(And(dbv, badDB))), "... reported now (the doorbell path has none)")
	evWait := m.WireOf("wqe_ev_wait", Or(And(Or(wqeReady, And(rspReady, live)), evV), And(sDecide, inErr, termPendCur, silentWait)),
		"the WQE, Read Response or silent record waits in decide for the event slot (card_cq takes it)")
	goAny := m.WireOf("fetch_go", Or(goWQE, doRet, doWalk, doFlush, doRsp, doTerm), "a WQE's first block is fetched, or a Read Response or Terminate starts")
	goMsg := m.WireOf("msg_go", Or(goWQE, doRsp, doTerm), "a message starts")
	tm := m.Reg("term_mode", 1, big.NewInt(0), doTerm, goAny, "the engine sends its QP's Terminate (a stand-in header: no WQE)")
	m.Assign(termSent, And(sWB, tm))
	// The record read with the context (txCtx), kept for the turn.
	cTerm := m.Reg("cur_term", termRd.W, nil, termRd, ctxLoad, "the QP's Terminate record")
	tCause := m.WireOf("cur_term_cause", Bits(cTerm, 15, 0), "")
	tSegLen := m.WireOf("cur_term_seglen", Bits(cTerm, 31, 16), "")
	tHdr := m.WireOf("cur_term_hdr", Bits(cTerm, 32+8*untaggedHdr-1, 32), "")
	tRDMA := m.WireOf("cur_term_rdma", Bits(cTerm, termRd.W-3, 32+8*untaggedHdr), "")
	tRecv := m.WireOf("cur_term_recv", Bit(cTerm, termRd.W-2), "the QP's Terminate was received (or the record is silent): nothing to send")
	tSilent := m.WireOf("cur_term_silent", Bit(cTerm, termRd.W-1), "the record is a refused ring write's: DMA_FAULT, then QP_ERROR DMA, the stream ends at the cut")
	tCut := m.WireOf("cur_term_cut", Bits(tRDMA, 31, 0), "a silent record's cut: TXS_PI goes back to it")
	tAddr := m.WireOf("cur_term_addr", Bits(tRDMA, 95, 32), "a silent record's refused address")
	tQuiet := m.WireOf("cur_term_quiet", Bit(tRDMA, 96), "a silent record of a QP that was in error already: no QP_ERROR")
	cBlame := m.Reg("cur_blame_cause", 16, nil, blameRd, ctxLoad, "the cause of the Terminate the QP received")
	m.Assign(silentWait, And(tSilent, evV))
	m.Assign(rfEv, And(doTerm, tSilent))
	m.Assign(rfErrEv, And(sWB, tm, tSilent, Not(tQuiet)))
	m.Assign(rfEvAddr, tAddr)
	tPayE, tLenE := terminatePayload(m, tCause, tHdr, tSegLen, tRDMA)
	tPay := m.WireOf("term_payload", tPayE, "the Terminate's DDP payload, byte 0 in bits 7:0")
	tLen := m.WireOf("term_len", tLenE, "its length")
	// The stand-in WQE header: opcode 0xFF (none of the served ones), not
	// inline, unsignaled, BBS 0: the Terminate moves neither SQ_CI nor an MSN.
	termHdr := C(256, 0xFF)
	rsp := m.Reg("rsp_mode", 1, big.NewInt(0), doRsp, goAny, "the engine answers a Read Request")
	rspDrop := m.Reg("rsp_drop", 1, big.NewInt(0), And(doRsp, Or(inErr, cClosed)), goAny, "... of a QP in error or CLOSED: it is dropped")
	rspKeep := m.Reg("rsp_keep_ird", 1, big.NewInt(0), And(doRsp, cClosed, Not(inErr)), goAny, "... of a CLOSED QP: its IRD entry stays taken (the model's CLOSED QP keeps the request)")
	ret := m.Reg("ret_mode", 1, big.NewInt(0), doRet, goAny, "the block fetched is an outstanding Read's, to complete it")
	rfl := m.Reg("ret_flush_mode", 1, big.NewInt(0), doRfl, goAny, "... with WR_FLUSH_ERR: the stream ended")
	fl := m.Reg("flush_mode", 1, big.NewInt(0), doFlush, goAny, "the block fetched is a WQE to flush")
	wk := m.Reg("walk_mode", 1, big.NewInt(0), doWalk, goAny, "the block fetched is a WQE at SQ_CI that may be done")
	retFl := m.WireOf("ret_or_flush", Or(ret, fl, wk), "the WQE at SQ_CI is fetched to complete it: a completion record follows")
	usePush := m.WireOf("use_push", And(goWQE, Or(hitAny, pfHitB)), "the first block is a pushed or read-ahead one")
	// A read-ahead entry's blocks (or a block pushed already) are taken
	// with the context (txCtx or a quick txWB; the verdicts, pfHit and
	// push_ld, hold from then on); a block pushed later replaces them
	// when the WQE starts.
	pblk := m.Reg("push_blk", 1024, nil, Sel(ctxLoad, Sel(ldHitAny, zext(ldHitData, 1024), pfData), zext(hitData, 1024)), Or(ctxLoad, And(goWQE, hitAny)), "the pushed block, or the read-ahead ones, being taken")
	src := m.Reg("src_push", 1, big.NewInt(0), usePush, goAny, "the first block comes from a push or a read ahead")
	src2 := m.Reg("src_push_two", 1, big.NewInt(0), And(usePush, Not(hitAny), pfTwoB), goAny, "... and the second one was read ahead too")
	for i, s := range slots {
		w := m.WireOf(fmt.Sprintf("push%d_w", i), And(pushNew, Eq(pushRR, C(pushRR.W, uint64(i)))), "")
		clr := Or(And(usePush, hits[i]), And(create, Eq(s.qp, qpNum)))
		m.Drive(s.v, big.NewInt(0), w, Or(w, clr))
		m.Drive(s.qp, nil, dQP, w)
		m.Drive(s.idx, nil, oldPI, w)
		m.Drive(s.data, nil, dPushData, w)
	}
	m.Drive(pushRR, big.NewInt(0), incr(pushRR), pushNew)

	// --- WQE fetch: read requests ---
	sqMask := m.WireOf("sq_mask", thermo(cSQLog, 16), "SQ size - 1, in blocks")
	fIdx := m.RegDecl("fetch_idx", 16, "next SQ block to request")
	fLeft := m.RegDecl("fetch_left", 4, "blocks left to request")
	fPos := m.WireOf("fetch_pos", And(fIdx, sqMask), "")
	toEnd := m.WireOf("fetch_to_end", Sub(Add(Cat(C(1, 0), sqMask), C(17, 1)), Cat(C(1, 0), fPos)), "blocks to the ring's end")
	fN := m.WireOf("fetch_n", Sel(Lt(toEnd, zext(fLeft, 17)), Bits(toEnd, 3, 0), fLeft), "blocks of this request")
	unused = append(unused, Bits(toEnd, 16, 4))
	wqeRdValid := m.WireOf("rd_wqe_valid", And(Or(And(sFirst, Not(src)), sFetch), RedOr(fLeft)), "a WQE read")
	rdReqValid := m.Wire("rd_req_valid", 1, "")
	rdReqReady := m.Wire("rd_req_ready", 1, "")
	rdGo := m.WireOf("rd_go", And(wqeRdValid, rdReqReady), "a WQE read is taken")
	rdAddr := m.Wire("rd_req_addr", 64, "")
	rdLen := m.Wire("rd_req_len", 16, "")
	wqeAddr := m.WireOf("rd_wqe_addr", Add(Cat(cSQBase, C(6, 0)), Cat(C(42, 0), fPos, C(6, 0))), "")
	wqeLen := m.WireOf("rd_wqe_len", Sub(Cat(C(6, 0), fN, C(6, 0)), C(16, 1)), "")
	rdReqTag := m.Wire("rd_req_tag", rdCfg.TagBits, "0: WQE blocks, 1: payload")

	// --- WQE beats into the header and the buffer ---
	beatsPerBB := 64 / L
	const NBW = 7
	wj := m.RegDecl("wb_beat", NBW, "beats of the WQE taken")
	rdData := m.Wire("rd_tdata", W, "")
	rdValidAll := m.Wire("rd_tvalid_all", 1, "dma_rd's output beat, any tag")
	rdValid := m.Wire("rd_tvalid", 1, "dma_rd's output beat, not a read ahead's")
	rdErr := m.Wire("rd_terr", 1, "")
	rdKeep := m.Wire("rd_tkeep", L, "")
	rdLast := m.Wire("rd_tlast", 1, "")
	rdTag := m.Wire("rd_ttag", rdCfg.TagBits, "")
	rdBErr := m.Wire("rd_berr", 1, "a response beat of the request up to this one had an error (a payload read's fault)")
	var cands []Expr
	for k := 0; k < 2*beatsPerBB; k++ {
		cands = append(cands, Bits(pblk, W*k+W-1, W*k))
	}
	pbeat := muxTree(selBits(wj, 0, log2(2*beatsPerBB)), cands)
	// A two-block WQE whose second block was read ahead too takes it from
	// there (txHdr goes straight to txRest; at 512 bits txHdr writes it
	// into the buffer itself, below).
	rest2 := m.Wire("wb_rest_ahead", 1, "the WQE's second and last block was read ahead")
	// A WQE whose first block was read ahead or pushed (held in push_blk
	// since its context was loaded) takes its first beat in txDecide as it
	// starts: at 512 bits the whole block, so txDecide goes straight to
	// txHdr. (A block pushed later reaches push_blk only as the WQE
	// starts, and takes txFirst.)
	early := m.WireOf("wb_early", And(goWQE, Or(And(pfHitB, Not(hitAny)), pushEarly)), "txDecide takes the read-ahead or pushed first block's first beat")
	fromPush := m.WireOf("wb_from_push", Or(And(sFirst, src), And(sRest, rest2), early), "")
	fromDMA := m.WireOf("wb_from_dma", Or(And(sFirst, Not(src)), sFetch, And(sRest, Not(rest2))), "")
	bValid := m.WireOf("wb_valid", Or(fromPush, And(fromDMA, rdValid)), "a WQE beat is taken")
	bData := m.WireOf("wb_data", Sel(fromPush, pbeat, rdData), "")
	m.Drive(wj, big.NewInt(0), Sel(bValid, incr(wj), C(NBW, 0)), Or(ctxLoad, goAny, bValid)) // 0 from txCtx on: txDecide's beat is beat 0
	firstDone := m.WireOf("first_done", And(bValid, sFirst, Eq(wj, C(NBW, uint64(beatsPerBB-1)))), "the first block's last beat")
	wErr := m.RegDecl("wqe_rd_err", 1, "a read of the WQE got an error response")
	errBeat := m.WireOf("wqe_err_beat", And(fromDMA, rdValid, rdErr), "")
	m.Drive(wErr, big.NewInt(0), And(Not(goAny), Or(wErr, errBeat)), nil)
	// The first faulted beat's block: the WQE's first block (at SQ_CI
	// for a WQE read again) plus the blocks before the beat.
	errBlk := m.WireOf("wqe_err_blk", And(Add(Sel(retFl, cSQCI, cNext), zext(Bits(wj, NBW-1, log2(beatsPerBB)), 16)), sqMask), "")
	errAddr := m.WireOf("wqe_err_addr", Add(Cat(cSQBase, C(6, 0)), Cat(C(42, 0), errBlk, C(6, 0))), "")
	firstErr := m.WireOf("wqe_err_first", And(errBeat, Not(wErr)), "the WQE's first faulted beat")
	m.Drive(wfAddr, nil, errAddr, firstErr)
	m.Assign(wfAddrNow, Sel(firstErr, errAddr, wfAddr))
	sge := captureSGE(m, bValid, wj, bData, W)
	// A bind's record (BIND) follows the header where an SGL would: ADDR
	// and LENGTH are where a first SGE's ADDR and LENGTH/LKEY are;
	// MR_STAG, ACCESS and TYPE2 are the next 8 bytes (48..55).
	var bindW *Signal
	if W >= 512 {
		bindW = m.Reg("bind_w2", 64, nil, Bits(bData, 447, 384), And(bValid, Eq(wj, C(NBW, 0))), "the WQE's bytes 48..55")
	} else {
		bindW = m.Reg("bind_w2", 64, nil, Bits(bData, 63, 0), And(bValid, Eq(wj, C(NBW, 6))), "the WQE's bytes 48..55")
	}
	sgeOne := m.WireOf("sge_one", Eq(hNSGE, C(5, 1)), "the WQE has one SGE")
	sgeAddr := m.WireOf("sge_addr", gate(sgeOne, Bits(sge, 63, 0)), "")
	sgeLen := m.WireOf("sge_len", gate(sgeOne, Bits(sge, 95, 64)), "")
	sgeKey := m.WireOf("sge_lkey", gate(sgeOne, Bits(sge, 127, 96)), "")
	bufDepth := cardTxMaxWQEByte / L
	bufAW := log2(bufDepth)
	var bufWrEn, bufWrAddr, bufWrData Expr
	if L <= 32 {
		hdrBeats := 32 / L
		var hparts []Expr
		for k := hdrBeats - 1; k >= 0; k-- {
			hk := m.WireOf(fmt.Sprintf("hdr_w%d", k), And(bValid, Eq(wj, C(NBW, uint64(k)))), "")
			hparts = append(hparts, Sel(hk, bData, Bits(hdr, W*k+W-1, W*k)))
		}
		m.Drive(hdr, nil, Sel(sRspLd, rspHdr, Sel(doTerm, termHdr, Cat(hparts...))), nil)
		bufWrEn = And(bValid, Not(Lt(wj, C(NBW, uint64(hdrBeats)))))
		wa := m.WireOf("buf_wa_full", Sub(wj, C(NBW, uint64(hdrBeats))), "")
		bufWrAddr = Bits(wa, bufAW-1, 0)
		bufWrData = bData
		unused = append(unused, Bits(wa, NBW-1, bufAW))
	} else {
		// 512 bits: payload word k is bytes 32+64k .. 95+64k, the upper half
		// of beat k and the lower half of beat k+1; the last word is written
		// in txFlush from the upper half alone. A WQE of one block, or of two
		// whose second was read ahead with the first, needs no txRest or
		// txFlush: word 0 is written with the first block (txFirst, the
		// second block's lower half from the read ahead), word 1 in txHdr.
		prev := m.Reg("wb_prev_hi", 256, nil, Bits(bData, 511, 256), bValid, "the upper half of the previous beat")
		m.Drive(hdr, nil, Sel(sRspLd, rspHdr, Sel(doTerm, termHdr, Bits(bData, 255, 0))), Or(sRspLd, doTerm, And(bValid, Eq(wj, C(NBW, 0)))))
		firstBeat := m.WireOf("wb_first_beat", Or(sFirst, sDecide), "txFirst, or txDecide taking a read-ahead block")
		two := m.WireOf("wb_first_two", And(Sel(sDecide, pfTwoB, src2), Eq(Bits(bData, 19, 16), C(4, 2))), "the first block's beat: the WQE is two blocks and the second was read ahead")
		firstW := m.WireOf("buf_wr_first", And(bValid, firstBeat), "word 0 from the first block")
		hdrW := m.WireOf("buf_wr_hdr", And(sHdr, rest2), "word 1 from the read-ahead second block")
		bufWrEn = Or(And(bValid, Ne(wj, C(NBW, 0))), sFlush, firstW, hdrW)
		wa := m.WireOf("buf_wa_full", Sel(firstBeat, C(NBW, 0), Sel(sHdr, C(NBW, 1), Sub(wj, C(NBW, 1)))), "")
		bufWrAddr = Bits(wa, bufAW-1, 0)
		unused = append(unused, Bits(wa, NBW-1, bufAW))
		bufWrData = Sel(Or(sFlush, sHdr), Cat(C(256, 0), Sel(sHdr, Bits(pblk, 1023, 768), prev)),
			Cat(Sel(firstBeat, gate(two, Bits(pblk, 767, 512)), Bits(bData, 255, 0)), Sel(firstBeat, Bits(bData, 511, 256), prev)))
	}

	// --- header checks ---
	avail := m.WireOf("avail", Sub(cPI, cNext), "blocks posted from the WQE on")
	opSendInv := m.WireOf("op_send_inv", Eq(hOpcode, C(8, 1)), "")
	opWrite := m.WireOf("op_write", Eq(hOpcode, C(8, 2)), "")
	opServed := m.WireOf("op_served", Or(Eq(hOpcode, C(8, 0)), opSendInv, opWrite), "")
	sqSize17 := Add(Cat(C(1, 0), sqMask), C(17, 1))
	// bbsFits is the card model's BBS rule for a WQE with av blocks posted
	// from it on: 1 to 8, within what was posted and the ring's size.
	bbsFits := func(av Expr) Expr {
		return And(RedOr(bbs), Not(Lt(C(4, 8), bbs)), Not(Lt(av, zext(bbs, 16))), Not(Lt(sqSize17, zext(bbs, 17))))
	}
	bbsOK := m.WireOf("bbs_ok", bbsFits(avail), "")
	roomBytes := m.WireOf("inline_room", Sub(Cat(C(7, 0), bbs, C(6, 0)), C(17, cardTxHdrBytes)), "bbs*64 - 32")
	lenOK := m.WireOf("inline_len_ok", And(Not(Lt(C(16, cardTxMaxInline), hLen)), Not(Lt(roomBytes, Cat(C(1, 0), hLen)))), "")
	opRead := m.WireOf("op_read", Eq(hOpcode, C(8, 3)), "")
	readOK := m.WireOf("read_ok", And(opRead, Not(hInline), Not(Lt(C(5, 1), hNSGE))), "an RDMA Read with at most one SGE (the sink)")
	sglOK := m.WireOf("sgl_ok", And(Not(Lt(C(5, cardTxMaxSGE), hNSGE)), Not(Lt(roomBytes, Cat(C(8, 0), hNSGE, C(4, 0))))), "NSGE <= 30 and its SGEs fit the blocks")
	var gatherOK Expr = sglOK
	if !CardTxGathers(W) {
		gatherOK = C(1, 0) // not verified at this width yet: an SGL stops the QP
		unused = append(unused, sglOK)
	}
	// Local Invalidate and bind (not inline) go through placement's mop
	// port and send nothing.
	opMop := m.WireOf("op_mop", And(Or(Eq(hOpcode, C(8, 4)), Eq(hOpcode, C(8, 5))), Not(hInline)), "a Local Invalidate or bind")
	served := m.WireOf("wqe_served", And(Or(And(opServed, Sel(hInline, lenOK, gatherOK)), readOK, opMop), bbsOK, Not(wErr)), "this increment serves the WQE")
	// Payload words come from the WQE buffer (inline bytes, a Read
	// Request's header), else from the gather.
	fromBuf := m.WireOf("pay_from_buf", Or(hInline, opRead, tm), "")
	// A fenced WQE waits while Reads are outstanding, a Read while ORD
	// are (RFC 5040 §7; the card model's blocked); any other WQE starts,
	// and its completion waits for the Reads before it (the walk). The
	// Read done that frees a waiting WQE brings the QP back.
	waitRd := m.WireOf("wait_read", And(sHdr, Not(retFl), served, Or(And(hFence, Ne(cOrq, C(5, 0))), And(opRead, Not(canStart)))), "the WQE waits for outstanding Reads")
	// A WQE before the first not started, other than a Read (outstanding
	// until its Read done), was sent: flushed or walked, it completes as
	// sent (SUCCESS, its BYTE_LEN: the SGE lengths are summed by the
	// gather's check pass when it has no inline payload).
	sentDone := m.WireOf("sent_done", And(Or(wk, fl), Not(opRead), Ne(cSQCI, cNext)), "the WQE at SQ_CI was sent")
	sentFull := m.WireOf("sent_full", And(sentDone, Not(hInline), Not(opMop)), "... with SGEs: its other blocks are read and its SGE lengths summed")
	var totalB Expr
	if beatsPerBB == 1 {
		totalB = zext(bbs, NBW)
	} else {
		totalB = Cat(bbs, C(3, 0))
	}
	totalBW := m.WireOf("wqe_beats", totalB, "beats of the whole WQE")
	restDone := m.WireOf("rest_done", And(sRest, bValid, Eq(wj, Sub(totalBW, C(NBW, 1)))), "the WQE's last beat")
	wfNow := m.WireOf("wf_now", Or(And(sHdr, wErr), And(restDone, Or(wErr, And(fromDMA, rdErr)))), "a read of the WQE got an error response")
	// A new WQE's read fault fails the QP (DMA_FAULT, then QP_ERROR DMA
	// with its Terminate); what was posted from it on goes without
	// completions (the card model's fetchSQ). A fault of a WQE read at
	// SQ_CI does the same from SQ_CI: to flush it (the QP already in
	// error: DMA_FAULT only), or to complete it (a Read's, or one sent
	// behind Reads: the card reads it again where the model keeps it, so
	// the model meets no such fault; the QP fails as for a new WQE, and
	// its outstanding Reads are dropped with everything posted).
	m.Assign(wfEv, wfNow)
	m.Drive(wfR, big.NewInt(0), Not(goAny), Or(goAny, wfNow))
	wfBB := m.Reg("wqe_fault_bbs", 16, nil, Sel(retFl, Sub(cPI, cSQCI), avail), wfNow, "blocks posted from the faulted WQE on (from SQ_CI when it was read again): dropped")
	// A malformed WQE (an opcode the SQ does not take, an inline length
	// or SGL its blocks cannot hold, a Read with more than one SGE, a bad
	// BBS) completes with LOC_QP_OP_ERR and fails the QP as a failed lkey
	// check does (the card model's localError); a bad BBS takes every
	// block posted with it, as the model's readWQE does.
	malNow := m.WireOf("wqe_malformed", And(sHdr, Not(retFl), Not(served), Not(wErr)), "")
	malR := m.RegDecl("wqe_mal", 1, "the WQE is malformed")
	m.Drive(malR, big.NewInt(0), Not(goAny), Or(goAny, malNow))
	malBB := m.Reg("wqe_mal_bbs", 16, nil, Sel(bbsOK, zext(bbs, 16), avail), malNow, "blocks the malformed WQE takes")
	m.Assign(haltOut, m.Reg("halt_q", 1, big.NewInt(0), C(1, 1), wfNow, ""))
	m.Assign(haltQPN, m.Reg("halt_qpn_q", QB, big.NewInt(0), cur, wfNow, ""))
	oneBB := m.WireOf("one_bb", Eq(bbs, C(4, 1)), "")
	m.Assign(rest2, And(src2, Eq(bbs, C(4, 2))))
	m.Drive(fIdx, nil, Sel(goAny, Sel(Or(doRet, doWalk, doFlush), cSQCI, cNext), Sel(sHdr, Add(Sel(retFl, cSQCI, cNext), C(16, 1)), Add(fIdx, zext(fN, 16)))), Or(goAny, sHdr, rdGo))
	m.Drive(fLeft, nil, Sel(goAny, Sel(usePush, C(4, 0), C(4, 1)), Sel(sHdr, Sub(bbs, C(4, 1)), Sub(fLeft, fN))), Or(goAny, sHdr, rdGo))

	// --- payload words to ddp_tx ---
	pLen := m.WireOf("pay_len", Sel(tm, tLen, Sel(opRead, C(16, cardTxReadReqBytes), hLen)), "payload bytes into ddp_tx: inline bytes, a Read Request's header or a Terminate's")
	payFull := m.WireOf("pay_words_full", Add(Cat(C(1, 0), pLen), C(17, uint64(L-1))), "")
	nWords := m.WireOf("pay_words", Bits(payFull, 16, LB), "payload words: ceil(len / lanes)")
	unused = append(unused, Bits(payFull, LB-1, 0))
	const FQW = 10
	fq := m.RegDecl("feed_issued", FQW, "payload words read")
	fInflight := m.RegDecl("feed_inflight", 1, "a buffer read is under way")
	fqPop := m.Wire("fq_pop", addrWidth(cardTxFeedDepth+1), "")
	lastWord := m.WireOf("feed_is_last", Eq(zext(incr(fq), 17-LB), nWords), "")
	bufRd := m.Mem("wqe_buf", W, bufDepth, bufWrEn, bufWrAddr, bufWrData, nil, Bits(fq, bufAW-1, 0), "the WQE past its header (the inline payload)")
	issue := m.Wire("feed_issue", 1, "read the next payload word")
	fLastRd := m.Reg("feed_last_rd", 1, nil, lastWord, issue, "the word being read is the message's last")
	rrHdr := m.WireOf("rr_hdr", readRequestHeader(sgeKey, sgeAddr, sgeLen, hRKey, hRAddr), "the Read Request header, byte 0 in bits 7:0")
	rrWord := m.Reg("rr_word", W, nil, Sel(tm, payloadWord(m, "term_word_sel", tPay, fq, W), payloadWord(m, "rr_word_sel", rrHdr, fq, W)), issue,
		"the Read Request or Terminate header's word being fed")
	fqq := ShiftQueue(m, "fq", cardTxFeedDepth, []string{"data", "last"}, []int{W, 1}, fInflight, []Expr{Sel(Or(opRead, tm), rrWord, bufRd), fLastRd}, fqPop)
	cw := fqq.Count.W
	m.Assign(issue, And(sFeed, fromBuf, Lt(zext(fq, 17-LB), nWords), Lt(Add(zext(fqq.Count, 3), zext(fInflight, 3)), C(3, cardTxFeedDepth))))
	m.Drive(fq, nil, Sel(goAny, C(FQW, 0), incr(fq)), Or(goAny, issue))
	m.Drive(fInflight, big.NewInt(0), issue, nil)

	// ddp_tx descriptor and payload.
	descDone := m.RegDecl("desc_done", 1, "ddp_tx took the descriptor")
	payDone := m.RegDecl("pay_done", 1, "ddp_tx took the last payload word")
	descReady := m.Wire("ddp_desc_ready", 1, "")
	descEarly := m.Wire("ddp_desc_early", 1, "txHdr of a WQE that goes to txFeed with its payload on chip: its descriptor may go now")
	descV := m.WireOf("ddp_desc_valid", And(Or(sFeed, descEarly), Not(descDone)), "")
	descGo := m.WireOf("ddp_desc_go", And(descV, descReady), "")
	pReady := m.Wire("ddp_s_ready", 1, "")
	// A Read Response's SGE (the source) goes into the gather's store as a
	// WQE's first SGE would: word 0 (and word 1 at 64 bits).
	rsSGE := m.WireOf("rsp_sge", Cat(rsSrcSTag, rsSize, rsSrcTO), "the Read Response's SGE: ADDR the source TO, LENGTH the size, LKEY the source STag")
	var gWrEn, gWrAddr, gWrData Expr
	if W == 64 {
		gWrEn = Or(bufWrEn, And(sRspLd, Not(rspDrop)), sRspSge)
		gWrAddr = Sel(sRspSge, C(bufAW, 1), Sel(sRspLd, C(bufAW, 0), bufWrAddr))
		gWrData = Sel(sRspSge, Bits(rsSGE, 127, 64), Sel(sRspLd, Bits(rsSGE, 63, 0), bufWrData))
	} else {
		gWrEn = Or(bufWrEn, And(sRspLd, Not(rspDrop)))
		gWrAddr = Sel(sRspLd, C(bufAW, 0), bufWrAddr)
		gWrData = Sel(sRspLd, zext(rsSGE, W), bufWrData)
		unused = append(unused, sRspSge)
	}
	// The payload read ahead's slot for the gather's first request (wires:
	// the read ahead is built below, from the gather's and the prefetcher's).
	paHit := m.Wire("pa_g_hit", 1, "")
	paWait := m.Wire("pa_g_wait", 1, "")
	paSrc := m.Wire("pa_g_src", 1, "")
	paV := m.Wire("pa_g_v", 1, "")
	paData := m.Wire("pa_g_data", W, "")
	paKeep := m.Wire("pa_g_keep", L, "")
	ckVTx := m.WireOf("chk_v_gather", And(ckV, Eq(ckRTag, C(8, 0))), "a verdict for the gather (tag 0; the payload read ahead's are tag 1)")
	// At 512 bits word 0 of the buffer (SGE 0) is written with the first
	// block, before txHdr: the check reads SGE 0 there.
	var preRd Expr = C(1, 0)
	if W == 512 {
		preRd = sHdr
	}
	// Verdict reuse (512 bits): a one-SGE WQE whose SGE 0 a payload slot's
	// lookup checked, the table unwritten since, goes from txHdr to
	// txFeed with that verdict (card_tx_payahead.go).
	var skipGo *Signal
	var skipLen Expr
	var slotVerdict txSlotVerdict
	if W == 512 {
		skipGo = m.Wire("chk_skip", 1, "txHdr: the WQE's check is a read-ahead slot's verdict: no txChk")
		slotVerdict = slotVerdictWires(m)
		skipLen = m.WireOf("chk_skip_len", Bits(pblk, 351, 320), "SGE 0's LENGTH, from the block taken in txDecide")
	}
	ckPiece, ckSlotN := cardTxVerdictBytes(m, ckAddr, ckRun, L)
	ga := cardTxGather(m, txGatherIn{W: W, L: L, LB: LB, bufWrEn: gWrEn, bufWrAddr: gWrAddr, bufWrData: gWrData,
		start: goAny, chkPhase: sChk, preRd: preRd, feedPhase: m.WireOf("g_feed", And(sFeed, Not(fromBuf)), "ddp_tx is fed from the gather"),
		nsge: hNSGE, qp: cur, pd: cPD, rdReqReady: rdReqReady, rdData: rdData, rdKeep: rdKeep, rdValid: rdValid, rdLast: rdLast, rdBErr: rdBErr,
		rdIsPay: Bit(rdTag, 0), outReady: pReady, chkReady: ckReqR, chkValid: ckVTx, chkFault: ckFault, chkAddr: ckAddr, chkPiece: ckPiece, chkSlotN: ckSlotN,
		slotHit: paHit, slotWait: paWait, slotSrc: paSrc, slotV: paV, slotData: paData, slotKeep: paKeep,
		skip: skipGo, skipLen: skipLen, verdict: slotVerdict})
	unused = append(unused, ga.unused...)
	m.Assign(gfR, ga.rdFault)
	m.Assign(gfAddr, ga.rdFaultAddr)
	m.Drive(gfPend, big.NewInt(0), And(Not(gfEv), Or(gfPend, ga.rdFaultNew)), nil)
	// Reads ahead of WQEs go when neither the gather nor the engine asks.
	// As soon as a WQE's size is known (txHdr), the QP's next posted
	// blocks (up to eight) are read ahead unless its entry holds them: for
	// a QP alone, its message's payload reads come back behind them;
	// among many, they wait a round of the scheduler.
	pfLoad := m.WireOf("pf_load_go", And(sHdr, live, Not(retFl), Not(wErr), Not(waitRd), bbsOK, Lt(zext(bbs, 16), avail)), "a live QP's WQE is decoded, does not wait for Reads, and its next one is posted")
	pfNext := m.WireOf("pf_next", Add(cNext, zext(bbs, 16)), "the block its next WQE starts at")
	pfGrant := m.Wire("pf_grant", 1, "dma_rd takes the read ahead")
	// A doorbell's read ahead: an SQ_PI that posts the first WQE of a
	// live QP whose every earlier block the engine has started, while the
	// engine does not hold it (its write-back's copy is then current).
	dbFirst := m.WireOf("pf_db_first", And(dbFire, isSQ, Not(badDB), Eq(oldPI, Bits(sqDB, 31, 16)), Ne(newPI, oldPI),
		Eq(qpSt.db, C(2, txQPLive)), Or(sIdle, Ne(dQP, cur))), "an SQ_PI doorbell posts the first WQE of a QP with nothing else posted")
	drainSkip := m.Wire("drain_skip", 1, "txFeed's last cycle: the message needs no txDrain")
	skipOK := m.Wire("drain_skip_ok", 1, "txFeed: the message's last FPDU is in mpa_tx but for its tail, no fault (its context is read every such cycle, for a quick turn)")
	pf := cardTxPrefetch(m, txPrefetchIn{W: W, QB: QB, load: pfLoad, qp: cur, next: pfNext, pi: cPI, sqBase: cSQBase, sqMask: sqMask,
		popped: popped, popRead: Or(sPop, And(Or(sDrain, And(sFeed, skipOK)), headOK)), ctx: ctxLoad, ctxNext: ctxNextLd, consume: goWQE, create: create, createQP: qpNum,
		dbAsk: dbFirst, dbQP: dQP, dbNext: oldPI, dbPI: newPI, dbSQBase: sqBaseDB, dbSQMask: dbSQMask,
		reqGrant: pfGrant, rdValid: rdValidAll, rdTag: rdTag, rdData: rdData, rdLast: rdLast, rdErr: rdErr})
	m.Assign(pfHit, pf.hit)
	m.Assign(pfPend, pf.pend)
	m.Assign(pfTwo, pf.two)
	m.Assign(pfData, pf.data)
	engReq := m.WireOf("rd_eng_req", Or(wqeRdValid, ga.rdV), "the engine or the gather asks for a read")
	m.Assign(pfGrant, And(pf.reqV, Not(engReq), rdReqReady))
	paGrant := m.Wire("pa_grant", 1, "dma_rd takes a payload slot's read")
	var decHdr *Signal
	if W == 512 {
		decHdr = m.WireOf("pa_dec_hdr", Bits(pblk, 31, 0), "txDecide: the starting WQE's header bytes 0..3")
	} else {
		unused = append(unused, tblWr)
	}
	pa := cardTxPayAhead(m, txPayAheadIn{W: W, L: L, LB: LB,
		blkDone: pf.blkDone, blkOK: pf.blkOK, blk: pf.blk, blkOff: pf.blkOff, blkQP: pf.blkQP, blkIdx: pf.blkIdx,
		blkFresh: pf.blkFresh, blkLast: pf.blkLast,
		create: create, cmdGo: cmdGo, qpNum: qpNum, qpPD: qpPD,
		cur: cur, cNext: cNext, wqeGo: goWQE, start: goAny,
		reqAsk: And(ga.firstAsk, Not(rsp)), reqAddr: ga.reqAddr, reqN: ga.reqN, reqGo: ga.reqGo, take: ga.slotTake,
		chkFree: Not(ga.chkV), chkReady: ckReqR, chkValid: ckV, chkTag: ckRTag, chkFault: ckFault, chkAddr: ckAddr, chkPiece: ckPiece, chkSlotN: ckSlotN,
		rdGrant: paGrant, rdHold: ga.reqMore, rdValid: rdValidAll, rdTag: rdTag, rdData: rdData, rdLast: rdLast, rdErr: rdErr, rdB: rdBErr,
		reuse: W == 512, tblWr: tblWr, decide: early, decHdr: decHdr, decSGE: Bits(pblk, 383, 256), skipGo: skipGo})
	unused = append(unused, pa.unused...)
	m.Assign(paHit, pa.hit)
	m.Assign(paWait, pa.wait)
	m.Assign(paSrc, pa.src)
	m.Assign(paV, pa.v)
	m.Assign(paData, pa.data)
	m.Assign(paKeep, pa.keep)
	m.Assign(paGrant, And(pa.rdV, Not(engReq), Not(pf.reqV), rdReqReady))
	m.Assign(rdValid, And(rdValidAll, Not(pf.beat), Not(pa.beat)))
	m.Assign(rdReqValid, Or(engReq, pf.reqV, pa.rdV))
	m.Assign(rdAddr, Sel(ga.rdV, ga.rdAddr, Sel(wqeRdValid, wqeAddr, Sel(pf.reqV, pf.reqAddr, pa.rdAddr))))
	m.Assign(rdLen, Sel(ga.rdV, ga.rdLen, Sel(wqeRdValid, wqeLen, Sel(pf.reqV, pf.reqLen, pa.rdLen))))
	m.Assign(rdReqTag, Sel(ga.rdV, C(rdCfg.TagBits, 1), Sel(wqeRdValid, C(rdCfg.TagBits, 0), Sel(pf.reqV, pf.reqTag, C(rdCfg.TagBits, cardTxPaTag)))))
	pValid := m.WireOf("ddp_s_valid", Sel(fromBuf, RedOr(fqq.Count), ga.outV), "")
	pGo := m.WireOf("ddp_s_go", And(pValid, pReady), "")
	m.Assign(fqPop, zext(And(pGo, fromBuf), cw))
	pLast := m.WireOf("ddp_s_last", Sel(fromBuf, fqq.Fields[0][1], ga.outLast), "")
	pLastGo := m.WireOf("ddp_s_last_go", And(pGo, pLast), "")
	var gLen Expr = ga.total
	if W == 512 {
		gLen = Sel(skipGo, skipLen, gLen) // ga.total takes it at txHdr's end
	}
	msgLen := m.WireOf("msg_len", Sel(fromBuf, zext(pLen, 32), gLen), "the message's payload bytes into ddp_tx")
	noPay := m.WireOf("no_payload", Eq(msgLen, C(32, 0)), "")

	// The check port: requests from the gather (tag 0), else from the
	// payload read ahead (tag 1); every verdict taken.
	m.Assign(ckReqV, Or(ga.chkV, pa.chkV))
	m.Assign(ckSTag, Sel(ga.chkV, ga.chkSTag, pa.chkSTag))
	m.Assign(ckNeed, gate(ga.chkV, Sel(rsp, C(4, 2), ga.chkNeed[0]))) // a Read Response's source: remote read
	m.Assign(ckQP, Sel(ga.chkV, ga.chkNeed[1], zext(pa.chkQP, 32)))
	m.Assign(ckPD, Sel(ga.chkV, ga.chkNeed[2], pa.chkPD))
	m.Assign(ckTO, Sel(ga.chkV, ga.chkTO, pa.chkTO))
	m.Assign(ckLen, Sel(ga.chkV, ga.chkLen, pa.chkLen))
	m.Assign(ckTag, Sel(ga.chkV, C(8, 0), C(8, cardTxPaChkTag)))
	m.Assign(ckR, C(1, 1))
	m.Drive(descDone, big.NewInt(0), And(Not(goMsg), Or(descDone, descGo)), nil)
	m.Drive(payDone, big.NewInt(0), And(Not(goMsg), Or(payDone, pLastGo)), nil)
	feedEnd := m.WireOf("feed_end", And(sFeed, Or(descDone, descGo), Or(payDone, pLastGo, noPay)), "")

	rv := Cat(C(1, 0), Not(cRev0))
	opLo := Sel(tm, C(4, 7), Sel(rsp, C(4, 2), Sel(opWrite, C(4, 0), Sel(opRead, C(4, 1), Add(Sel(opSendInv, C(4, 4), C(4, 3)), Sel(hSolicited, C(4, 2), C(4, 0)))))))
	dStag := Sel(opWrite, hRKey, Sel(opSendInv, hInv, C(32, 0)))

	// ddp_tx -> mpa_tx, with each FPDU's wire length and the ring records.
	ddpData := m.Wire("ddp_m_tdata", W, "")
	ddpKeep := m.Wire("ddp_m_tkeep", L, "")
	ddpValid := m.Wire("ddp_m_tvalid", 1, "")
	ddpLast := m.Wire("ddp_m_tlast", 1, "")
	ddpLen := m.Wire("ddp_m_tuser_len", 16, "")
	ddpMsgLast := m.Wire("ddp_m_tuser_last", 1, "")
	ddpUser := m.Wire("ddp_m_tuser_user", 16, "")
	unused = append(unused, ddpKeep, ddpUser)
	mpaReady := m.Wire("mpa_s_ready", 1, "")
	hFirst := m.RegDecl("h_first", 1, "the next beat into mpa_tx opens an FPDU")
	recRoom := m.Wire("rec_room", 1, "")
	fits := m.Wire("ring_fits", 1, "the ring has room for the FPDU entering mpa_tx")
	// A message longer than the ring is published as it goes: an FPDU
	// that is not the message's last and whose end crosses a quarter of
	// the ring gets a record of its own (no CQE, SQ_CI unchanged, TXS_PI
	// at its end) once its ring writes are done, so the host drains the
	// ring while the message goes on. At most a quarter of the ring and
	// one FPDU are then written and unpublished, so an FPDU of up to
	// three quarters of the ring always finds room.
	pubFP := m.Wire("pub_fpdu", 1, "the FPDU entering mpa_tx gets a progress record")
	// A progress record leaves the completion queue's last slot to the
	// write-back's record of its WQE (the engine took the WQE with a slot
	// free): the write-back never finds the queue full.
	pubRoom := m.WireOf("pub_room", And(pubSlot, Not(sWB)), "the completion queue takes a progress record now")
	abDrop := m.Wire("ab_drop", 1, "the FPDU entering mpa_tx is past a payload read fault's cut: it is not written (no room, no record)")
	hGate := m.WireOf("h_gate", Or(Not(hFirst), And(recRoom, fits, Or(Not(pubFP), pubRoom))), "")
	hGo := m.WireOf("h_go", And(ddpValid, mpaReady, hGate), "a beat goes from ddp_tx to mpa_tx")
	m.Drive(hFirst, big.NewInt(1), ddpLast, hGo)
	newFPDU := m.WireOf("fpdu_new", And(hGo, hFirst), "")
	// A message whose payload comes from the WQE buffer (inline, a Read
	// Request, a Terminate) cannot fault once fed: its write-back needs
	// only its last FPDU's stream offset, which f_off has once that FPDU's
	// first beat is in mpa_tx (mpa_tx and the ring records take every
	// context with the first beat). The FPDU's other beats follow while
	// the engine writes back and starts the next QP (drain_tail says so).
	lastIn := m.WireOf("msg_last_in", And(hGo, ddpLast, ddpMsgLast), "a message's last beat enters mpa_tx")
	tail := m.RegDecl("drain_tail", 1, "a message's last FPDU has entered mpa_tx but for its last beat (the message may be written back)")
	lastHdrIn := m.WireOf("msg_last_hdr_in", And(newFPDU, ddpMsgLast, Not(ddpLast), fromBuf, Not(rsp)), "the first beat of the last FPDU of a message fed from the buffer enters mpa_tx")
	// A gathered message can fault until its last payload beat is read;
	// once the feed has handed ddp_tx that beat with no fault (txDrain)
	// and its last FPDU's first beat is in mpa_tx, it is written back the
	// same way, the rest of that FPDU following as a tail.
	gHdr := m.RegDecl("msg_last_hdr_gather", 1, "the first beat of the last FPDU of the engine's gathered message is in mpa_tx")
	m.Drive(gHdr, big.NewInt(0), And(Not(goMsg), Or(gHdr, And(newFPDU, ddpMsgLast, Not(fromBuf), Not(rsp)))), nil)
	drainEarly := m.Wire("drain_early", 1, "txDrain: a gathered message read whole without a fault, its last FPDU in mpa_tx but for its tail")
	m.Drive(tail, big.NewInt(0), Or(lastHdrIn, And(drainEarly, Not(lastIn)), And(tail, Not(lastIn))), nil)
	// With a tail in flight, the last beat that enters is the tail's: the
	// engine's message has not begun to enter.
	engLastIn := m.WireOf("msg_eng_last_in", Or(lastHdrIn, And(lastIn, Not(tail))), "the engine's message is in mpa_tx but for its tail")
	msgDone := m.RegDecl("msg_done", 1, "the engine's message is in mpa_tx (but for its tail)")
	m.Drive(msgDone, big.NewInt(0), And(Not(goMsg), Or(msgDone, engLastIn)), nil)

	wl, wlUnused := fpduWireLen(m, ddpLen, fOff, cMk)
	unused = append(unused, wlUnused...)
	m.Drive(fOff, nil, Sel(ctxLoad, Bits(engRd, 47, 16), Add(fOff, zext(wl, 32))), Or(ctxLoad, newFPDU))
	unused = append(unused, Bit(wl, 16))

	// A gathered message can be longer than the ring: each FPDU waits for
	// room (TXS_CI doorbells); an inline WQE always has it (the start guard).
	// A dropped FPDU needs no room: it counts against an empty ring.
	usedFit := m.WireOf("ring_used_fit", Sel(abDrop, C(32, 0), used), "")
	m.Assign(fits, Not(Lt(size32, Add(usedFit, zext(wl, 32)))))
	fEnd := m.WireOf("fpdu_end_off", Add(fOff, zext(wl, 32)), "the stream offset after the FPDU")
	quarter := m.WireOf("ring_quarter_hi", Not(zext(Bits(cTXMask, 23, 2), 32)), "stream offset bits above a quarter of the ring")
	m.Assign(pubFP, And(Not(ddpMsgLast), Ne(And(fOff, quarter), And(fEnd, quarter))))
	pubGo := m.WireOf("pub_go", And(newFPDU, pubFP, Not(abDrop)), "a progress record is queued (none for a dropped FPDU)")

	// --- a payload read fault cuts the message ---
	// The FPDUs from the one holding the faulted request's first byte on
	// are aborted, as the card model sends the segments before the
	// faulted one and then the Terminate: those in mpa_tx before the cut
	// is known are written past what is published and never published,
	// later ones are dropped; the write-back rewinds the QP's TXS_PI to
	// the cut, where its Terminate then goes. When the fault is seen, at
	// most the last FPDU in holds the faulted byte (the bytes after it are
	// still in the gather), and every FPDU of the message enters mpa_tx
	// before the write-back (txDrain), so the cut is known by then.
	hl := m.Reg("ab_hdr_len", 16, nil, Sel(opWrite, C(16, taggedHdr), C(16, untaggedHdr)), nil, "the message's DDP header length (its header is decoded cycles before its first FPDU)")
	abPay := m.RegDecl("ab_pay_end", 32, "payload bytes of the message in the FPDUs that entered mpa_tx")
	abStart := m.RegDecl("ab_fpdu_start", 32, "stream offset of the last FPDU of the message that entered")
	abAny := m.RegDecl("ab_any", 1, "an FPDU of the message entered")
	payEnd := m.WireOf("ab_pay_end_new", Add(abPay, zext(Sub(ddpLen, hl), 32)), "payload end of the FPDU entering")
	m.Drive(abPay, big.NewInt(0), Sel(goMsg, C(32, 0), payEnd), Or(goMsg, newFPDU))
	m.Drive(abStart, nil, fOff, newFPDU)
	m.Drive(abAny, big.NewInt(0), And(Not(goMsg), Or(abAny, newFPDU)), nil)
	abCutSet := m.RegDecl("ab_cut_set", 1, "the message's cut is known")
	// The cut is found the cycle after the FPDU holding the faulted byte
	// has entered (or the cycle after the fault is seen, if it entered
	// before): a compare of registers. The FPDU after it cannot have
	// entered by then unless the one holding the byte was a single beat
	// (then both are small, written, and never published).
	abSet := m.WireOf("ab_set", And(gfR, Not(abCutSet), abAny, Lt(ga.rdFaultOff, abPay)), "the last FPDU in holds the faulted byte: the cut is its start")
	m.Drive(abCutSet, big.NewInt(0), And(Not(goMsg), Or(abCutSet, abSet)), nil)
	abCut := m.Reg("ab_cut", 32, nil, abStart, abSet, "the cut: the first aborted FPDU's stream offset")
	abQP := m.Reg("ab_qp", QB, nil, cur, abSet, "")
	abV := m.RegDecl("ab_v", 1, "a cut waits for its write-back's record: records of ab_qp publish at most ab_cut")
	// Once the cut is known, the FPDUs that enter mpa_tx are dropped
	// rather than written: they would need ring room the host can never
	// give back (nothing past the cut is published).
	m.Assign(abDrop, And(gfR, abCutSet))
	abLastDrop := m.RegDecl("ab_last_drop", 1, "the message's last FPDU was dropped: its write-back's record waits for no write of its own")
	m.Drive(abLastDrop, big.NewInt(0), And(Not(goMsg), Or(abLastDrop, And(newFPDU, abDrop, ddpMsgLast))), nil)

	// --- ring records: one per FPDU, for the request issuer and the data path ---
	pos := m.WireOf("rec_pos", And(Bits(fOff, 23, 0), cTXMask), "the FPDU's place in the ring")
	toRingEnd := m.WireOf("rec_to_end", Sub(Add(Cat(C(1, 0), cTXMask), C(25, 1)), Cat(C(1, 0), pos)), "")
	split := m.WireOf("rec_split", Lt(toRingEnd, zext(Bits(wl, 15, 0), 25)), "the FPDU wraps the ring")
	cut := m.WireOf("rec_cut", Bits(toRingEnd, 15, 0), "octets before the wrap")
	unused = append(unused, Bits(toRingEnd, 24, 16))
	qaPop := m.Wire("qa_pop", addrWidth(cardTxRecDepth+1), "")
	qdPop := m.Wire("qd_pop", addrWidth(cardTxRecDepth+1), "")
	recF := []string{"base", "pos", "len", "split", "cut", "last", "drop"}
	recW := []int{52, 24, 16, 1, 16, 1, 1}
	// A dropped FPDU goes to the data path only (qd), which takes its
	// beats unsplit and writes nothing.
	recWrite := m.WireOf("rec_write", And(newFPDU, Not(abDrop)), "the FPDU entering is written to the ring")
	recD := []Expr{cTXBase, pos, Bits(wl, 15, 0), And(split, Not(abDrop)), cut, Or(ddpMsgLast, pubFP), abDrop}
	// The request issuer's records also name the FPDU's QP and stream
	// offset, kept with each ring write until its response.
	qa := ShiftQueue(m, "qa", cardTxRecDepth, append(recF, "qp", "off"), append(recW, QB, 32), recWrite, append(recD, cur, fOff), qaPop)
	qd := ShiftQueue(m, "qd", cardTxRecDepth, recF, recW, newFPDU, recD, qdPop)
	rcw := qa.Count.W
	m.Assign(recRoom, And(Lt(qa.Count, C(rcw, cardTxRecDepth)), Lt(qd.Count, C(rcw, cardTxRecDepth))))

	// Request issuer.
	ri2 := m.RegDecl("ri_second", 1, "the wrapped part's write is next")
	ha := qa.Fields[0]
	wrReqReady := m.Wire("wr_req_ready", 1, "")
	wrReqValid := m.WireOf("wr_req_valid", RedOr(qa.Count), "")
	wrGo := m.WireOf("wr_req_go", And(wrReqValid, wrReqReady), "")
	// Each ring write is numbered (tag bits 7:2): its QP, FPDU offset and
	// address wait in a RAM for its response. dma_wr has at most
	// Bursts + 3 requests between taking one and completing it, fewer
	// than the numbers.
	wrSeq := m.RegDecl("wr_seq", wrCfg.TagBits-2, "the next ring write's number")
	m.Drive(wrSeq, big.NewInt(0), incr(wrSeq), wrGo)
	wrAddrFull := m.WireOf("wr_req_addr", Add(Cat(ha[0], C(12, 0)), Sel(ri2, C(64, 0), zext(ha[1], 64))), "the ring's base, plus the FPDU's place for its first write")
	wrLen := m.WireOf("wr_req_n", Sel(ri2, Sub(ha[2], ha[4]), Sel(ha[3], ha[4], ha[2])), "")
	wrEnd := m.WireOf("wr_req_end", Or(ri2, Not(ha[3])), "the FPDU's last write")
	m.Drive(ri2, big.NewInt(0), Not(wrEnd), wrGo)
	m.Assign(qaPop, zext(And(wrGo, wrEnd), rcw))

	// Data path: mpa_tx's FPDU beats to dma_wr, the wrapped part realigned.
	hd := qd.Fields[0]
	mpaData := m.Wire("mpa_m_tdata", W, "")
	mpaKeep := m.Wire("mpa_m_tkeep", L, "")
	mpaValid := m.Wire("mpa_m_tvalid", 1, "")
	mpaLast := m.Wire("mpa_m_tlast", 1, "")
	mpaUser := m.Wire("mpa_m_tuser", 32, "")
	unused = append(unused, mpaKeep, mpaUser, mpaLast)
	wsReady := m.Wire("wr_s_ready", 1, "")
	const RB = 17
	rin := m.RegDecl("rw_in", RB, "input beats of the FPDU taken")
	ph := m.RegDecl("rw_merge", 1, "the wrapped part is being realigned")
	rj := m.RegDecl("rw_out2", RB, "realigned beats sent")
	prevB := m.RegDecl("rw_prev", W, "the input beat holding the wrap")
	cutW := hd[4]
	rLo := m.WireOf("rw_r", Bits(cutW, LB-1, 0), "the wrap's lane")
	qBeat := m.WireOf("rw_q", zext(Bits(cutW, 15, LB), RB), "the input beat holding the wrap")
	mergeMode := m.WireOf("rw_merge_mode", And(hd[3], RedOr(rLo)), "")
	dropH := m.WireOf("rw_drop", And(RedOr(qd.Count), hd[6]), "the head FPDU is dropped: its beats are taken and not written")
	lenP := m.WireOf("rw_len_p", Add(zext(hd[2], RB+LB), C(RB+LB, uint64(L-1))), "")
	nin := m.WireOf("rw_nin", Bits(lenP, RB+LB-1, LB), "input beats of the FPDU")
	len2P := m.WireOf("rw_len2_p", Add(zext(Sub(hd[2], cutW), RB+LB), C(RB+LB, uint64(L-1))), "")
	n2 := m.WireOf("rw_n2", Bits(len2P, RB+LB-1, LB), "beats of the wrapped part")
	unused = append(unused, Bits(lenP, LB-1, 0), Bits(len2P, LB-1, 0))
	have := m.WireOf("rw_have", RedOr(qd.Count), "")
	needIn := m.WireOf("rw_need_in", Or(Not(ph), Lt(rin, nin)), "this output beat takes an input beat")
	win := m.WireOf("rw_window", Cat(Sel(needIn, mpaData, C(W, 0)), prevB), "")
	merged := shiftDownBytes(m, "rw_shift", win, rLo, W)
	unused = append(unused, Bits(win, 2*W-1, 2*W-8))
	outData := m.WireOf("rw_data", Sel(ph, Bits(m.WireOf("rw_merged", merged, ""), W-1, 0), mpaData), "")
	outValid := m.WireOf("rw_valid", And(have, Not(hd[6]), Or(Not(needIn), mpaValid)), "")
	outGo := m.WireOf("rw_go", And(outValid, wsReady), "")
	takeIn := m.WireOf("rw_take", Or(And(outGo, needIn), And(dropH, mpaValid)), "")
	atQ := m.WireOf("rw_at_q", Eq(rin, qBeat), "")
	passEnd := m.WireOf("rw_pass_end", And(Not(ph), takeIn, Eq(incr(rin), nin), Not(And(mergeMode, atQ))), "")
	toMerge := m.WireOf("rw_to_merge", And(Not(ph), takeIn, mergeMode, atQ), "")
	mergeEnd := m.WireOf("rw_merge_end", And(ph, outGo, Eq(incr(rj), n2)), "")
	fpduEnd := m.WireOf("rw_fpdu_end", Or(passEnd, mergeEnd), "")
	m.Drive(rin, big.NewInt(0), Sel(fpduEnd, C(RB, 0), incr(rin)), Or(fpduEnd, takeIn))
	m.Drive(ph, big.NewInt(0), toMerge, Or(toMerge, fpduEnd))
	m.Drive(rj, big.NewInt(0), Sel(fpduEnd, C(RB, 0), incr(rj)), Or(fpduEnd, And(ph, outGo)))
	m.Drive(prevB, nil, mpaData, takeIn)
	m.Assign(qdPop, zext(fpduEnd, rcw))

	// --- completion queue and records out ---
	doneV := m.Wire("wr_done_valid", 1, "")
	doneTag := m.Wire("wr_done_tag", wrCfg.TagBits, "")
	doneErr := m.Wire("wr_done_err", 1, "")
	doneEB := m.Wire("wr_done_err_burst", DMAWrErrBurstBits(W), "the request's first refused burst")
	doneReady := m.Wire("wr_done_ready", 1, "a completion is taken (an error one waits, below)")
	doneGo := m.WireOf("wr_done_go", And(doneV, doneReady), "")
	cqPop := m.Wire("cq_pop", addrWidth(CardTxCplDepth+1), "")
	cplF := []string{"cqe", "cq", "qpn", "wr_id", "op", "len", "sq_ci", "txs_pi", "noring", "flush", "prot", "rrd", "term", "blame", "mal", "cut", "wqe", "silent"}
	cplW := []int{1, QB, QB, 64, 3, 32, 16, 32, 1, 1, 1, 1, 1, 16, 1, 1, 1, 1}
	// A WQE retires (SQ_CI moves past it) when it is sent, unless it is a
	// Read: that retires when its Read done is taken (ret_mode).
	// A WQE sent while a Read is outstanding (or a walk is pending) does
	// not: its record moves TXS_PI only, and the walk completes it.
	// A malformed Read sends no Read Request: it completes as it fails.
	readSent := m.WireOf("read_sent", And(opRead, Not(malR), Not(wfR)), "the WQE is a Read whose Read Request went (or goes) out")
	retires := m.WireOf("wqe_retires", Or(ret, sentDone, And(Not(retFl), Not(readSent), Eq(cOrq, C(5, 0)), Not(cWk), Not(gfR))), "a WQE whose payload read faulted (a new one, never ret or sentDone) stays to be flushed")
	// A flushed WQE with a bad BBS takes every block posted with it (the
	// model's rule: its length hides where the next WQE starts).
	availF := m.WireOf("flush_avail", Sub(cPI, cSQCI), "blocks posted from SQ_CI on")
	bbsF := m.WireOf("flush_bbs", Sel(bbsFits(availF), zext(bbs, 16), availF), "blocks of the WQE flushed")
	bbsAdv := m.WireOf("wqe_blocks", Sel(wfR, wfBB, Sel(malR, malBB, zext(bbs, 16))), "blocks the WQE takes")
	dropAll := m.WireOf("wqe_fault_again", And(retFl, wfR), "the WQE at SQ_CI could not be read again: all posted is dropped")
	retFault := m.WireOf("wqe_fault_live", And(dropAll, Or(ret, wk)), "... on a live QP: it fails with QP_ERROR DMA and a Terminate")
	endReads := m.WireOf("wqe_ends_reads", Or(fl, dropAll), "the write-back leaves no Read outstanding, no walk and no Read done pending (a flush, or all posted dropped)")
	newSQCI := m.WireOf("new_sq_ci", Sel(dropAll, Add(cSQCI, wfBB), Sel(And(fl, Not(sentDone)), Add(cSQCI, bbsF), Sel(retires, Add(cSQCI, bbsAdv), cSQCI))), "")
	wcOp := wcOpcode(hOpcode) // WC_OPCODE
	// A WQE whose lkey check failed completes with LOC_PROT_ERR (always,
	// signaled or not; BYTE_LEN 0) with no ring writes to wait for, and
	// puts its QP in error: the WQEs after it are flushed (the model's
	// localError).
	// A Local Invalidate or bind the mop port refused does the same, with
	// LOC_PROT_ERR or MW_BIND_ERR (the model's localError).
	mopFail := m.RegDecl("mop_fail", 1, "the WQE's memory operation was refused")
	prot := m.WireOf("prot", And(Or(ga.fault, mopFail, malR, wfR), Not(retFl), Not(rsp), Not(tm)), "the WQE failed its lkey check or memory operation, is malformed, or could not be read")
	// Behind an outstanding Read it gives no record: the QP's flush
	// completes it after the Reads (late_prot).
	protLate := m.WireOf("prot_late", And(prot, Or(Ne(cOrq, C(5, 0)), cWk)), "")
	m.Assign(lateSet, And(sWB, protLate, Not(wfR)))
	m.Assign(lateMalSet, And(sWB, protLate, malR, Not(wfR)))
	m.Assign(lateUsed, And(sWB, lateCur, Or(dropAll, And(fl, Eq(cSQCI, cNext)))))
	lateFl := m.WireOf("late_prot_flush", And(fl, Not(sentDone), lateCur, Eq(cSQCI, cNext), Not(dropAll)), "the flush reached the WQE that failed behind a Read: its own status")
	flushErr := m.WireOf("flush_err", And(fl, Not(sentDone), Not(lateFl)), "the WQE completes with WR_FLUSH_ERR")
	m.Assign(blameUsed, And(sWB, flushErr, blameCur, Ne(cSQCI, cNext)))
	blameCause := m.WireOf("blame_cause", gate(blameUsed, cBlame), "the peer's Terminate's cause, for the WQE it blames")
	wbTXSPI := m.WireOf("wb_txs_pi", Sel(And(tm, tSilent), tCut, Sel(gfR, abCut, fOff)), "TXS_PI after the WQE: the cut when its payload read faulted, or a refused ring write's")
	noRec := m.WireOf("no_record", And(Or(And(wk, opRead), protLate), Not(wfR)), "the write-back gives no record (the walk reached an outstanding Read)")
	// A Read Response whose source fails its check (it passed card_rx's
	// check when the Read Request came: the source was revoked since)
	// puts the QP in error with no completion of its own, sends the card
	// model's ReadSourceRevoked Terminate (RDMAP remote protection error
	// of the verdict, M, D and R: the Read Request's DDP and RDMAP
	// headers; nothing of the response was sent, as every piece is checked
	// before the first byte) and gives its IRD entry back.
	rspFault := m.WireOf("rsp_fault", And(ga.fault, rsp, Not(tm)), "a Read Response's source failed its remote-read check")
	m.Assign(protErr, And(sWB, Or(prot, rspFault, retFault, gfR)))
	m.Assign(protTerm, And(sWB, Or(prot, rspFault, retFault, gfR)))
	revCause := m.WireOf("rev_cause", readSourceCause(ga.faultCode), "mem.Fault.Cause(UseRemoteRead)")
	rsSinkSTagW := m.WireOf("rev_sink_stag", rsSinkSTag, "")
	rsSinkTOW := m.WireOf("rev_sink_to", rsSinkTO, "")
	rsSizeW := m.WireOf("rev_size", rsSize, "")
	rsSrcSTagW := m.WireOf("rev_src_stag", rsSrcSTag, "")
	rsSrcTOW := m.WireOf("rev_src_to", rsSrcTO, "")
	revRR32 := m.WireOf("rev_rr32", readRequestHeader(rsSinkSTagW, rsSinkTOW, rsSizeW, rsSrcSTagW, rsSrcTOW), "the Read Request's RDMAP header, byte 0 in bits 7:0 (zero past its 28 octets)")
	revRR := Bits(revRR32, 8*cardTxReadReqBytes-1, 0)
	unused = append(unused, Bits(revRR32, 255, 8*cardTxReadReqBytes))
	revRec := Cat(C(1, 0), revRR, Bits(pd, rreqRecW-1, 224), C(16, untaggedHdr+cardTxReadReqBytes), revCause)
	m.Assign(engCause, Sel(rspFault, revCause, C(16, causeRDMAPLocalCatastrophic)))
	m.Assign(engRec, Sel(rspFault, revRec, C(termRecW, causeRDMAPLocalCatastrophic)))
	// The WQE's record at its write-back, or a progress record (pubGo:
	// only the QP, SQ_CI unchanged and TXS_PI; never in the same cycle).
	wbRec := []Expr{And(Or(flushErr, prot, lateFl, rfl, And(hSignaled, retires)), Not(wfR)), cCQ, cur, hWRID, wcOp, Sel(Or(flushErr, prot, lateFl, rfl, opMop), C(32, 0), Sel(ret, sgeLen, msgLen)), newSQCI, wbTXSPI,
		Or(retFl, prot, opMop, And(rsp, Or(rspDrop, rspFault)), And(tm, tRecv), And(gfR, abLastDrop)), Or(flushErr, rfl), Or(prot, lateFl), And(rsp, Not(rspKeep)), tm, blameCause, Or(malR, And(lateFl, lateMalCur)), gfR,
		And(Or(flushErr, prot, lateFl, rfl, retires), Not(wfR), Not(tm), Not(rsp)), And(tm, tSilent)}
	recIn := make([]Expr, len(wbRec))
	for i, e := range wbRec {
		var pe Expr = C(cplW[i], 0)
		switch cplF[i] {
		case "cq":
			pe = cCQ
		case "qpn":
			pe = cur
		case "sq_ci":
			pe = cSQCI
		case "txs_pi":
			pe = fEnd
		}
		recIn[i] = Sel(pubGo, pe, e)
	}
	cq := ShiftQueue(m, "cq", CardTxCplDepth, cplF, cplW, Or(And(sWB, Not(noRec)), pubGo), recIn, cqPop)
	ccw := cq.Count.W
	m.Assign(cplRoom, Lt(cq.Count, C(ccw, CardTxCplDepth)))
	m.Assign(pubSlot, Lt(cq.Count, C(ccw, CardTxCplDepth-1)))
	dn := m.RegDecl("cpl_written", ccw, "WQEs whose ring writes are done, not yet out (up to the whole queue)")
	oV := m.RegDecl("cpl_v", 1, "")
	oFree := m.WireOf("cpl_free", Or(Not(oV), cplReady), "")
	m.Assign(cplOut, Or(cplHold, RedOr(cq.Count), oV))
	doneLast := m.WireOf("wr_done_last", And(doneGo, Bit(doneTag, 0)), "")
	// A cut message whose last FPDU was dropped has no write of its own
	// to wait for: its record waits for the FPDUs written before its
	// write-back (fp_out then), so it publishes nothing not yet in memory.
	fpDone := m.WireOf("wr_done_fpdu", And(doneGo, Bit(doneTag, 1)), "an FPDU's last write has its response")
	fpOut := m.RegDecl("fp_out", 8, "FPDUs written (queued or issued) whose last write has no response yet")
	m.Drive(fpOut, big.NewInt(0), Sub(Add(fpOut, zext(recWrite, 8)), zext(fpDone, 8)), nil)
	abWait := m.RegDecl("ab_wait", 8, "FPDU writes the cut record waits for")
	m.Drive(abWait, big.NewInt(0), Sel(And(sWB, gfR), Sub(fpOut, zext(fpDone, 8)), Sub(abWait, zext(And(fpDone, RedOr(abWait)), 8))), nil)
	h := cq.Fields[0]
	// A record with no ring bytes (a Read completed by its Read done) goes
	// out as soon as the records before it have.
	// A Read Response's record also gives its IRD entry back (m_rreq_done).
	rdoV := m.RegDecl("rreq_done_v", 1, "")
	rdoFree := m.WireOf("rreq_done_free", Or(Not(rdoV), rdoReady), "")
	// --- refused transmit ring writes ---
	// The card model stops the QP at the refused FPDU: DMA_FAULT (OBJ
	// the QP, INFO the first refused byte), QP_ERROR DMA, TX_CLOSED, no
	// Terminate (the ring cannot carry it), TXS_PI at the FPDU's start,
	// every WQE not done flushed. card_tx hears of the refusal a write
	// response later, when later FPDUs and write-backs of the QP may be
	// done. An error completion is taken only once every record that
	// does not wait for it has gone out (the head waits for a write), so
	// that the QP's records still queued are all of WQEs written back
	// after the refused FPDU entered; the cycle after, no record goes out
	// while the write's QP is looked up. From then on the QP is dead
	// (rf_dead, until CREATE): its records go out as WR_FLUSH_ERR
	// completions that leave TXS_PI where it is (m_cpl_keep_txs). If the
	// QP is live, it goes to error at once (rf_store, when no command or
	// write-back writes a state) with a silent record; its turn raises
	// DMA_FAULT, then QP_ERROR DMA, and gives the Terminate record, with
	// TXS_PI the cut, that closes the stream; the flush completes the
	// rest. A QP already in error (its Terminate pending, sent or
	// received) gets a quiet silent record in place of its Terminate
	// record, once the engine is not serving it: the model's drain closes
	// the stream there too, never sends a Terminate still to go, and
	// raises DMA_FAULT but no second QP_ERROR. Later refusals of a dead
	// QP only count.
	wrInfo := m.Mem("wr_info", QB+32+64, 1<<(wrCfg.TagBits-2), wrGo, wrSeq, Cat(ha[7], ha[8], wrAddrFull), nil, Bits(doneTag, wrCfg.TagBits-1, 2),
		"per ring write in flight: {QP, its FPDU's stream offset, address}")
	errSeen := m.RegDecl("rf_seen", 1, "an error completion was taken last cycle: its write is read from wr_info")
	rfNew := m.RegDecl("rf_new", 1, "... two cycles ago: its QP is looked up in rf_dead")
	rfV := m.RegDecl("rf_v", 1, "a refused ring write's QP waits to be put in error")
	headDone := m.WireOf("cpl_head_done", Sel(h[8], Not(And(h[15], RedOr(abWait))), RedOr(dn)), "the head record's writes have their responses")
	headWaits := m.WireOf("rf_head_waits", Or(Not(RedOr(cq.Count)), Not(headDone)), "no record can go out before more write responses")
	rfBusy := m.WireOf("rf_busy", Or(errSeen, rfNew), "a refused write is being looked up: no record goes out")
	m.Assign(doneReady, Or(Not(doneErr), And(headWaits, Not(rfBusy), Not(rfV))))
	m.Drive(errSeen, big.NewInt(0), And(doneGo, doneErr), nil)
	m.Drive(rfNew, big.NewInt(0), errSeen, nil)
	ebQ := m.Reg("rf_burst", DMAWrErrBurstBits(W), nil, doneEB, And(doneGo, doneErr), "the refused write's first refused burst (held: no error completion is taken until it is used)")
	iQP := m.WireOf("rf_info_qp", Bits(wrInfo, QB+96-1, 96), "")
	iCut := m.WireOf("rf_info_cut", Bits(wrInfo, 95, 64), "the refused FPDU's stream offset")
	iAddr := m.WireOf("rf_info_addr", Bits(wrInfo, 63, 0), "the write's address")
	deadSet := m.Wire("rf_dead_set", 1, "")
	dead := qpFlag("rf_dead", "a transmit ring write of the QP was refused: its records complete WR_FLUSH_ERR and publish no further", C(1, 0), And(rfHot, Rep(deadSet, CardTxQPs)))
	m.Assign(deadSet, And(rfNew, Not(BitAt(dead, rfQP))))
	rfDrop := m.Wire("rf_drop", 1, "the refused write's QP no longer exists: it is only dead")
	m.Drive(rfV, big.NewInt(0), Or(deadSet, And(rfV, Not(rfStore), Not(rfDrop))), nil)
	m.Drive(rfQP, nil, iQP, errSeen)
	rfCut := m.Reg("rf_cut", 32, nil, iCut, errSeen, "")
	// The first refused byte, a cycle later (rf_new): burst k > 0 starts
	// at a burst boundary (dma_wr's m_done_err_burst).
	rfWAddr := m.Reg("rf_write_addr", 64, nil, iAddr, errSeen, "the refused write's address")
	BL := log2(DMAMaxBurst(W))
	// A request is at most 64 KiB: k bursts are added to address bits
	// 16:BL, and a carry out of them increments the bits above.
	rfLow := m.WireOf("rf_addr_low", Add(zext(Bits(rfWAddr, 16, BL), 18-BL), zext(ebQ, 18-BL)), "")
	rfHigh := m.WireOf("rf_addr_high", Sel(Bit(rfLow, 17-BL), IncBits(rfWAddr, 63, 17), Bits(rfWAddr, 63, 17)), "")
	rfAddr := m.Reg("rf_addr", 64, nil, Sel(RedOr(ebQ), Cat(rfHigh, Bits(rfLow, 16-BL, 0), C(BL, 0)), rfWAddr), rfNew, "")
	m.Assign(rfStAddr, rfQP)
	// The state read (qp_state_f at rf_qp) is a cycle old, so it is
	// valid from the cycle after rf_new and only when no state was written
	// the cycle before (a write and a read of one address in a cycle
	// read the old state); the record is stored when no state, Terminate
	// record or scheduler entry is written this cycle. A QP in error is
	// stored only while the engine is not on it: a Terminate turn
	// would take the record it read before (term_sent).
	stWrQ := m.Reg("rf_state_wr_q", 1, big.NewInt(0), qpSt.busy, nil, "a state was written last cycle: qp_state_f may be stale")
	rfFresh := m.WireOf("rf_state_fresh", And(rfV, Not(stWrQ)), "")
	rfLive := m.WireOf("rf_live", And(rfFresh, Eq(qpSt.ext, C(2, txQPLive))), "")
	rfInErr := m.WireOf("rf_in_error", And(rfFresh, Eq(qpSt.ext, C(2, txQPError))), "")
	engOn := m.WireOf("rf_engine_on", And(Or(pop, Not(sIdle)), Or(Eq(cur, rfQP), Eq(popped, rfQP))), "the engine serves, or takes, the refused write's QP")
	rfQueued := m.WireOf("rf_queued", isQueued("qrfq", rfQP), "")
	rfGo := m.WireOf("rf_go", And(Or(rfLive, And(rfInErr, Not(engOn))), Not(qpSt.busy), Not(evSet), Or(rfQueued, Not(Or(requeue, dbEnq, errEnq)))), "")
	m.Assign(rfStore, rfGo)
	m.Assign(rfEnq, And(rfGo, Not(rfQueued)))
	m.Assign(rfDrop, And(rfFresh, Not(Eq(qpSt.ext, C(2, txQPLive))), Not(Eq(qpSt.ext, C(2, txQPError)))))
	m.Assign(rfRec, Cat(C(1, 1), C(1, 1), zext(Cat(rfInErr, rfAddr, rfCut), 8*cardTxReadReqBytes), C(8*untaggedHdr+32, 0)))
	hDead := m.WireOf("rf_head_dead", And(BitAt(dead, m.WireOf("qrfh_qp", h[2], "")), Not(h[17])), "the head record is a dead QP's (not its silent record, which moves TXS_PI to the cut)")
	cOut := m.WireOf("cpl_load", And(oFree, rdoFree, RedOr(cq.Count), Not(rfBusy), headDone), "")
	m.Drive(rdoV, big.NewInt(0), Or(And(cOut, h[11]), And(rdoV, Not(rdoReady))), nil)
	m.Assign(rdoValid, rdoV)
	m.Assign(rdoQPN, gate(rdoV, m.Reg("rreq_done_qpn_q", QB, big.NewInt(0), h[2], And(cOut, h[11]), "")))
	m.Assign(cqPop, zext(cOut, ccw))
	m.Drive(dn, big.NewInt(0), Sub(Add(dn, zext(doneLast, ccw)), zext(And(cOut, Not(h[8])), ccw)), nil)
	m.Drive(oV, big.NewInt(0), Or(cOut, And(oV, Not(cplReady))), nil)
	m.Assign(cplValid, oV)
	// A dead QP's record that completes a WQE completes it WR_FLUSH_ERR,
	// as the model's flush does every WQE not done at the refusal.
	m.Assign(cplCQE, m.Reg("cpl_cqe_q", 1, big.NewInt(0), Or(h[0], And(hDead, h[16])), cOut, ""))
	m.Assign(cplKeep, m.Reg("cpl_keep_txs_q", 1, big.NewInt(0), hDead, cOut, ""))
	m.Assign(cplCQ, m.Reg("cpl_cq_q", QB, big.NewInt(0), h[1], cOut, ""))
	cplQPNq := m.Reg("cpl_qpn_q", QB, big.NewInt(0), h[2], cOut, "")
	m.Assign(cplQPN, cplQPNq)
	m.Assign(cplWRID, m.Reg("cpl_wr_id_q", 64, big.NewInt(0), h[3], cOut, ""))
	m.Assign(cplOp, m.Reg("cpl_op_q", 8, big.NewInt(0), zext(h[4], 8), cOut, ""))
	hBlame := m.WireOf("cpl_blamed", RedOr(h[13]), "the peer's Terminate blames the WQE")
	m.Assign(cplStatus, m.Reg("cpl_status_q", 8, big.NewInt(0), Sel(hDead, C(8, uint64(cardTxStatFlush)), Sel(hBlame, remoteStatus(h[13]), Sel(h[9], C(8, uint64(cardTxStatFlush)), Sel(h[14], C(8, cardTxStatQPOp), Sel(h[10], Sel(Eq(h[4], C(3, 5)), C(8, cardTxStatMWBind), C(8, cardTxStatProt)), C(8, 0)))))), cOut,
		"the blaming Terminate's status, WR_FLUSH_ERR, LOC_QP_OP_ERR, LOC_PROT_ERR (MW_BIND_ERR for a bind) or SUCCESS"))
	m.Assign(cplTermCause, m.Reg("cpl_term_cause_q", 16, big.NewInt(0), gate(Not(hDead), h[13]), cOut, ""))
	m.Assign(cplLen, m.Reg("cpl_len_q", 32, big.NewInt(0), gate(Not(hDead), h[5]), cOut, ""))
	m.Assign(cplSQCI, m.Reg("cpl_sq_ci_q", 16, big.NewInt(0), h[6], cOut, ""))
	// While a cut waits for its write-back's record, a record of its QP
	// (an aborted FPDU's progress record) publishes no further than the cut.
	abDiff := m.WireOf("ab_diff", Sub(abCut, h[7]), "negative: the record is past the cut")
	unused = append(unused, Bits(abDiff, 30, 0))
	abBeyond := m.WireOf("ab_beyond", And(abV, Eq(h[2], abQP), Bit(abDiff, 31)), "the head record would publish aborted FPDUs")
	m.Assign(cplTXSPI, m.Reg("cpl_txs_pi_q", 32, big.NewInt(0), Sel(abBeyond, abCut, h[7]), cOut, ""))
	m.Drive(abV, big.NewInt(0), Or(abSet, And(abV, Not(And(cOut, h[15])))), nil)
	m.Assign(cplTerm, m.Reg("cpl_term_q", 1, big.NewInt(0), h[12], cOut, ""))
	// Read Responses a QP owes (card_stat asks, for CLOSE): a record in
	// the pool, the engine answering one, or a Read Response's record
	// (the one that gives its IRD entry back) not yet taken by card_stat.
	owQ := m.Input("s_owed_qpn", QB, "card_stat's question (m_owed_qpn): does this QP owe a Read Response?")
	oRrd := m.Reg("cpl_rrd_q", 1, big.NewInt(0), h[11], cOut, "the record out is a Read Response's last")
	owed := []Expr{pool.holds(owQ), And(rsp, Eq(cur, owQ), Not(Or(sIdle, sPop, sCtx, sDecide))), And(oV, oRrd, Eq(cplQPNq, owQ))}
	for i := 0; i < CardTxCplDepth; i++ {
		owed = append(owed, And(Lt(C(cq.Count.W, uint64(i)), cq.Count), cq.Fields[i][11], Eq(cq.Fields[i][2], owQ)))
	}
	m.Assign(m.Output("m_owed", 1, "s_owed_qpn owes a Read Response"), RedOrParts(owed))
	dmaErr := Or(And(doneGo, doneErr), And(rdValid, rdErr))
	m.Assign(dmaErrOut, m.Reg("dma_err_q", 1, big.NewInt(0), C(1, 1), dmaErr, ""))

	// --- write-back, requeue, state machine ---
	isSend := m.WireOf("op_is_send", Not(Or(opWrite, opRead, opMop, retFl, prot, tm)), "a Send that was sent takes an MSN")
	started := m.WireOf("read_started", And(readSent, Not(retFl)), "a Read Request went out")
	rissGo := m.WireOf("rd_issue_go", And(sWB, started), "")
	m.Assign(rissV, rissGo)
	m.Assign(rissQP, gate(rissGo, cur))
	m.Assign(rissN, gate(rissGo, Add(Bits(cRMSN, 15, 0), C(16, 1))))
	m.Assign(rissSTag, gate(rissGo, sgeKey))
	m.Assign(rissTO, gate(rissGo, sgeAddr))
	m.Assign(rissLen, gate(rissGo, sgeLen))
	// A flush moves the first block not started along with SQ_CI once it
	// has passed the WQEs that were started.
	newNext := m.WireOf("new_sq_next", Sel(Or(And(fl, Eq(cSQCI, cNext)), dropAll), newSQCI, Sel(Or(retFl, protLate, gfR), cNext, Add(cNext, bbsAdv))), "")
	newWk := m.WireOf("new_walk", Sel(endReads, C(1, 0), Sel(Or(ret, wk), And(Ne(newSQCI, cNext), Not(And(wk, opRead))), cWk)), "")
	newOrq := m.WireOf("new_orq", Sel(endReads, C(5, 0), Sel(ret, Sub(cOrq, C(5, 1)), Sel(started, incr(cOrq), cOrq))), "flushed Reads are outstanding no more")
	newRUsed := m.WireOf("new_rdone_used", Sel(endReads, cRC, Sel(And(ret, Not(rfl)), incr(cRUsed), cRUsed)), "a Read flushed by the stream end takes no Read done")
	newEndFl := m.WireOf("new_end_flush", Sel(endReads, C(5, 0), Sel(rfl, Sub(cEndFl, C(5, 1)), cEndFl)), "")
	newRRUsed := m.WireOf("new_rreq_used", Sel(rsp, incr(cRRUsed), cRRUsed), "")
	m.Assign(engWBData, Cat(cEndSeen, newEndFl, newWk, newRRUsed, newRUsed, newOrq, newNext, Add(cRMSN, zext(started, 32)), Add(cMSN, zext(isSend, 32)), wbTXSPI, newSQCI))
	m.Assign(sqWB, Cat(newNext, newSQCI))
	m.Drive(cMSN, nil, Bits(engRd, 79, 48), ctxLoad)
	more := m.WireOf("more_work", Or(Ne(cRR, newRRUsed), prot, retFault, gfR, Sel(Or(fl, prot, rspFault, retFault, inErr), Ne(newSQCI, cPI),
		Or(Ne(newNext, cPI), And(Ne(newOrq, C(5, 0)), Or(Ne(cRC, newRUsed), Ne(newEndFl, C(5, 0)))), And(newWk, Ne(newSQCI, newNext))))), "")
	m.Assign(bdbEng, txsBadGo)
	m.Assign(requeue, And(Or(And(sWB, more), gateHold, pfWait, And(txsBad, Not(txsBadGo))), Not(isQueued("qeng", cur))))
	// Once the WQE is in the buffer: its payload words to ddp_tx, or the
	// SGEs checked first (at 512 bits after the buffer's last half word).
	decideFirst := C(5, txFirst)
	if L == 64 {
		decideFirst = Sel(early, C(5, txHdr), C(5, txFirst)) // the block is in: txHdr
	}
	mopNow := And(opMop, Not(retFl))
	feedNow := Sel(mopNow, C(5, txMop), Sel(fromBuf, C(5, txFeed), C(5, txChk)))
	var chkSkipOK Expr = C(1, 0)
	if W == 512 {
		// From registers: the slot's verdict (pa_skip) and the WQE's mode.
		chkSkipOK = m.WireOf("chk_skip_ok", And(pa.skip, Not(retFl), Not(abV)), "txHdr: the WQE has its check's verdict")
		slotVerdict.assign(m, pa.verdict)
		feedNow = Sel(mopNow, C(5, txMop), Sel(Or(fromBuf, chkSkipOK), C(5, txFeed), C(5, txChk)))
	}
	onChip := m.WireOf("wqe_on_chip", Or(oneBB, rest2), "the WQE's blocks are on chip by txHdr's end: one block, or two read ahead")
	hdrOn := m.WireOf("hdr_on", Not(Or(wfNow, waitRd, malNow, And(retFl, Not(sentFull)))), "txHdr hands the WQE on (hdr_next): no fault, wait, malformed header or completion-only fetch")
	if W == 512 {
		m.Assign(skipGo, And(sHdr, chkSkipOK, hdrOn, onChip))
	}
	feedNext, hdrNext := feedNow, Sel(oneBB, feedNow, Sel(rest2, C(5, txRest), C(5, txFetch)))
	if L == 64 {
		// At 512 bits a WQE of one block, or two read ahead, is in the
		// buffer by txHdr's end (above): no txRest, no txFlush.
		feedNext = Sel(mopNow, C(5, txMop), C(5, txFlush))
		hdrNext = Sel(onChip, feedNow, C(5, txFetch))
	}
	// A WQE whose payload words come from the buffer and whose blocks are
	// all on chip offers its descriptor to ddp_tx from txHdr on: ddp_tx's
	// first beat is formed four cycles after it takes one, so the message
	// leaves a cycle sooner.
	descEarlyV := And(sHdr, hdrOn, Not(retFl), fromBuf, Not(opMop), onChip)
	if W == 512 {
		// So does a WQE whose check is skipped: its length is SGE 0's.
		descEarlyV = Or(descEarlyV, skipGo)
	}
	m.Assign(descEarly, descEarlyV)
	// The write-back follows the cycle the message's last beat enters
	// mpa_tx, or its last FPDU's first beat for a message fed from the
	// buffer or gathered without a fault (its FPDU's TXS_PI is in f_off by
	// then), but after a payload read fault, whose cut is found a cycle
	// later. The feed's last cycle goes straight to txWB when txDrain
	// would let the message go at once: a payload read fault is known by
	// then (the packer takes a beat a cycle before it hands it on).
	// From registers only: the feed's last cycle is deep enough.
	m.Assign(skipOK, And(Not(gfR), Or(msgDone, gHdr)))
	m.Assign(drainSkip, And(feedEnd, skipOK))
	m.Assign(drainEarly, And(Or(sDrain, drainSkip), gHdr, Not(msgDone), Not(gfR)))
	drainGo := m.WireOf("drain_go", Or(msgDone, And(engLastIn, Not(gfR)), drainEarly), "the message's last segment is in mpa_tx (but for its tail)")
	m.Assign(aheadRd, And(Or(And(sDrain, drainGo), drainSkip), Not(gfR), headOK))
	// txMop: the operation is offered until taken, then awaited.
	mopSent := m.RegDecl("mop_sent", 1, "placement took the operation")
	m.Drive(mopSent, big.NewInt(0), And(sMop, Or(mopSent, mopR)), nil)
	mv := m.WireOf("mop_offer", And(sMop, Not(mopSent)), "")
	m.Assign(mopV, mv)
	m.Assign(mopBind, gate(mv, Eq(hOpcode, C(8, 5))))
	m.Assign(mopSTag, gate(mv, hInv))
	m.Assign(mopPD, gate(mv, cPD))
	m.Assign(mopQP, gate(mv, zext(cur, 32)))
	m.Assign(mopMR, gate(mv, Bits(bindW, 31, 0)))
	m.Assign(mopAddr, gate(mv, Bits(sge, 63, 0)))
	m.Assign(mopLen, gate(mv, Bits(sge, 127, 64)))
	m.Assign(mopAcc, gate(mv, Bits(bindW, 35, 32)))
	m.Assign(mopT2, gate(mv, Bit(bindW, 40)))
	unused = append(unused, Bits(bindW, 39, 36), Bits(bindW, 63, 41))
	m.Drive(mopFail, big.NewInt(0), Sel(goAny, C(1, 0), Not(mopOK)), Or(goAny, And(sMop, mopDone)))
	next := Sel(sIdle, Sel(pop, C(5, txPop), C(5, txIdle)),
		Sel(sPop, C(5, txCtx),
			Sel(sCtx, C(5, txDecide),
				Sel(sDecide, Sel(doTerm, Sel(tRecv, Sel(tSilent, C(5, txFault), C(5, txWB)), C(5, txFeed)), Sel(doRsp, C(5, txRsp), Sel(goAny, decideFirst, Sel(evWait, C(5, txDecide), C(5, txIdle))))),
					Sel(sFirst, Sel(firstDone, C(5, txHdr), C(5, txFirst)),
						Sel(sHdr, Sel(hdrOn, hdrNext, Sel(wfNow, C(5, txFault), Sel(waitRd, C(5, txIdle), C(5, txWB)))),
							Sel(sFetch, Sel(And(rdGo, Eq(fLeft, fN)), C(5, txRest), C(5, txFetch)),
								Sel(sRest, Sel(restDone, Sel(wfNow, C(5, txFault), feedNext), C(5, txRest)),
									Sel(sFlush, Sel(fromBuf, C(5, txFeed), C(5, txChk)),
										Sel(sFeed, Sel(feedEnd, Sel(drainSkip, C(5, txWB), C(5, txDrain)), C(5, txFeed)),
											Sel(sDrain, Sel(drainGo, Sel(gfR, C(5, txFault), C(5, txWB)), C(5, txDrain)),
												Sel(sChk, Sel(ga.chkDone, Sel(Or(ga.faultNow, retFl), C(5, txWB), Sel(abV, C(5, txChk), C(5, txFeed))), C(5, txChk)),
													C(5, txIdle)))))))))))))
	rspNext := C(5, txChk)
	if W == 64 {
		rspNext = C(5, txRspSge)
	}
	next = Sel(sRsp, C(5, txRspLd), Sel(sRspLd, Sel(rspDrop, C(5, txWB), rspNext), Sel(sRspSge, C(5, txChk), next)))
	next = Sel(sMop, Sel(mopDone, C(5, txWB), C(5, txMop)), next)
	next = Sel(sWB, Sel(pop, Sel(quick, C(5, txDecide), C(5, txPop)), C(5, txIdle)), next)
	next = Sel(stIs(txFault), Sel(Or(evV, gfPend), C(5, txFault), C(5, txWB)), next)
	m.Drive(st, big.NewInt(txIdle), next, nil)

	// --- instances ---
	m.Instantiate("u_rd", drd, Conn{"clk", clk}, Conn{"rst", rst},
		Conn{"s_req_valid", rdReqValid}, Conn{"s_req_ready", rdReqReady}, Conn{"s_req_addr", rdAddr},
		Conn{"s_req_len", rdLen}, Conn{"s_req_tag", rdReqTag},
		Conn{"m_axis_tdata", rdData}, Conn{"m_axis_tkeep", rdKeep}, Conn{"m_axis_tvalid", rdValidAll},
		Conn{"m_axis_tready", Or(fromDMA, ga.rdTake, pf.beat, pa.beat)}, Conn{"m_axis_tlast", rdLast}, Conn{"m_axis_tuser_tag", rdTag},
		Conn{"m_axis_tuser_err", rdErr}, Conn{"m_axis_tuser_berr", rdBErr})
	m.Instantiate("u_ddp", ddp, Conn{"clk", clk}, Conn{"rst", rst},
		Conn{"s_desc_valid", descV}, Conn{"s_desc_ready", descReady}, Conn{"s_desc_tagged", opWrite},
		Conn{"s_desc_rdmap", Cat(rv, C(2, 0), opLo)}, Conn{"s_desc_dv", rv}, Conn{"s_desc_stag", dStag},
		Conn{"s_desc_to", hRAddr}, Conn{"s_desc_qn", Sel(tm, C(32, 2), zext(opRead, 32))}, Conn{"s_desc_msn", Sel(tm, C(32, 1), Sel(opRead, cRMSN, cMSN))},
		Conn{"s_desc_len", msgLen}, Conn{"s_desc_mulpdu", cMULPDU}, Conn{"s_desc_user", C(16, 0)},
		Conn{"s_axis_tdata", Sel(fromBuf, fqq.Fields[0][0], ga.outData)}, Conn{"s_axis_tvalid", pValid}, Conn{"s_axis_tready", pReady},
		Conn{"s_axis_tlast", pLast},
		Conn{"m_axis_tdata", ddpData}, Conn{"m_axis_tkeep", ddpKeep}, Conn{"m_axis_tvalid", ddpValid},
		Conn{"m_axis_tready", And(mpaReady, hGate)}, Conn{"m_axis_tlast", ddpLast},
		Conn{"m_axis_tuser_len", ddpLen}, Conn{"m_axis_tuser_last", ddpMsgLast}, Conn{"m_axis_tuser_user", ddpUser})
	m.Instantiate("u_mpa", mpa, Conn{"clk", clk}, Conn{"rst", rst},
		Conn{"s_axis_tdata", ddpData}, Conn{"s_axis_tvalid", And(ddpValid, hGate)}, Conn{"s_axis_tready", mpaReady},
		Conn{"s_axis_tlast", ddpLast}, Conn{"s_offset", fOff}, Conn{"s_ulpdu_len", ddpLen},
		Conn{"s_markers", cMk}, Conn{"s_crc", cCRC},
		Conn{"m_axis_tdata", mpaData}, Conn{"m_axis_tkeep", mpaKeep}, Conn{"m_axis_tvalid", mpaValid},
		Conn{"m_axis_tready", Or(And(have, wsReady, needIn), dropH)}, Conn{"m_axis_tlast", mpaLast}, Conn{"m_axis_tuser", mpaUser})
	wrConns := []Conn{{"clk", clk}, {"rst", rst},
		{"s_req_valid", wrReqValid}, {"s_req_ready", wrReqReady}, {"s_req_addr", wrAddrFull},
		{"s_req_len", Sub(wrLen, C(16, 1))}, {"s_req_tag", Cat(wrSeq, wrEnd, And(ha[5], wrEnd))},
		{"s_axis_tdata", outData}, {"s_axis_tvalid", outValid}, {"s_axis_tready", wsReady},
		{"m_done_valid", doneV}, {"m_done_ready", doneReady}, {"m_done_tag", doneTag}, {"m_done_err", doneErr}, {"m_done_err_burst", doneEB}}
	var rdConns []Conn
	for _, sub := range []*Module{drd, dwr} {
		for _, p := range sub.Ports {
			s := axi[p.Name]
			if s == nil {
				continue
			}
			c := Conn{p.Name, s}
			if s.Dir == Out {
				wv := m.Wire("w_"+p.Name, s.W, "")
				m.Assign(s, wv)
				c.Expr = wv
			}
			if sub == drd {
				rdConns = append(rdConns, c)
			} else {
				wrConns = append(wrConns, c)
			}
		}
	}
	m.Instances[0].Conns = append(m.Instances[0].Conns, rdConns...)
	m.Instantiate("u_wr", dwr, wrConns...)
	m.WireOf("unused_bits", RedOr(Cat(unused...)), "bits no logic reads (keeps lint quiet on purpose)")
	return m, m.Validate()
}
