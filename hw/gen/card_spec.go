package gen

import "fmt"

// The card's host interface: its BAR0 register map, the formats of the
// records it exchanges with the driver through host memory, and the enums
// of their fields. This file is the one definition; cmd/iwgen prints it as
// Go (host/driver/regs), Verilog and VHDL constants (hw/rtl/regmap_card*)
// and the reference (docs/card.md).

// Card limits and sizes (the RTL, the card model and the driver agree on
// them through the generated constants).
const (
	CardVendorID   = 0x10EE // the PCIe hard block's vendor, as an XDMA bridge presents the card
	CardDeviceID   = 0x1E1A
	CardVersion    = 0x0001_0002 // major 1, minor 2 (CQ_ERROR; minor 1: CMD_STATUS)
	CardAddrBits   = 18          // BAR0 is 256 KiB
	CardMaxQP      = 1024        // QP numbers 1..1023 (0 means "any QP" in the STag table)
	CardMaxCQ      = 1024        // CQ numbers 0..1023
	CardSTags      = 4096        // STag table entries (the placement engine's table)
	CardBB         = 64          // bytes per work-queue basic block
	CardMaxWQEBBs  = 8           // a WQE spans 1..8 basic blocks
	CardWQEHdr     = 32          // bytes of WQE header before the SGEs or inline data
	CardSGE        = 16          // bytes per scatter/gather element
	CardMaxSGE     = (CardMaxWQEBBs*CardBB - CardWQEHdr) / CardSGE
	CardMaxInline  = CardMaxWQEBBs*CardBB - CardWQEHdr
	CardPushInline = CardBB - CardWQEHdr // inline bytes of a WQE pushed through BAR0
	CardMaxRd      = 16                  // ORD and IRD limit per QP
	CardCQE        = 32                  // bytes per completion
	CardEQE        = 16                  // bytes per event
	CardQPStatus   = 32                  // bytes per QP status record
	CardMinRingLog = 12                  // stream rings: 4 KiB ..
	CardMaxRingLog = 24                  // .. 16 MiB
	CardMaxQueLog  = 16                  // SQ/RQ up to 2^16 basic blocks; CQ/EQ up to 2^16 entries

	CardPlacementBase = 0x0100  // the placement engine's register window
	CardCQDBBase      = 0x10000 // CQ doorbells
	CardCQDBStride    = 8
	CardQPDBBase      = 0x20000 // QP doorbells and push windows
	CardQPDBStride    = 128
	CardQPPushOff     = 0x40 // push window inside a QP's doorbell element
)

func init() {
	if CardMaxSGE != 30 || CardMaxInline != 480 {
		panic(fmt.Sprintf("gen: card WQE sizes changed: %d SGEs, %d inline", CardMaxSGE, CardMaxInline))
	}
}

