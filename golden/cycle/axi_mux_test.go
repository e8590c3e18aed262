package cycle

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Addresses are granted round robin after the master granted last, a
// grant is held until the slave takes it, and the master's number goes
// above its ID; responses go back by that number.
func TestAXIRdMuxArbitration(t *testing.T) {
	m := NewAXIRdMux(4, 6)
	ar := func(valid ...int) []AXIAddr {
		a := make([]AXIAddr, 4)
		for _, i := range valid {
			a[i] = AXIAddr{ID: 5, Addr: uint64(i) << 12, Valid: true}
		}
		return a
	}
	in := AXIRdMuxIn{AR: ar(1, 3), RReady: make([]bool, 4), ARReady: true, R: AXIResp{Data: make([]byte, 8)}}
	o := m.Step(in)
	assert.Equal(t, AXIAddr{ID: 1<<6 | 5, Addr: 1 << 12, Valid: true}, o.AR, "after reset (last 0): master 1")
	assert.Equal(t, []bool{false, true, false, false}, o.ARReady)
	o = m.Step(in)
	assert.Equal(t, uint64(3<<12), o.AR.Addr, "then master 3")
	in.ARReady = false
	o = m.Step(in)
	assert.Equal(t, uint64(1<<12), o.AR.Addr, "then master 1 again")
	in.AR = ar(0, 1, 2, 3)
	o = m.Step(in)
	assert.Equal(t, uint64(1<<12), o.AR.Addr, "held until taken, whoever else asks")
	in.R = AXIResp{ID: 2<<6 | 9, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}, Resp: 2, Last: true, Valid: true}
	in.RReady[2] = true
	o = m.Step(in)
	assert.True(t, o.RReady, "master 2's ready")
	assert.Equal(t, AXIResp{ID: 9, Data: in.R.Data, Resp: 2, Last: true, Valid: true}, o.R[2])
	assert.Equal(t, AXIResp{Data: make([]byte, 8)}, o.R[1], "the others see nothing")
}

// W beats follow the order in which addresses were taken, a whole burst
// at a time; an address waits while the order queue is full.
func TestAXIWrMuxOrder(t *testing.T) {
	m := NewAXIWrMux(2, 4, 2)
	aw := []AXIAddr{{Addr: 0x1000, Valid: true}, {Addr: 0x2000, Valid: true}}
	w := []AXIW{{Data: []byte{1}, Valid: true}, {Data: []byte{2}, Valid: true, Last: true}}
	in := AXIWrMuxIn{AW: aw, W: w, BReady: make([]bool, 2), AWReady: true, WReady: true, B: AXIResp{}}
	o := m.Step(in)
	assert.False(t, o.W.Valid, "no W before an address is taken")
	assert.Equal(t, uint64(0x2000), o.AW.Addr, "master 1 first (last 0)")
	o = m.Step(in)
	assert.Equal(t, uint64(0x1000), o.AW.Addr)
	assert.Equal(t, []bool{false, true}, o.WReady, "master 1's burst goes first")
	assert.True(t, o.W.Last)
	o = m.Step(in)
	assert.Equal(t, []bool{true, false}, o.WReady, "then master 0's")
	assert.True(t, o.AW.Valid, "one entry free again")
	o = m.Step(in) // master 0's beat again: not last, so its burst stays at the head
	assert.False(t, o.AWReady[0] || o.AWReady[1], "the queue is full (two bursts)")
}

// The remap sends the low ID bits to the slave, gives the high bits back
// with the response in order per slave ID, and holds an address whose
// slave ID has depth bursts outstanding.
func TestAXIRemapQueues(t *testing.T) {
	r := NewAXIRemap(4, 2)
	a := func(id uint16) AXIRemapIn { return AXIRemapIn{A: AXIAddr{ID: id, Valid: true}, AReady: true} }
	o := r.Step(a(0x13))
	assert.Equal(t, AXIAddr{ID: 3, Valid: true}, o.A)
	assert.True(t, o.AReady)
	r.Step(a(0x53))
	o = r.Step(a(0x73))
	assert.False(t, o.AReady || o.A.Valid, "slave ID 3 has two bursts outstanding")
	o = r.Step(AXIRemapIn{RespID: 3, RespEnd: true})
	assert.Equal(t, uint16(0x13), o.RespID, "the oldest burst of slave ID 3 first")
	o = r.Step(a(0x73))
	assert.True(t, o.AReady, "room again")
	o = r.Step(AXIRemapIn{RespID: 3, RespEnd: true})
	assert.Equal(t, uint16(0x53), o.RespID)
	o = r.Step(AXIRemapIn{RespID: 3})
	assert.Equal(t, uint16(0x73), o.RespID)
}
