package cycle

import (
	"fmt"

	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// The card's BAR0 slave (card_regs_w<W>), modelled from the driver's view
// of the register map (host/driver/cardspec), not from the generator.

// AXI responses.
const (
	AXIOkay   = 0
	AXISlvErr = 2
)

// CardRegsDBDepth is the depth of the doorbell FIFO (hw/README.md).
const CardRegsDBDepth = 4

// cardPushWords is the number of 32-bit words of a push window.
const cardPushWords = cs.BB / 4

func fm(shift, mask uint32) uint32 { return mask << shift }

// cardStaging maps each staging register to the bits it stores.
var cardStaging = map[uint32]uint32{
	cs.Scratch: ^uint32(0), cs.Ctrl: fm(cs.CtrlEnableShift, cs.CtrlEnableMask),
	cs.EQBaseLo: ^uint32(0), cs.EQBaseHi: ^uint32(0),
	cs.EQCfg:         fm(cs.EQCfgLogSizeShift, cs.EQCfgLogSizeMask) | fm(cs.EQCfgVectorShift, cs.EQCfgVectorMask) | fm(cs.EQCfgEnableShift, cs.EQCfgEnableMask),
	cs.IRQModeration: fm(cs.IRQModerationCyclesShift, cs.IRQModerationCyclesMask),
	cs.QpstatBaseLo:  ^uint32(0), cs.QpstatBaseHi: ^uint32(0),
	cs.CQNum:    fm(cs.CQNumCQNShift, cs.CQNumCQNMask),
	cs.CQBaseLo: ^uint32(0), cs.CQBaseHi: ^uint32(0),
	cs.CQCfg: fm(cs.CQCfgLogSizeShift, cs.CQCfgLogSizeMask),
	cs.QPNum: fm(cs.QPNumQPNShift, cs.QPNumQPNMask), cs.QPPD: ^uint32(0),
	cs.QPSQBaseLo: ^uint32(0), cs.QPSQBaseHi: ^uint32(0), cs.QPRQBaseLo: ^uint32(0), cs.QPRQBaseHi: ^uint32(0),
	cs.QPTXSBaseLo: ^uint32(0), cs.QPTXSBaseHi: ^uint32(0), cs.QPRXSBaseLo: ^uint32(0), cs.QPRXSBaseHi: ^uint32(0),
	cs.QPSizes: fm(cs.QPSizesSQLogShift, cs.QPSizesSQLogMask) | fm(cs.QPSizesRQLogShift, cs.QPSizesRQLogMask) |
		fm(cs.QPSizesTXSLogShift, cs.QPSizesTXSLogMask) | fm(cs.QPSizesRXSLogShift, cs.QPSizesRXSLogMask),
	cs.QPCqs: fm(cs.QPCqsSendCQShift, cs.QPCqsSendCQMask) | fm(cs.QPCqsRecvCQShift, cs.QPCqsRecvCQMask),
	cs.QPMPA: fm(cs.QPMPAMulpduShift, cs.QPMPAMulpduMask) | fm(cs.QPMPAMarkersTXShift, cs.QPMPAMarkersTXMask) |
		fm(cs.QPMPAMarkersRXShift, cs.QPMPAMarkersRXMask) | fm(cs.QPMPACRCShift, cs.QPMPACRCMask) | fm(cs.QPMPARev0Shift, cs.QPMPARev0Mask),
	cs.QPRD: fm(cs.QPRDORDShift, cs.QPRDORDMask) | fm(cs.QPRDIRDShift, cs.QPRDIRDMask),
}

// CardCommands are the command registers, in the order CardRegsIn.CmdReady
// and CardRegsOut.Cmd list them.
var CardCommands = []uint32{cs.Reset, cs.EQDB, cs.CQCmd, cs.QPCmd}

// cardCmdMask is the bits each command carries (0: none).
var cardCmdMask = map[uint32]uint32{
	cs.Reset: 0,
	cs.EQDB:  fm(cs.EQDBCIShift, cs.EQDBCIMask) | fm(cs.EQDBArmShift, cs.EQDBArmMask),
	cs.CQCmd: fm(cs.CQCmdOpShift, cs.CQCmdOpMask),
	cs.QPCmd: fm(cs.QPCmdOpShift, cs.QPCmdOpMask),
}

// CardRegsIn is one cycle of card_regs inputs.
type CardRegsIn struct {
	Reset bool

	AWAddr  uint32
	AWValid bool
	WData   uint32
	WStrb   uint8
	WValid  bool
	BReady  bool
	ARAddr  uint32
	ARValid bool
	RReady  bool

	// Status inputs, packed as their registers read: STATUS,
	// DMA_FAULT_ADDR_LO, DMA_FAULT_ADDR_HI, DMA_FAULT_INFO, CMD_STATUS.
	Status, FaultAddrLo, FaultAddrHi, FaultInfo, CmdStatus uint32

	CmdReady [4]bool // per CardCommands
	DBReady  bool    // m_db_ready
}

// CardDoorbell is one entry of the doorbell stream.
type CardDoorbell struct {
	Kind   cs.DBKind
	Index  uint32 // CQ or QP number
	Value  uint32
	PushOK bool
}

// CardRegsOut is one cycle of card_regs outputs. Staging registers are read
// with Staged.
type CardRegsOut struct {
	AWReady, WReady bool // equal
	BValid          bool
	BResp           uint8
	ARReady         bool
	RValid          bool
	RData           uint32

	CmdValid [4]bool   // per CardCommands
	CmdValue [4]uint32 // the written value masked to its fields (0 while not valid)

	RegWrValid bool
	RegWrAddr  uint32
	RegWrData  uint32

	// StagedWr: a staging register (at byte offset StagedOff) is written
	// this cycle (the <register>_wr_pulse output of a Strobe register).
	StagedWr  bool
	StagedOff uint32

	DBValid bool
	DB      CardDoorbell // zero while DBValid is low
	// Push is the pushed block while DB.PushOK (else zero).
	Push [cs.BB]byte
}

// CardRegs models card_regs_w<W>: the card's BAR0 AXI4-Lite slave.
type CardRegs struct {
	width  int
	staged [cardPlainWords]uint32 // staging registers by word offset

	bvalid, rvalid bool
	bresp          uint8
	rdata          uint32
	cmdPend        [4]bool
	cmdVal         [4]uint32
	regWr          [3]uint32 // valid, addr, data

	fifo []CardDoorbell

	pushOwner, pushNext uint32
	pushGood, pushPend  bool
	pushWords           [cardPushWords]uint32
}

// NewCardRegs models the block generated for a data path of width bits.
func NewCardRegs(width int) (*CardRegs, error) {
	for off := range cardStaging {
		if off/4 >= cardPlainWords {
			return nil, fmt.Errorf("%w: card_regs staging register at %#x", ErrConfig, off)
		}
	}
	switch width {
	case 64, 128, 256, 512:
	default:
		return nil, fmt.Errorf("%w: card_regs width %d", ErrConfig, width)
	}
	m := &CardRegs{width: width}
	m.reset()
	return m, nil
}

func (m *CardRegs) reset() {
	w, f := m.width, m.fifo[:0]
	*m = CardRegs{width: w, fifo: f}
}

// cardPlainWords covers the offsets of the plain registers (below the
// placement window's end).
const cardPlainWords = 0x400 / 4

// Staged is the value of staging register off (its stored bits; 0 for
// any other offset).
func (m *CardRegs) Staged(off uint32) uint32 {
	if off/4 < cardPlainWords {
		return m.staged[off/4]
	}
	return 0
}

// constant read-only registers.
func (m *CardRegs) constant(off uint32) (uint32, bool) {
	switch off {
	case cs.ID:
		return cs.VendorID<<cs.IDVendorShift | cs.DeviceID<<cs.IDDeviceShift, true
	case cs.Version:
		return cs.InterfaceVersion, true
	case cs.CapsDatapath:
		return uint32(m.width/8)<<cs.CapsDatapathWidthBytesShift | cs.MaxSGE<<cs.CapsDatapathMaxSGEShift |
			cs.MaxWQEBBs<<cs.CapsDatapathMaxWQEBBSShift | cs.MaxRd<<cs.CapsDatapathMaxRDShift, true
	case cs.CapsObjects:
		return log2u(cs.MaxQP)<<cs.CapsObjectsLogQPShift | log2u(cs.MaxCQ)<<cs.CapsObjectsLogCQShift |
			log2u(cs.STags)<<cs.CapsObjectsLogSTagShift | cs.MaxQueueLog<<cs.CapsObjectsLogQueueShift, true
	case cs.CapsInline:
		return cs.MaxInline<<cs.CapsInlineMaxInlineShift | cs.PushInline<<cs.CapsInlinePushInlineShift, true
	case cs.CapsRing:
		return cs.MinRingLog<<cs.CapsRingMinLogShift | cs.MaxRingLog<<cs.CapsRingMaxLogShift, true
	}
	return 0, false
}

func log2u(n uint32) uint32 {
	k := uint32(0)
	for 1<<k < n {
		k++
	}
	return k
}

// write classes
const (
	wUnmapped = iota
	wStaging
	wCommand
	wWindow
	wDoorbell
	wPush
)

type wdec struct {
	class int
	off   uint32 // staging/command offset; window byte address
	cmd   int
	kind  cs.DBKind
	index uint32
	word  uint32 // push word
}

func decodeWrite(addr uint32) wdec {
	a := addr &^ 3 & (1<<cs.AddrBits - 1)
	if _, ok := cardStaging[a]; ok {
		return wdec{class: wStaging, off: a}
	}
	for i, c := range CardCommands {
		if a == c {
			return wdec{class: wCommand, off: a, cmd: i}
		}
	}
	if a >= cs.PlacementWindow && a < cs.PlacementWindow+256 {
		return wdec{class: wWindow, off: a - cs.PlacementWindow}
	}
	if a >= cs.CQDBBase && a < cs.CQDBBase+cs.CQDBStride*cs.MaxCQ {
		if (a-cs.CQDBBase)%cs.CQDBStride == cs.CQDBCI {
			return wdec{class: wDoorbell, kind: cs.DBKindCQDBCI, index: (a - cs.CQDBBase) / cs.CQDBStride}
		}
		return wdec{}
	}
	if a >= cs.QPDBBase && a < cs.QPDBBase+cs.QPDBStride*cs.MaxQP {
		idx, o := (a-cs.QPDBBase)/cs.QPDBStride, (a-cs.QPDBBase)%cs.QPDBStride
		switch o {
		case cs.QPDBSQPI:
			return wdec{class: wDoorbell, kind: cs.DBKindQPDBSQPI, index: idx}
		case cs.QPDBRQPI:
			return wdec{class: wDoorbell, kind: cs.DBKindQPDBRQPI, index: idx}
		case cs.QPDBTXSCI:
			return wdec{class: wDoorbell, kind: cs.DBKindQPDBTXSCI, index: idx}
		case cs.QPDBRXSPI:
			return wdec{class: wDoorbell, kind: cs.DBKindQPDBRXSPI, index: idx}
		case cs.QPDBStream:
			return wdec{class: wDoorbell, kind: cs.DBKindQPDBStream, index: idx}
		}
		if o >= cs.QPDBPush && o < cs.QPDBPush+cs.BB {
			return wdec{class: wPush, kind: cs.DBKindQPDBPush, index: idx, word: (o - cs.QPDBPush) / 4}
		}
	}
	return wdec{}
}

func (m *CardRegs) read(addr uint32, in *CardRegsIn) uint32 {
	a := addr &^ 3 & (1<<cs.AddrBits - 1)
	if v, ok := m.constant(a); ok {
		return v
	}
	switch a {
	case cs.Status:
		return in.Status & (fm(cs.StatusInitDoneShift, cs.StatusInitDoneMask) | fm(cs.StatusFatalShift, cs.StatusFatalMask))
	case cs.DMAFaultAddrLo:
		return in.FaultAddrLo
	case cs.DMAFaultAddrHi:
		return in.FaultAddrHi
	case cs.DMAFaultInfo:
		return in.FaultInfo & (fm(cs.DMAFaultInfoQPNShift, cs.DMAFaultInfoQPNMask) | fm(cs.DMAFaultInfoRespShift, cs.DMAFaultInfoRespMask) |
			fm(cs.DMAFaultInfoWriteShift, cs.DMAFaultInfoWriteMask) | fm(cs.DMAFaultInfoCountShift, cs.DMAFaultInfoCountMask))
	case cs.CmdStatus:
		return in.CmdStatus & (fm(cs.CmdStatusSeqShift, cs.CmdStatusSeqMask) | fm(cs.CmdStatusRefusedShift, cs.CmdStatusRefusedMask) |
			fm(cs.CmdStatusWhyShift, cs.CmdStatusWhyMask))
	}
	return m.Staged(a) // zero for everything write-only or unmapped
}

// Step writes the outputs of this cycle into out, then takes the clock edge.
func (m *CardRegs) Step(in *CardRegsIn, out *CardRegsOut) {
	// Outputs from state.
	out.BValid, out.BResp = m.bvalid, m.bresp
	out.RValid, out.RData = m.rvalid, m.rdata
	busy := false
	for i := range CardCommands {
		out.CmdValid[i] = m.cmdPend[i]
		out.CmdValue[i] = 0
		if m.cmdPend[i] {
			out.CmdValue[i] = m.cmdVal[i]
			busy = busy || !in.CmdReady[i]
		}
	}
	out.RegWrValid, out.RegWrAddr, out.RegWrData = m.regWr[0] != 0, m.regWr[1], m.regWr[2]
	out.StagedWr, out.StagedOff = false, 0
	out.DBValid = len(m.fifo) > 0
	out.DB = CardDoorbell{}
	out.Push = [cs.BB]byte{}
	if out.DBValid {
		out.DB = m.fifo[0]
		if out.DB.PushOK {
			for i, w := range m.pushWords {
				out.Push[4*i], out.Push[4*i+1], out.Push[4*i+2], out.Push[4*i+3] = byte(w), byte(w>>8), byte(w>>16), byte(w>>24)
			}
		}
	}
	d := decodeWrite(in.AWAddr)
	full := in.WStrb&0xF == 0xF
	dbFull := len(m.fifo) == CardRegsDBDepth
	stall := (m.bvalid && !in.BReady) || busy ||
		((d.class == wDoorbell || d.class == wPush) && dbFull) || (d.class == wPush && m.pushPend)
	wrGo := in.AWValid && in.WValid && !stall
	out.AWReady, out.WReady = wrGo, wrGo
	arFree := !m.rvalid || in.RReady
	out.ARReady = arFree
	if in.Reset {
		m.reset()
		return
	}

	// Clock edge.
	pop := out.DBValid && in.DBReady
	if pop && m.fifo[0].Kind == cs.DBKindQPDBPush {
		m.pushPend = false
	}
	if arFree {
		m.rdata = 0
		if in.ARValid {
			m.rdata = m.read(in.ARAddr, in)
		}
	}
	if in.ARValid && arFree {
		m.rvalid = true
	} else if in.RReady {
		m.rvalid = false
	}
	for i := range CardCommands {
		if in.CmdReady[i] {
			m.cmdPend[i] = false
		}
	}
	m.regWr = [3]uint32{}
	var enq *CardDoorbell
	if !m.bvalid || in.BReady {
		m.bresp = 0
	}
	if wrGo {
		m.bvalid = true
		whole := d.class == wCommand || d.class == wWindow || d.class == wDoorbell || d.class == wPush
		if whole && !full {
			m.bresp = AXISlvErr
		}
		var bm uint32
		for b := 0; b < 4; b++ {
			if in.WStrb>>b&1 != 0 {
				bm |= 0xFF << (8 * b)
			}
		}
		switch d.class {
		case wStaging:
			out.StagedWr, out.StagedOff = true, d.off
			mask := cardStaging[d.off]
			m.staged[d.off/4] = (m.staged[d.off/4]&^bm | in.WData&bm) & mask
		case wCommand:
			if full {
				m.cmdPend[d.cmd], m.cmdVal[d.cmd] = true, in.WData&cardCmdMask[CardCommands[d.cmd]]
			}
		case wWindow:
			if full {
				m.regWr = [3]uint32{1, d.off, in.WData}
			}
		case wDoorbell:
			if full {
				enq = &CardDoorbell{Kind: d.kind, Index: d.index, Value: in.WData}
			}
		case wPush:
			inOrder := m.pushGood && m.pushOwner == d.index && m.pushNext == d.word
			last := d.word == cardPushWords-1
			if full {
				m.pushWords[d.word] = in.WData
				if d.word == 0 {
					m.pushOwner = d.index
				}
				m.pushNext = (d.word + 1) % cardPushWords
				if last {
					enq = &CardDoorbell{Kind: d.kind, Index: d.index, Value: in.WData, PushOK: inOrder}
					m.pushPend = true
				}
			}
			m.pushGood = full && !last && (d.word == 0 || inOrder)
		}
	} else if in.BReady {
		m.bvalid = false
	}
	if pop {
		m.fifo = m.fifo[:copy(m.fifo, m.fifo[1:])]
	}
	if enq != nil {
		m.fifo = append(m.fifo, *enq)
	}
}
