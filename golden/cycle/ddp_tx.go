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
// golden/ddp's encoders and the segment sizes from ddp.MaxPayload.
type DDPTx struct {
	lanes int
	descs []DDPTxDesc // at most 2
	beats []ddpBeat   // at most ddpTxPayloadDepth
	free  [][]byte    // beat buffers to reuse

	// the message
	act, first      bool
	desc            DDPTxDesc
	to              uint64
	mo, left        uint32
	maxp            int
	rp              int
	hdrLeft, pleft  int
	segLast         bool
	segLen          uint16
	hdr             []byte // header octets not yet sent
	hdrBuf          []byte
	outValid        bool
	out             DDPTxOut
	outData, formed []byte
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
	return &DDPTx{lanes: l, outData: make([]byte, l), formed: make([]byte, l), hdrBuf: make([]byte, 0, 18)}, nil
}

func (d *DDPTx) reset() {
	for _, b := range d.beats {
		d.free = append(d.free, b.data)
	}
	d.descs, d.beats = d.descs[:0], d.beats[:0]
	d.act, d.first, d.rp, d.outValid = false, false, 0, false
	// The outputs shown during this cycle stay as they are (out.Data is
	// d.outData): the zeroed registers take the other buffer.
	d.outData, d.formed = d.formed, d.outData
	clear(d.outData)
	d.out = DDPTxOut{}
}

// hdrLen is the header length of the message being sent.
func (d *DDPTx) hdrLen() int {
	if d.desc.Tagged {
		return ddp.TaggedHeaderLen
	}
	return ddp.UntaggedHeaderLen
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

	// The beat the state allows, if the held payload covers it.
	var hl, k int
	var segEnd, have, last bool
	var segLen uint16
	if d.act {
		if d.first {
			h := d.hdrLen()
			p := d.maxp
			if uint64(d.left) < uint64(p) {
				p = int(d.left)
			}
			last = uint64(d.left) <= uint64(d.maxp)
			d.hdrBuf = d.hdrBuf[:0]
			if d.desc.Tagged {
				d.hdrBuf = ddp.TaggedFields{Last: last, Version: d.desc.DV, RsvdULP: d.desc.RDMAP, STag: d.desc.STag, TO: d.to}.Append(d.hdrBuf)
			} else {
				d.hdrBuf = ddp.UntaggedFields{Last: last, Version: d.desc.DV, RsvdULP0: d.desc.RDMAP, RsvdULP1: d.desc.STag,
					QN: d.desc.QN, MSN: d.desc.MSN, MO: d.mo}.Append(d.hdrBuf)
			}
			d.hdr = d.hdrBuf
			d.hdrLeft, d.pleft, d.segLast, d.segLen = h, p, last, uint16(h+p)
		}
		last, segLen = d.segLast, d.segLen
		hl = min(L, d.hdrLeft)
		k = min(L-hl, d.pleft)
		segEnd = d.hdrLeft == hl && d.pleft == k
		have = k == 0 || len(d.beats) >= 1 && (d.beats[0].last || d.rp+k <= L || len(d.beats) >= 2)
	}
	emit := adv && d.act && have
	msgEnd := emit && segEnd && last

	// Form the beat, release payload, advance the message.
	if emit {
		f := d.formed
		clear(f)
		copy(f, d.hdr[:hl])
		d.hdr = d.hdr[hl:]
		if k > 0 {
			n := copy(f[hl:hl+k], d.beats[0].data[d.rp:])
			if n < k {
				copy(f[hl+n:hl+k], d.beats[1].data)
			}
		}
		pops := 0
		switch {
		case k > 0 && uint32(k) == d.left:
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
		d.hdrLeft -= hl
		d.pleft -= k
		d.left -= uint32(k)
		d.to += uint64(k)
		d.mo += uint32(k)
		d.first = segEnd
		d.out = DDPTxOut{Keep: lowLanes(hl + k), Last: segEnd, Len: segLen, MsgLast: last, User: d.desc.User}
		d.outData, d.formed = d.formed, d.outData
	}
	if adv {
		d.outValid = emit
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
	start := len(d.descs) > 0 && (!d.act || msgEnd)
	if start {
		d.desc = d.descs[0]
		d.descs = d.descs[1:]
		d.act, d.first = true, true
		d.to, d.mo, d.left = d.desc.TO, 0, d.desc.Len
		d.maxp = int(uint16(d.desc.MULPDU - d.hdrLen()))
	} else if msgEnd {
		d.act = false
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
