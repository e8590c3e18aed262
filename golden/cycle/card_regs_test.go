package cycle

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// regsBus drives the model as an AXI4-Lite master that waits for each answer.
type regsBus struct {
	t   *testing.T
	m   *CardRegs
	in  CardRegsIn
	out CardRegsOut
	dbs []CardDoorbell
	pus [][cs.BB]byte
}

func (b *regsBus) step() {
	b.in.DBReady = true
	b.m.Step(&b.in, &b.out)
	if b.out.DBValid {
		b.dbs = append(b.dbs, b.out.DB)
		b.pus = append(b.pus, b.out.Push)
	}
}

func (b *regsBus) write(addr, data uint32, strb uint8) uint8 {
	b.in.AWAddr, b.in.WData, b.in.WStrb, b.in.AWValid, b.in.WValid, b.in.BReady = addr, data, strb, true, true, true
	for i := 0; ; i++ {
		require.Less(b.t, i, 10, "write to %#x never accepted", addr)
		b.step()
		if b.out.AWReady {
			break
		}
	}
	b.in.AWValid, b.in.WValid = false, false
	b.step()
	require.True(b.t, b.out.BValid, "B follows the write by one cycle")
	return b.out.BResp
}

func (b *regsBus) read(addr uint32) uint32 {
	b.in.ARAddr, b.in.ARValid, b.in.RReady = addr, true, true
	b.step()
	require.True(b.t, b.out.ARReady)
	b.in.ARValid = false
	b.step()
	require.True(b.t, b.out.RValid, "R follows the read by one cycle")
	return b.out.RData
}

func TestCardRegsModel(t *testing.T) {
	m, err := NewCardRegs(512)
	require.NoError(t, err)
	b := &regsBus{t: t, m: m}
	b.in.Reset = true
	b.step()
	b.in.Reset = false

	assert.Equal(t, uint32(cs.DeviceID<<16|cs.VendorID), b.read(cs.ID))
	assert.Equal(t, uint32(64), b.read(cs.CapsDatapath)&0xFF, "512-bit data path: 64 bytes")
	assert.Equal(t, uint8(AXIOkay), b.write(cs.Scratch, 0x12345678, 0xF))
	assert.Equal(t, uint8(AXIOkay), b.write(cs.Scratch, 0xAABBCCDD, 0x2), "byte strobes on a staging register")
	assert.Equal(t, uint32(0x1234CC78), b.read(cs.Scratch))
	b.write(cs.QPSizes, 0xFFFFFFFF, 0xF)
	assert.Equal(t, uint32(0x1F1F1F1F), b.read(cs.QPSizes), "only field bits are stored")
	assert.Equal(t, uint32(0), b.read(0x3FFC&^0x3), "unmapped reads 0")

	b.write(cs.QPDBBase+5*cs.QPDBStride+cs.QPDBSQPI, 7, 0xF)
	assert.Equal(t, uint8(AXISlvErr), b.write(cs.CQDBBase+3*cs.CQDBStride, 1, 0x3), "partial doorbell write")
	require.NotEmpty(t, b.dbs)
	assert.Equal(t, CardDoorbell{Kind: cs.DBKindQPDBSQPI, Index: 5, Value: 7}, b.dbs[0])

	// A whole push, then one broken by another QP's first word.
	b.dbs, b.pus = nil, nil
	for w := uint32(0); w < 16; w++ {
		b.write(cs.QPDBBase+9*cs.QPDBStride+cs.QPDBPush+4*w, 0x01010101*w, 0xF)
	}
	for w := uint32(0); w < 16; w++ {
		if w == 8 {
			b.write(cs.QPDBBase+2*cs.QPDBStride+cs.QPDBPush, 0xEE, 0xF)
		}
		b.write(cs.QPDBBase+9*cs.QPDBStride+cs.QPDBPush+4*w, 0x01010101*w, 0xF)
	}
	b.step()
	var got []CardDoorbell
	var push [cs.BB]byte
	for i, d := range b.dbs { // a doorbell shows until taken: one entry per cycle shown
		if i == 0 || d != b.dbs[i-1] {
			got = append(got, d)
			if d.PushOK {
				push = b.pus[i]
			}
		}
	}
	require.Len(t, got, 2)
	assert.Equal(t, CardDoorbell{Kind: cs.DBKindQPDBPush, Index: 9, Value: 0x0F0F0F0F, PushOK: true}, got[0])
	assert.Equal(t, CardDoorbell{Kind: cs.DBKindQPDBPush, Index: 9, Value: 0x0F0F0F0F}, got[1], "broken push: no block")
	for i := 0; i < cs.BB; i++ {
		assert.Equal(t, byte(i/4), push[i])
	}
}