// CardRegMap is BAR0 of the card.
func CardRegMap() *RegMap {
	f := func(name string, lo, w int, doc string) RegField {
		return RegField{Name: name, Lo: lo, Width: w, Doc: doc}
	}
	lo := func(name string, off uint32, doc string) Reg { return Reg{Name: name, Offset: off, Doc: doc} }
	ro := func(name string, off uint32, doc string) Reg {
		return Reg{Name: name, Offset: off, Doc: doc, ReadOnly: true}
	}
	return &RegMap{
		Name: "card",
		Doc: []string{
			"BAR0 of the openiwarp card (hw/rtl/iwcard_w*): 32-bit registers on an AXI4-Lite port; a 64-bit quantity is two registers, low word first. Setup registers are staging registers followed by a command register that acts on the staged values in one cycle (as the STag table does), so a half-written context is never used.",
			"The driver keeps every queue in host memory: per QP a send queue (SQ) and a receive queue (RQ) of work-queue entries in 64-byte basic blocks, a transmit stream ring the card fills with FPDU octets and a receive stream ring the host fills with TCP payload; completion queues (CQs) the card writes with an owner bit; one event queue (EQ); and a table of QP status records the card writes when its indices move. Producer and consumer indices are free-running counters (the ring position is the counter modulo the ring size).",
			"Doorbells: per CQ an 8-byte element at CQ_DB (consumer index and arming), per QP a 128-byte element at QP_DB (SQ and RQ producer indices, stream ring indices, stream arming, and a 64-byte push window through which a one-block WQE reaches the card together with its doorbell, without a DMA read).",
			"Events and interrupts: completion notifications of armed CQs, stream notifications of armed QPs, Terminates, stream ends, QP errors and DMA faults are written to the EQ; while the EQ is armed the card raises its interrupt vector for the next event, at most once per IRQ_MODERATION cycles.",
		},
		AddrBits: CardAddrBits,
		Regs: []Reg{
			{Name: "ID", ReadOnly: true, Offset: 0x0000, Doc: "Identification (read only): the PCI IDs the card presents.",
				Fields: []RegField{f("VENDOR", 0, 16, fmt.Sprintf("vendor ID (%#04x)", CardVendorID)), f("DEVICE", 16, 16, fmt.Sprintf("device ID (%#04x)", CardDeviceID))}},
			{Name: "VERSION", ReadOnly: true, Offset: 0x0004, Doc: "Host interface version (read only): a driver refuses a major version it does not know.",
				Fields: []RegField{f("MINOR", 0, 16, "minor version (compatible additions)"), f("MAJOR", 16, 16, "major version")}},
			{Name: "CAPS_DATAPATH", ReadOnly: true, Offset: 0x0008, Doc: "Data path capabilities (read only).",
				Fields: []RegField{f("WIDTH_BYTES", 0, 8, "data path width in bytes (8 or 64)"), f("MAX_SGE", 8, 8, "SGEs per WQE"), f("MAX_WQE_BBS", 16, 4, "basic blocks per WQE"), f("MAX_RD", 24, 8, "ORD and IRD limit per QP")}},
			{Name: "CAPS_OBJECTS", ReadOnly: true, Offset: 0x000C, Doc: "Object counts (read only), as log2.",
				Fields: []RegField{f("LOG_QP", 0, 5, "QP numbers"), f("LOG_CQ", 8, 5, "CQ numbers"), f("LOG_STAG", 16, 5, "STag table entries"), f("LOG_QUEUE", 24, 5, "deepest SQ, RQ (in basic blocks), CQ or EQ")}},
			{Name: "CAPS_INLINE", ReadOnly: true, Offset: 0x0010, Doc: "Inline data limits (read only).",
				Fields: []RegField{f("MAX_INLINE", 0, 16, "inline bytes of a WQE"), f("PUSH_INLINE", 16, 16, "inline bytes of a WQE pushed through BAR0")}},
			{Name: "CAPS_RING", ReadOnly: true, Offset: 0x0014, Doc: "Stream ring sizes (read only), as log2 of bytes.",
				Fields: []RegField{f("MIN_LOG", 0, 5, "smallest stream ring"), f("MAX_LOG", 8, 5, "largest stream ring")}},
			{Name: "SCRATCH", Offset: 0x0018, Doc: "Read/write register with no effect (bus checks)."},
			{Name: "CTRL", Offset: 0x0040, Doc: "Card control (zero after reset).",
				Fields: []RegField{f("ENABLE", 0, 1, "1: the card serves doorbells; 0: doorbells are recorded and served once enabled")}},
			{Name: "STATUS", ReadOnly: true, Offset: 0x0044, Doc: "Card status (read only).",
				Fields: []RegField{f("INIT_DONE", 0, 1, "the context and STag tables are cleared after reset"), f("FATAL", 1, 1, "a DMA fault on the EQ or a status record stopped the card (see DMA_FAULT_*): it writes and reads nothing more and hands no command to its engines (CMD_STATUS still gives verdicts) until RESET")}},
			{Name: "RESET", Offset: 0x0048, Command: true, Doc: "Resets every context, the STag table and the indices (the value written is ignored); STATUS.INIT_DONE falls until it is done."},
			ro("DMA_FAULT_ADDR_LO", 0x0050, "Address of the last DMA that got an error response, bits 31:0 (read only). Once a fault stops the card (STATUS.FATAL), DMA_FAULT_* keep that fault."),
			ro("DMA_FAULT_ADDR_HI", 0x0054, "Address of the last DMA that got an error response, bits 63:32 (read only)."),
			{Name: "DMA_FAULT_INFO", ReadOnly: true, Offset: 0x0058, Doc: "What the last faulted DMA was (read only).",
				Fields: []RegField{f("QPN", 0, 16, "QP it served, 0 for the card's own queues"), f("RESP", 16, 2, "AXI response (2 SLVERR, 3 DECERR)"), f("WRITE", 18, 1, "1: a write"), f("COUNT", 24, 8, "faults seen, saturating")}},
			{Name: "CMD_STATUS", ReadOnly: true, Offset: 0x005C, Doc: "Verdict of the commands (read only). A write to QP_CMD, CQ_CMD or EQ_CFG reaches a board as a posted PCIe write, whose AXI response never gets back to the driver, so the card records each command's verdict here. SEQ counts the commands decided since reset (RESET sets the register to 0): a driver that counts its own commands reads CMD_STATUS until SEQ reaches its count, and REFUSED and WHY are then its last command's. A refused command changes nothing.",
				Fields: []RegField{f("SEQ", 0, 16, "commands decided (QP_CMD and CQ_CMD writes of whole words, EQ_CFG writes), modulo 2^16"), f("REFUSED", 16, 1, "the last command was refused"), f("WHY", 24, 8, "why (CMD_WHY), 0 when taken")}},
			lo("EQ_BASE_LO", 0x0080, "EQ ring address, bits 31:0 (16-byte entries, aligned to the ring size)."),
			lo("EQ_BASE_HI", 0x0084, "EQ ring address, bits 63:32."),
			{Name: "EQ_CFG", Offset: 0x0088, Strobe: true, Doc: "EQ size and interrupt vector; writing it with ENABLE resets the EQ's producer index.",
				Fields: []RegField{f("LOG_SIZE", 0, 5, "log2 of the entries"), f("VECTOR", 8, 8, "interrupt vector raised for events"), f("ENABLE", 31, 1, "1: events are written")}},
			{Name: "EQ_DB", Offset: 0x008C, Command: true, Doc: "EQ doorbell: the driver's consumer index, and arming.",
				Fields: []RegField{f("CI", 0, 24, "entries consumed (free running, modulo 2^24)"), f("ARM", 31, 1, "raise the vector for the next event (or at once if one is pending past CI)")}},
			{Name: "IRQ_MODERATION", Offset: 0x0090, Doc: "Least number of card cycles between two interrupts of one vector (0: none).",
				Fields: []RegField{f("CYCLES", 0, 24, "cycles")}},
			lo("QPSTAT_BASE_LO", 0x0094, "Address of the QP status table, bits 31:0 (32 bytes per QP number, 32-byte aligned)."),
			lo("QPSTAT_BASE_HI", 0x0098, "Address of the QP status table, bits 63:32."),
			{Name: "CQ_NUM", Offset: 0x00C0, Doc: "CQ that CQ_CMD acts on.",
				Fields: []RegField{f("CQN", 0, 16, "CQ number")}},
			lo("CQ_BASE_LO", 0x00C4, "CQ ring address, bits 31:0 (32-byte entries, aligned to the ring size)."),
			lo("CQ_BASE_HI", 0x00C8, "CQ ring address, bits 63:32."),
			{Name: "CQ_CFG", Offset: 0x00CC, Doc: "CQ size.",
				Fields: []RegField{f("LOG_SIZE", 0, 5, "log2 of the entries")}},
			{Name: "CQ_CMD", Offset: 0x00D0, Command: true, Doc: "Creates or destroys CQ CQ_NUM.",
				Fields: []RegField{f("OP", 0, 4, "CQ_OP value")}},
			{Name: "QP_NUM", Offset: 0x0200, Doc: "QP that QP_CMD acts on.",
				Fields: []RegField{f("QPN", 0, 16, "QP number, 1 or more")}},
			{Name: "QP_PD", Offset: 0x0204, Doc: "Protection domain of the QP.",
				Fields: []RegField{f("PD", 0, 32, "protection domain")}},
			lo("QP_SQ_BASE_LO", 0x0208, "SQ ring address, bits 31:0 (aligned to the ring size)."),
			lo("QP_SQ_BASE_HI", 0x020C, "SQ ring address, bits 63:32."),
			lo("QP_RQ_BASE_LO", 0x0210, "RQ ring address, bits 31:0 (aligned to the ring size)."),
			lo("QP_RQ_BASE_HI", 0x0214, "RQ ring address, bits 63:32."),
			lo("QP_TXS_BASE_LO", 0x0218, "Transmit stream ring address, bits 31:0 (aligned to the ring size)."),
			lo("QP_TXS_BASE_HI", 0x021C, "Transmit stream ring address, bits 63:32."),
			lo("QP_RXS_BASE_LO", 0x0220, "Receive stream ring address, bits 31:0 (aligned to the ring size)."),
			lo("QP_RXS_BASE_HI", 0x0224, "Receive stream ring address, bits 63:32."),
			{Name: "QP_SIZES", Offset: 0x0228, Doc: "Ring sizes, as log2.",
				Fields: []RegField{f("SQ_LOG", 0, 5, "SQ basic blocks"), f("RQ_LOG", 8, 5, "RQ basic blocks"), f("TXS_LOG", 16, 5, "transmit stream ring bytes"), f("RXS_LOG", 24, 5, "receive stream ring bytes")}},
			{Name: "QP_CQS", Offset: 0x022C, Doc: "Completion queues of the QP.",
				Fields: []RegField{f("SEND_CQ", 0, 16, "CQ of send completions"), f("RECV_CQ", 16, 16, "CQ of receive completions")}},
			{Name: "QP_MPA", Offset: 0x0230, Doc: "What MPA startup negotiated for the stream.",
				Fields: []RegField{f("MULPDU", 0, 16, "largest ULPDU the QP sends (DDP segment, 128..64768, and at most half the transmit stream ring: an FPDU goes onto the ring whole)"), f("MARKERS_TX", 16, 1, "insert markers"), f("MARKERS_RX", 17, 1, "expect markers"), f("CRC", 18, 1, "CRC32c on (both directions)"), f("REV0", 19, 1, "the peer speaks MPA revision 0 (draft-01 markers, RDMA Consortium DDP/RDMAP versions)")}},
			{Name: "QP_RD", Offset: 0x0234, Doc: "RDMA Read limits.",
				Fields: []RegField{f("ORD", 0, 8, "RDMA Reads outstanding to the peer (1..MAX_RD)"), f("IRD", 8, 8, "RDMA Reads the peer may have outstanding (1..MAX_RD)")}},
			{Name: "QP_CMD", Offset: 0x0238, Command: true, Doc: "Acts on QP QP_NUM: CREATE takes the staged context (indices from zero, state RTS); CLOSE finishes the posted work, then closes the transmit stream (state CLOSED; on a QP already CLOSING, CLOSED or in ERROR it does nothing, as the card may have put the QP in error meanwhile); ERROR stops the QP, flushes its work and ends its stream without a Terminate; DESTROY frees the QP number once the QP is CLOSED or in ERROR.",
				Fields: []RegField{f("OP", 0, 4, "QP_OP value")}},
		},
		Windows: []RegWindow{{Name: "PLACEMENT", Base: CardPlacementBase, Map: PlacementRegMap(),
			Doc: "The placement engine's STag table and page list (docs/regmap.md), shared by the receive path (remote access) and the transmit path (the lkey checks of gathers and Read Response sinks)."}},
		Arrays: []RegArray{
			{Name: "CQ_DB", Base: CardCQDBBase, Stride: CardCQDBStride, Count: CardMaxCQ, Doc: "CQ doorbell of CQ number n at CQ_DB + 8n.",
				Regs: []Reg{{Name: "CI", Offset: 0, Command: true, Doc: "Consumer index and arming.",
					Fields: []RegField{f("CI", 0, 24, "completions consumed (free running, modulo 2^24)"), f("ARM", 30, 1, "write a CQ_NOTIFY event for the next completion, or at once if one lies past CI"), f("ARM_SOLICITED", 31, 1, "only for a solicited or error completion (with ARM; at once if one lies past CI)")}}}},
			{Name: "QP_DB", Base: CardQPDBBase, Stride: CardQPDBStride, Count: CardMaxQP, Doc: "QP doorbells of QP number n at QP_DB + 128n.",
				Regs: []Reg{
					{Name: "SQ_PI", Offset: 0x00, Command: true, Doc: "SQ producer index.", Fields: []RegField{f("PI", 0, 16, "basic blocks posted (free running, modulo 2^16)")}},
					{Name: "RQ_PI", Offset: 0x04, Command: true, Doc: "RQ producer index.", Fields: []RegField{f("PI", 0, 16, "basic blocks posted (free running, modulo 2^16)")}},
					{Name: "TXS_CI", Offset: 0x08, Command: true, Doc: "Transmit stream bytes the host has handed to TCP (free running, modulo 2^32): that space may be written again."},
					{Name: "RXS_PI", Offset: 0x0C, Command: true, Doc: "Receive stream bytes the host has written into the ring (free running, modulo 2^32)."},
					{Name: "STREAM", Offset: 0x10, Command: true, Doc: "Stream end and stream notifications.",
						Fields: []RegField{f("RX_FIN", 0, 1, "the peer ended its stream after the last byte of RXS_PI"), f("RX_LOST", 1, 1, "the connection was lost (reset or error): the QP goes to error"), f("ARM_TX", 8, 1, "write a TX_DATA event once the card has written transmit stream bytes past TXS_CI"), f("ARM_RX", 9, 1, "write an RX_SPACE event once the card has consumed receive stream bytes")}},
					{Name: "PUSH", Offset: CardQPPushOff, Command: true, Doc: "Push window: 16 words holding one 64-byte basic block (a one-block WQE). Writing its last word (offset 0x7C) posts the block as SQ_PI + 1, and the card takes it from here instead of reading the SQ (the driver writes it into the SQ too, for the record). The card holds one push at a time: the 16 words are written in ascending order, whole words, 0x40 first and 0x7C last, with no other QP's push word in between (a 64-byte write-combined store arrives so). Doorbell and push words are whole words: a write with fewer than four byte strobes is dropped and answered SLVERR. A push broken by another push, written out of order or missing a word still posts its doorbell on its last word, and the card then reads the block from the SQ instead."},
				}},
		},
	}
}

