package sim

import (
	"fmt"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/host/driver/stagtab"
)

// mopReq is one memory operation for placement's s_mop port (a Local
// Invalidate or a window bind of card_tx), with the card model's verdict
// (host/driver/cardmodel: start and bindMW) on the table's mirror.
type mopReq struct {
	bind         bool
	stag, pd, qp uint32 // the STag invalidated, or the window's new STag
	mr           uint32
	addr, n      uint64
	access       mem.Access
	type2        bool
	ok           bool
	win          stagtab.Command // bind: the window's entry, when ok
}

func (r *mopReq) String() string {
	k, v := "invalidate", "refused"
	if r.bind {
		k = "bind"
	}
	if r.ok {
		v = "ok"
	}
	return fmt.Sprintf("%s %s", k, v)
}

// newMop draws an operation on the test's indexes: keys, PDs, ranges and
// rights near the registered entries', so that both verdicts come often.
func newMop(rng Rand, img *stagtab.Image, nIdx int) *mopReq {
	r := &mopReq{stag: uint32(rng.IntN(nIdx))<<8 | uint32(rng.IntN(4)), pd: uint32(1 + rng.IntN(3)), qp: uint32(1 + rng.IntN(3))}
	if rng.Chance(8) {
		r.stag = rng.Uint32() // mostly past the table
	}
	if !rng.Chance(128) {
		if e, _, ok := img.Lookup(r.stag >> 8); ok && rng.Chance(128) {
			r.stag, r.pd = r.stag&^0xff|uint32(e.Key), e.PD // mostly the entry's key and PD
		}
		return r
	}
	r.bind = true
	if rng.Chance(128) {
		r.stag = uint32(nIdx+rng.IntN(8))<<8 | uint32(rng.IntN(256)) // an index no commit writes: windows only
	}
	r.mr = uint32(rng.IntN(nIdx))<<8 | uint32(rng.IntN(4))
	if e, _, ok := img.Lookup(r.mr >> 8); ok && rng.Chance(200) {
		r.mr, r.pd = r.mr&^0xff|uint32(e.Key), e.PD // mostly the region's key and PD
		r.addr = e.Base + uint64(rng.IntN(int(e.Length)+64)) - 32
		r.n = uint64(rng.IntN(int(e.Length) + 16))
	} else {
		r.addr, r.n = uint64(rng.IntN(1<<20)), uint64(rng.IntN(8192))
	}
	if rng.Chance(8) {
		r.addr, r.n = ^uint64(0)-uint64(rng.IntN(64)), uint64(1+rng.IntN(128)) // wraps 2^64
	}
	r.access = []mem.Access{mem.RemoteRead, mem.RemoteWrite, mem.RemoteRead | mem.RemoteWrite, mem.LocalWrite, 0}[rng.IntN(5)]
	if e, _, ok := img.Lookup(r.mr >> 8); ok && rng.Chance(160) {
		r.access &= e.Access | mem.LocalWrite // mostly rights the region has
	}
	r.type2 = rng.Chance(128)
	return r
}

// mopOffer drives s_mop with r until it is taken.
func mopOffer(port func(string) Port, in []uint32, r *mopReq, taken bool) {
	if r == nil || taken {
		port("s_mop_valid").Set(in, 0)
		return
	}
	port("s_mop_valid").Set(in, 1)
	port("s_mop_bind").Set(in, b2u(r.bind))
	port("s_mop_stag").Set(in, uint64(r.stag))
	port("s_mop_pd").Set(in, uint64(r.pd))
	port("s_mop_qp").Set(in, uint64(r.qp))
	port("s_mop_mr").Set(in, uint64(r.mr))
	port("s_mop_addr").Set(in, r.addr)
	port("s_mop_len").Set(in, r.n)
	port("s_mop_access").Set(in, uint64(r.access))
	port("s_mop_type2").Set(in, b2u(r.type2))
}

// expect decides r on the mirror as the card model does. An index never
// committed holds the model's zero entry: not valid, a region of PD 0.
func (r *mopReq) expect(img *stagtab.Image) {
	depth := uint32(img.TableDepth)
	idx := r.stag >> 8
	e, _, _ := img.Lookup(idx)
	if !r.bind {
		r.ok = idx < depth && e.Valid && e.Key == mem.STag(r.stag).Key() && e.PD == r.pd
		return
	}
	p, ptr, _ := img.Lookup(r.mr >> 8)
	end := r.addr + r.n
	switch {
	case r.mr>>8 >= depth || idx >= depth || !p.Valid || p.Kind != mem.KindMR || p.Key != mem.STag(r.mr).Key():
	case e.Valid && e.Kind == mem.KindMR, e.Kind != mem.KindMR && e.PD != r.pd:
	case p.PD != r.pd:
	case p.Access&mem.Bind == 0 || r.access&^(mem.RemoteRead|mem.RemoteWrite) != 0 || r.access&^p.Access != 0:
	case r.addr < p.Base || end < r.addr || end > p.Base+p.Length:
	default:
		r.ok = true
	}
	if !r.ok {
		return
	}
	kind, qp := mem.KindMW1, uint32(0)
	if r.type2 {
		kind, qp = mem.KindMW2, r.qp
	}
	c := img.Entries[r.mr>>8]
	r.win = stagtab.Command{Kind: stagtab.CmdCommit, Index: idx, Paged: ptr.Paged,
		Entry: mem.Entry{Valid: true, Key: mem.STag(r.stag).Key(), Kind: kind, PD: r.pd, QP: qp, Base: r.addr, Length: r.n, Access: r.access}}
	v := ptr.Addr + (r.addr - p.Base)
	if ptr.Paged {
		r.win.Addr, r.win.PBL = v%4096, uint32((uint64(c.PBL)+v/4096)%uint64(img.PBLDepth))
	} else {
		r.win.Addr = v
	}
}

// apply makes r's effect on the mirror.
func (r *mopReq) apply(img *stagtab.Image) {
	switch {
	case !r.ok:
	case r.bind:
		img.Entries[r.win.Index] = r.win
	default:
		c := img.Entries[r.stag>>8]
		c.Entry.Valid = false
		img.Entries[r.stag>>8] = c
	}
}
