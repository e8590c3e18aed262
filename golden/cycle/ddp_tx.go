package cycle

import (
	"fmt"

	"github.com/openiwarp/openiwarp/golden/ddp"
)

// DDPTxDesc is a message descriptor of ddp_tx.
type DDPTxDesc struct {
	Tagged bool
	RDMAP  uint8       // the RDMAP control octet (RV, opcode)
	DV     ddp.Version // DDP version
	STag   uint32      // tagged: the STag; untagged: the second ULP field (Invalidate STag or 0)
	TO     uint64      // tagged: TO of the first octet
	QN     uint32      // untagged
	MSN    uint32      // untagged
	Len    uint32      // payload octets
	MULPDU int         // largest segment, header included (128..64768)
	User   uint16
}

// DDPTxIn is one cycle's inputs of ddp_tx.
type DDPTxIn struct {
	Reset     bool
	DescValid bool
	Desc      DDPTxDesc
	Valid     bool   // s_axis_tvalid
	Data      []byte // s_axis_tdata, lane 0 first (read only when Valid)
	Last      bool   // s_axis_tlast
	MReady    bool   // m_axis_tready
}

// DDPTxOut is what ddp_tx shows during a cycle.
type DDPTxOut struct {
	DescReady bool
	SReady    bool
	Valid     bool
	Data      []byte // the segment octets, lanes past Keep zero
	Keep      uint64
	Last      bool   // the segment's last beat
	Len       uint16 // the segment's length, header included
	MsgLast   bool   // the DDP L bit
	User      uint16
}

// DDPTx is the cycle model of ddp_tx_w<width> (hw/README.md): message
// descriptors and payload in, DDP segments out, the headers from
// golden/ddp's encoders and the segment sizes from ddp.MaxPayload. It has
// the block's stages: a descriptor queue, the segment planner (one segment
// per cycle into a queue of two), the beat former and the output register.
type DDPTx struct {
	lanes int
	descs []DDPTxDesc // at most 2
	segs  []ddpSeg    // at most 2
	beats []ddpBeat   // at most ddpTxPayloadDepth
	free  [][]byte    // beat buffers to reuse

	// the planner's message
	act  bool
	desc DDPTxDesc
	to   uint64
	mo   uint32
	left uint32
	maxp int

	// the beat former: the beat due and its segment
	fv              bool
	seg             ddpSeg
	hdr             []byte // header octets not yet sent
	hl, k, rem      int    // header and payload octets of the beat; segment octets from it on
	hrem            int    // header octets from it on
	end             bool   // the beat ends the segment
	rp              int
	outValid        bool
	out             DDPTxOut
	outData, formed []byte
}

// ddpSeg is a planned segment.
type ddpSeg struct {
	hdr        []byte
	len        int
	last       bool
	user       uint16
	hl0, k0    int
	end0       bool
	hrem0      int
	hdrStorage [18]byte
}

type ddpBeat struct {
	data []byte
	last bool
}

const ddpTxPayloadDepth = 3 // payload beats held (the block's contract)

// NewDDPTx returns the model of ddp_tx at width bits, after reset.
func NewDDPTx(width int) (*DDPTx, error) {
	if width < 64 || width > 512 || width&(width-1) != 0 {
		return nil, fmt.Errorf("cycle: ddp_tx width %d (need 64, 128, 256 or 512)", width)
	}
	l := width / 8
	return &DDPTx{lanes: l, outData: make([]byte, l), formed: make([]byte, l)}, nil
}

func (d *DDPTx) reset() {
	for _, b := range d.beats {
		d.free = append(d.free, b.data)
	}
	d.descs, d.segs, d.beats = d.descs[:0], d.segs[:0], d.beats[:0]
	d.act, d.fv, d.rp, d.outValid = false, false, 0, false
	d.hl, d.k, d.end = 0, 0, false
	// The outputs shown during this cycle stay as they are (out.Data is
	// d.outData): the zeroed registers take the other buffer.
	d.outData, d.formed = d.formed, d.outData
	clear(d.outData)
	d.out = DDPTxOut{}
}

func hdrLenOf(tagged bool) int {
	if tagged {
		return ddp.TaggedHeaderLen
	}
	return ddp.UntaggedHeaderLen
}