// CardEnums are the named values of the card's record fields.
func CardEnums() []*Enum {
	v := func(name string, val uint64, doc string) EnumValue {
		return EnumValue{Name: name, Value: val, Doc: doc}
	}
	return []*Enum{
		{Name: "DB_KIND", Width: 3, Doc: "Which doorbell register a write hit (the card's doorbell stream; one value per register of the CQ_DB and QP_DB arrays, named ARRAY_REGISTER).", Values: []EnumValue{
			v("CQ_DB_CI", 0, "CQ consumer index and arming"),
			v("QP_DB_SQ_PI", 1, "SQ producer index"),
			v("QP_DB_RQ_PI", 2, "RQ producer index"),
			v("QP_DB_TXS_CI", 3, "transmit stream consumer index"),
			v("QP_DB_RXS_PI", 4, "receive stream producer index"),
			v("QP_DB_STREAM", 5, "stream end and notifications"),
			v("QP_DB_PUSH", 6, "the last word of a push window: a pushed basic block"),
		}},
		{Name: "WQE_OPCODE", Width: 8, Doc: "What a WQE asks for (WQE.OPCODE).", Values: []EnumValue{
			v("SEND", 0, "Send (RDMAP Send, or Send with SE if SOLICITED)"),
			v("SEND_INV", 1, "Send with Invalidate of the peer's STag INV_STAG (with SE if SOLICITED)"),
			v("RDMA_WRITE", 2, "RDMA Write to REMOTE_ADDR at RKEY"),
			v("RDMA_READ", 3, "RDMA Read from REMOTE_ADDR/RKEY into the single SGE (its LENGTH bytes)"),
			v("LOCAL_INV", 4, "invalidate our STag INV_STAG, in send-queue order"),
			v("BIND_MW", 5, "bind the window INV_STAG (its new STag) to the region and range of the BIND record"),
			v("RECV", 8, "receive WQE (RQ only)"),
		}},
		{Name: "WC_OPCODE", Width: 8, Doc: "What completed (CQE.OPCODE).", Values: []EnumValue{
			v("SEND", 0, "Send, Send with Invalidate"), v("RDMA_WRITE", 1, "RDMA Write"), v("RDMA_READ", 2, "RDMA Read"),
			v("RECV", 3, "receive"), v("LOCAL_INV", 4, "Local Invalidate"), v("BIND_MW", 5, "memory-window bind"),
		}},
		{Name: "WC_STATUS", Width: 8, Doc: "Completion status (CQE.STATUS), as ibv_wc_status names them.", Values: []EnumValue{
			v("SUCCESS", 0, "success"),
			v("LOC_LEN_ERR", 1, "an inbound Send was longer than the receive WQE's buffers"),
			v("LOC_PROT_ERR", 2, "an SGE failed the local protection check (lkey, PD, rights, bounds)"),
			v("WR_FLUSH_ERR", 3, "flushed: the QP went to error or closed before the WQE was done"),
			v("REM_ACCESS_ERR", 4, "the peer answered with a protection Terminate"),
			v("REM_OP_ERR", 5, "the peer answered with an operation Terminate"),
			v("REM_INV_REQ_ERR", 6, "the peer answered with an invalid-request Terminate"),
			v("FATAL_ERR", 7, "local catastrophic error, lost connection or DMA fault"),
			v("LOC_QP_OP_ERR", 8, "malformed WQE (opcode, BBS, NSGE, inline length out of range)"),
			v("MW_BIND_ERR", 9, "the window bind was refused (region, rights or range)"),
		}},
		{Name: "EQE_TYPE", Width: 8, Doc: "Event types (EQE.TYPE).", Values: []EnumValue{
			v("CQ_NOTIFY", 1, "an armed CQ got its completion (OBJ: CQN)"),
			v("TX_DATA", 2, "armed: the transmit stream ring holds bytes past TXS_CI (OBJ: QPN)"),
			v("RX_SPACE", 3, "armed: the card consumed receive stream bytes (OBJ: QPN)"),
			v("QP_CLOSED", 4, "CLOSE finished: every WQE completed and the transmit stream ends after the ring's last byte (OBJ: QPN)"),
			v("STREAM_END", 5, "the peer's stream ended at an FPDU boundary (OBJ: QPN)"),
			v("TERM_SENT", 6, "the card found an error, sent a Terminate and put the QP in error (OBJ: QPN; TERM_*: its cause)"),
			v("TERM_RECV", 7, "the peer sent a Terminate; the QP is in error (OBJ: QPN; TERM_*: its cause)"),
			v("QP_ERROR", 8, "the QP went to error for another reason (INFO: QP_ERR_* cause; OBJ: QPN)"),
			v("CQ_OVERRUN", 9, "a CQ was full when a completion arrived; the completion is lost and the QPs on it go to error (OBJ: CQN)"),
			v("DMA_FAULT", 10, "a DMA got an error response (OBJ: QPN or 0; INFO: address bits 31:0); a CQE's raises CQ_ERROR instead"),
			v("CQ_ERROR", 11, "a CQE's DMA write got an error response: the CQ is in error until DESTROY (its slot is lost, no CQE is written to it again, its completions are lost) and the QPs on it go to error (QP_ERROR DMA) (OBJ: CQN; INFO: the CQE's address bits 31:0)"),
		}},
		{Name: "QP_ERR", Width: 8, Doc: "Why a QP went to error for a reason other than a Terminate it sent for the peer's error or received (EQE.INFO of QP_ERROR). For DMA and CQ_OVERRUN, local resource failures, the card also sends a Terminate with RDMAP Local Catastrophic (0/0/0xFF) while its transmit stream is usable (receive-side error matrix, digest §3.7); for the others it sends none.", Values: []EnumValue{
			v("HOST", 1, "the host asked (QP_CMD ERROR)"),
			v("LLP_LOST", 2, "the host reported the connection lost (STREAM.RX_LOST)"),
			v("STREAM_CUT", 3, "the peer's stream ended inside an FPDU"),
			v("DMA", 4, "a DMA of the QP faulted, or a CQE write of a CQ it uses (CQ_ERROR)"),
			v("CQ_OVERRUN", 5, "a CQ of the QP overran"),
			v("BAD_DOORBELL", 6, "a producer index moved past the ring's size"),
		}},
		{Name: "CMD_WHY", Width: 8, Doc: "Why a command was refused (CMD_STATUS.WHY), checked in this order: QP_CMD number, operation, existence, then CREATE's context (ring sizes, alignment, CQs, MULPDU, ORD and IRD) or the state; CQ_CMD number, existence, size, alignment, users; EQ_CFG (with ENABLE) size, alignment.", Values: []EnumValue{
			v("OK", 0, "taken"),
			v("BAD_NUMBER", 1, "QP number 0 or not below MAX_QP, CQ number not below MAX_CQ"),
			v("BAD_OP", 2, "an OP value the command does not know"),
			v("EXISTS", 3, "CREATE of a QP or CQ that exists"),
			v("NO_OBJECT", 4, "the QP or CQ does not exist"),
			v("BAD_STATE", 5, "DESTROY of a QP that is not CLOSED or in ERROR"),
			v("BAD_SIZE", 6, "a ring or queue size out of range"),
			v("BAD_ALIGN", 7, "a ring or queue base not aligned to its size"),
			v("NO_CQ", 8, "CREATE of a QP whose send or receive CQ does not exist"),
			v("BAD_MULPDU", 9, "MULPDU out of range, or above half the transmit stream ring"),
			v("BAD_RD", 10, "ORD or IRD out of range"),
			v("CQ_BUSY", 11, "DESTROY of a CQ that QPs still use"),
		}},
		{Name: "QP_STATE", Width: 4, Doc: "QP state (QP status record STATE).", Values: []EnumValue{
			v("RESET", 0, "not created"), v("RTS", 1, "running"), v("CLOSING", 2, "CLOSE asked, work still outstanding"),
			v("CLOSED", 3, "closed gracefully"), v("ERROR", 4, "in error: work flushed"),
		}},
		{Name: "QP_OP", Width: 4, Doc: "QP_CMD.OP values.", Values: []EnumValue{
			v("CREATE", 1, "create from the staged context"), v("CLOSE", 2, "graceful close"), v("ERROR", 3, "to error"), v("DESTROY", 4, "free the QP number"),
		}},
		{Name: "CQ_OP", Width: 4, Doc: "CQ_CMD.OP values.", Values: []EnumValue{
			v("CREATE", 1, "create from the staged context (producer index 0)"), v("DESTROY", 2, "destroy"),
		}},
	}
}

