package cycle

import (
	"errors"
	"fmt"
	"hash/crc32"
	"math/bits"
)

// ErrConfig is wrapped by errors about an unsupported block configuration.
var ErrConfig = errors.New("cycle: unsupported configuration")

// CRC32CResidue is the CRC32c of any frame that ends with its own CRC field
// sent least significant octet first (RFC 5044 §4.4; digest §1.5).
const CRC32CResidue = 0x48674BC7

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crc32cLatency is the block's documented latency (hw/README.md): cycles
// from the acceptance of a frame's last beat to its result on m_axis.
var crc32cLatency = map[int]int{32: 4, 64: 4, 128: 5, 256: 5, 512: 5}

// CRC32CIn is one cycle of inputs of crc32c_w<W>.
type CRC32CIn struct {
	Reset  bool
	Data   []byte // W/8 lanes, lane 0 first on the wire
	Keep   uint64 // lanes in use, contiguous from lane 0
	Valid  bool
	Last   bool
	MReady bool // m_axis_tready
}

// CRC32COut is one cycle of outputs of crc32c_w<W>.
type CRC32COut struct {
	SReady    bool   // s_axis_tready
	CRC       uint32 // m_axis_tdata: CRC32c of the frame, as hash/crc32 returns it
	ResidueOK bool   // m_axis_tuser: the frame ended with its own correct CRC field
	MValid    bool   // m_axis_tvalid
}

type crcSlot struct {
	valid bool
	crc   uint32
	ok    bool
}

// CRC32C models crc32c_w<W>: CRC32c of each AXI-Stream frame, one beat per
// cycle, one result per frame a fixed latency after the last beat. Its
// result path is a pipeline that advances whenever the result register is
// empty or m_axis_tready is high; s_axis_tready is that same condition.
// After reset the result register reads zero.
type CRC32C struct {
	lanes int
	acc   uint32    // hash/crc32 value of the frame so far
	pipe  []crcSlot // pipe[len-1] is the result register
}

// NewCRC32C models the block of the given data width.
func NewCRC32C(width int) (*CRC32C, error) {
	lat, ok := crc32cLatency[width]
	if !ok {
		return nil, fmt.Errorf("%w: crc32c width %d (have 32, 64, 128, 256, 512)", ErrConfig, width)
	}
	return &CRC32C{lanes: width / 8, pipe: make([]crcSlot, lat)}, nil
}

// Latency is the number of cycles from the last beat's acceptance to the result.
func (m *CRC32C) Latency() int { return len(m.pipe) }

// Lanes is the number of byte lanes.
func (m *CRC32C) Lanes() int { return m.lanes }

// Step runs one cycle.
func (m *CRC32C) Step(in CRC32CIn) CRC32COut {
	res := m.pipe[len(m.pipe)-1]
	adv := !res.valid || in.MReady
	out := CRC32COut{SReady: adv, CRC: res.crc, ResidueOK: res.ok, MValid: res.valid}
	if in.Reset {
		m.acc = 0
		clear(m.pipe)
		return out
	}
	var enter crcSlot
	if in.Valid && adv {
		n := bits.TrailingZeros64(^in.Keep)
		m.acc = crc32.Update(m.acc, castagnoli, in.Data[:min(n, m.lanes)])
		if in.Last {
			enter = crcSlot{valid: true, crc: m.acc, ok: m.acc == CRC32CResidue}
			m.acc = 0
		}
	}
	if adv {
		// Each stage keeps its data when nothing valid enters it.
		for i := len(m.pipe) - 1; i > 0; i-- {
			if m.pipe[i-1].valid {
				m.pipe[i] = m.pipe[i-1]
			} else {
				m.pipe[i].valid = false
			}
		}
		if enter.valid {
			m.pipe[0] = enter
		} else {
			m.pipe[0].valid = false
		}
	}
	return out
}