// plan is the planner's segment of this cycle and whether it is the
// message's last.
func (d *DDPTx) plan() ddpSeg {
	L := d.lanes
	h := hdrLenOf(d.desc.Tagged)
	last := uint64(d.left) <= uint64(d.maxp)
	p := d.maxp
	if last {
		p = int(d.left)
	}
	sg := ddpSeg{len: int(uint16(h + p)), last: last, user: d.desc.User, hl0: min(h, L), hrem0: h}
	sg.k0 = min(h+p, L) - sg.hl0
	sg.end0 = h+p <= L
	b := sg.hdrStorage[:0]
	if d.desc.Tagged {
		b = ddp.TaggedFields{Last: last, Version: d.desc.DV, RsvdULP: d.desc.RDMAP, STag: d.desc.STag, TO: d.to}.Append(b)
	} else {
		b = ddp.UntaggedFields{Last: last, Version: d.desc.DV, RsvdULP0: d.desc.RDMAP, RsvdULP1: d.desc.STag,
			QN: d.desc.QN, MSN: d.desc.MSN, MO: d.mo}.Append(b)
	}
	sg.hdr = b
	return sg
}

// Step takes one cycle: out gets what the block shows during it, then the
// clock edge is taken.
func (d *DDPTx) Step(in *DDPTxIn, out *DDPTxOut) {
	L := d.lanes
	*out = d.out
	out.Valid = d.outValid
	out.Data = d.outData
	out.DescReady = len(d.descs) < 2
	out.SReady = len(d.beats) < ddpTxPayloadDepth
	if in.Reset {
		d.reset()
		return
	}
	adv := !d.outValid || in.MReady
	push := d.act && len(d.segs) < 2 // the planner's, on the queue as the cycle starts

	// The beat former.
	lastK := d.seg.last && d.end && d.k > 0
	have := d.k == 0 || len(d.beats) >= 2 || len(d.beats) == 1 && d.beats[0].last
	emit := adv && d.fv && have
	if emit {
		f := d.formed
		clear(f)
		copy(f, d.hdr[:d.hl])
		d.hdr = d.hdr[d.hl:]
		hl, k := d.hl, d.k
		if k > 0 {
			n := copy(f[hl:hl+k], d.beats[0].data[d.rp:])
			if n < k {
				copy(f[hl+n:hl+k], d.beats[1].data)
			}
		}
		pops := 0
		switch {
		case lastK:
			pops = 1
			if d.rp+k > L {
				pops = 2
			}
			d.rp = 0
		case k > 0:
			if d.rp+k >= L {
				pops = 1
			}
			d.rp = (d.rp + k) % L
		}
		for range pops {
			d.free = append(d.free, d.beats[0].data)
			d.beats = d.beats[1:]
		}
		nb := L
		if d.end {
			nb = d.rem
		}
		d.out = DDPTxOut{Keep: lowLanes(nb), Last: d.end, Len: uint16(d.seg.len), MsgLast: d.seg.last, User: d.seg.user}
		d.outData, d.formed = d.formed, d.outData
	}
	segDone := emit && d.end
	switch {
	case len(d.segs) > 0 && (!d.fv || segDone):
		d.seg = d.segs[0]
		d.segs = d.segs[:copy(d.segs, d.segs[1:])]
		d.fv = true
		d.hdr = d.seg.hdrStorage[:len(d.seg.hdr)]
		d.hl, d.k, d.end, d.rem, d.hrem = d.seg.hl0, d.seg.k0, d.seg.end0, d.seg.len, d.seg.hrem0
	case segDone:
		d.fv = false
	case emit:
		d.hrem -= d.hl
		d.rem -= L
		d.end = d.rem <= L
		d.hl = min(d.hrem, L)
		nb := L
		if d.end {
			nb = d.rem
		}
		d.k = nb - d.hl
	}
	if adv {
		d.outValid = emit
	}

	// The planner.
	var last bool
	if push {
		sg := d.plan()
		last = sg.last
		d.segs = append(d.segs, sg)
		if !last {
			d.to += uint64(d.maxp)
			d.mo += uint32(d.maxp)
			d.left -= uint32(d.maxp)
		}
	}
	if len(d.descs) > 0 && (!d.act || push && last) {
		d.desc = d.descs[0]
		d.descs = d.descs[:copy(d.descs, d.descs[1:])]
		d.act = true
		d.to, d.mo, d.left = d.desc.TO, 0, d.desc.Len
		d.maxp = int(uint16(d.desc.MULPDU - hdrLenOf(d.desc.Tagged)))
	} else if push && last {
		d.act = false
	}

	if in.Valid && out.SReady {
		var b []byte
		if n := len(d.free); n > 0 {
			b, d.free = d.free[n-1], d.free[:n-1]
		} else {
			b = make([]byte, L)
		}
		copy(b, in.Data)
		d.beats = append(d.beats, ddpBeat{data: b, last: in.Last})
	}
	if in.DescValid && out.DescReady {
		d.descs = append(d.descs, in.Desc)
	}
}

// lowLanes is the mask of lanes 0..n-1.
func lowLanes(n int) uint64 {
	if n >= 64 {
		return ^uint64(0)
	}
	return 1<<n - 1
}