// CardLayouts are the records in host memory (and the push window).
func CardLayouts() []*Layout {
	f := func(name string, off, lo, w int, doc string) LayoutField {
		return LayoutField{Name: name, Off: off, Lo: lo, Width: w, Doc: doc}
	}
	return []*Layout{
		{Name: "WQE", Size: CardWQEHdr, Doc: fmt.Sprintf("Header of a work-queue entry (SQ and RQ). A WQE spans BBS basic blocks of %d bytes; after the header come NSGE SGEs or, with INLINE, INLINE_LEN bytes of payload. A WQE may wrap: its blocks are at consecutive indices modulo the ring size.", CardBB), Fields: []LayoutField{
			{Name: "OPCODE", Off: 0, Lo: 0, Width: 8, Enum: "WQE_OPCODE", Doc: "what the WQE asks for"},
			f("SIGNALED", 0, 8, 1, "write a CQE on success (errors always complete)"),
			f("SOLICITED", 0, 9, 1, "Send with Solicited Event"),
			f("FENCE", 0, 10, 1, "start only once every earlier RDMA Read has completed"),
			f("INLINE", 0, 11, 1, "the payload follows the header"),
			f("BBS", 0, 16, 4, fmt.Sprintf("basic blocks the WQE occupies (1..%d)", CardMaxWQEBBs)),
			f("NSGE", 0, 24, 5, fmt.Sprintf("SGEs after the header (0..%d)", CardMaxSGE)),
			f("INLINE_LEN", 4, 0, 16, fmt.Sprintf("inline payload bytes (0..%d)", CardMaxInline)),
			f("WR_ID", 8, 0, 64, "the caller's work request ID, returned in the CQE"),
			f("REMOTE_ADDR", 16, 0, 64, "RDMA Write/Read: tagged offset at the peer"),
			f("RKEY", 24, 0, 32, "RDMA Write/Read: the peer's STag"),
			f("INV_STAG", 28, 0, 32, "SEND_INV: the peer's STag; LOCAL_INV: ours; BIND_MW: the window's new STag"),
		}},
		{Name: "SGE", Size: CardSGE, Doc: "Scatter/gather element: LENGTH bytes at tagged offset ADDR of the region whose STag is LKEY.", Fields: []LayoutField{
			f("ADDR", 0, 0, 64, "tagged offset"),
			f("LENGTH", 8, 0, 32, "bytes"),
			f("LKEY", 12, 0, 32, "the local STag"),
		}},
		{Name: "BIND", Size: 32, Doc: "BIND_MW: the record after the WQE header (in place of the SGEs). The bind follows RFC 5040 §6.3 and mem.MW.Bind: MR_STAG names a valid region of the QP's PD with the bind right, ACCESS holds remote rights the region has, and [ADDR, ADDR+LENGTH) lies inside the region; else MW_BIND_ERR. The card then writes the window's entry at INV_STAG's index (its key, the QP's PD, the region's translation of the range, and the QP for a type 2 window) and marks it a window: entries written through STAG_COMMIT are regions, entries written by a bind are windows, which serve remote access only and, type 1, are never invalidated by a peer. A bind over a valid region's entry is refused.", Fields: []LayoutField{
			f("ADDR", 0, 0, 64, "first tagged offset of the window, inside the region"),
			f("LENGTH", 8, 0, 64, "window length in bytes"),
			f("MR_STAG", 16, 0, 32, "the region's STag"),
			f("ACCESS", 20, 0, 4, "rights of the window (STAG_CTRL.ACCESS bits: remote read, remote write)"),
			f("TYPE2", 20, 8, 1, "type 2 window: bound to this QP's stream"),
		}},
		{Name: "CQE", Size: CardCQE, Doc: "Completion, written by the card. OWNER is the last bit written: the card writes 1 on its first pass over the ring, 0 on the second, and so on, so an entry is new when OWNER differs from the value it had on the previous pass (the ring starts zeroed).", Fields: []LayoutField{
			f("WR_ID", 0, 0, 64, "the WQE's WR_ID"),
			f("BYTE_LEN", 8, 0, 32, "bytes received (RECV) or moved"),
			f("QPN", 12, 0, 16, "QP number"),
			{Name: "OPCODE", Off: 12, Lo: 16, Width: 8, Enum: "WC_OPCODE", Doc: "what completed"},
			{Name: "STATUS", Off: 12, Lo: 24, Width: 8, Enum: "WC_STATUS", Doc: "how"},
			f("INV_STAG", 16, 0, 32, "RECV with INVALIDATED: the STag the peer invalidated"),
			f("SOLICITED", 20, 0, 1, "RECV: the Send carried the Solicited Event flag"),
			f("INVALIDATED", 20, 1, 1, "RECV: the Send invalidated INV_STAG"),
			f("TERM_LAYER", 20, 8, 4, "error caused by a Terminate: its layer (RDMAP 0, DDP 1, LLP 2)"),
			f("TERM_TYPE", 20, 12, 4, "its error type"),
			f("TERM_CODE", 20, 16, 8, "its error code"),
			f("OWNER", 28, 31, 1, "owner bit (see above)"),
		}},
		{Name: "EQE", Size: CardEQE, Doc: "Event, written by the card; OWNER as in a CQE.", Fields: []LayoutField{
			{Name: "TYPE", Off: 0, Lo: 0, Width: 8, Enum: "EQE_TYPE", Doc: "what happened"},
			f("TERM_LAYER", 0, 8, 4, "TERM_SENT, TERM_RECV: the Terminate's layer"),
			f("TERM_TYPE", 0, 12, 4, "its error type"),
			f("TERM_CODE", 0, 16, 8, "its error code"),
			f("OBJ", 4, 0, 32, "the QP or CQ number"),
			f("INFO", 8, 0, 32, "type-specific detail"),
			f("OWNER", 12, 31, 1, "owner bit"),
		}},
		{Name: "QPSTAT", Size: CardQPStatus, Doc: "QP status record, written by the card whenever one of its values changes (coalesced: the latest values win).", Fields: []LayoutField{
			f("TXS_PI", 0, 0, 32, "transmit stream bytes the card has written (free running)"),
			f("RXS_CI", 4, 0, 32, "receive stream bytes the card has consumed (free running)"),
			f("SQ_CI", 8, 0, 16, "SQ basic blocks the card is done with: they may be reused"),
			f("RQ_CI", 8, 16, 16, "RQ basic blocks the card is done with"),
			{Name: "STATE", Off: 12, Lo: 0, Width: 4, Enum: "QP_STATE", Doc: "the QP's state"},
			f("TX_CLOSED", 12, 8, 1, "no transmit stream byte follows TXS_PI: the host shuts down its socket's sending side once it has sent them"),
		}},
	}
}

// CardSpec validates the whole specification.
func CardSpec() (*RegMap, []*Layout, []*Enum, error) {
	m, ls, es := CardRegMap(), CardLayouts(), CardEnums()
	if err := m.Validate(); err != nil {
		return nil, nil, nil, err
	}
	for _, l := range ls {
		if err := l.Validate(); err != nil {
			return nil, nil, nil, err
		}
	}
	for _, e := range es {
		if err := e.Validate(); err != nil {
			return nil, nil, nil, err
		}
	}
	return m, ls, es, nil
}
