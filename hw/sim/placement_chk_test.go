package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	pr "github.com/openiwarp/openiwarp/host/driver/regs"
	"github.com/openiwarp/openiwarp/host/driver/stagtab"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// chkReq is one request to placement's check port, with the verdict the
// table's mirror gives when it is accepted.
type chkReq struct {
	stag, pd, qp uint32
	need         mem.Access
	to           uint64
	n            uint32
	tag          uint8
	fault        uint64
	addr         uint64
	run          uint32
}

// chkExpect is mem.Check on the mirror's entry, and the translation of TO
// (the region's host address, or its page's) with the bytes contiguous
// from there.
func chkExpect(img *stagtab.Image, r *chkReq) {
	idx := r.stag >> 8
	e, tr, ok := img.Lookup(idx)
	var ep *mem.Entry
	if ok && idx < uint32(img.TableDepth) {
		ep = &e
	}
	use, ok := map[mem.Access]mem.Use{0: mem.UseLocalRead, mem.LocalWrite: mem.UseLocalWrite, mem.RemoteRead: mem.UseRemoteRead, mem.RemoteWrite: mem.UseRemoteWrite}[r.need]
	if !ok {
		use = mem.UseLocalRead // bind: no Use asks for it; the rights come before the range
	}
	f := mem.Check(ep, mem.Request{STag: mem.STag(r.stag), PD: r.pd, QP: r.qp, TO: r.to, Len: uint64(r.n), Use: use})
	if r.need == mem.Bind && (f == mem.OK || f == mem.TOWrap || f == mem.BaseBounds) && e.Access&mem.Bind == 0 {
		f = mem.AccessRights
	}
	r.fault, r.addr, r.run = uint64(f), 0, 0
	if f != mem.OK {
		return
	}
	v := tr.Addr + (r.to - e.Base)
	r.addr, r.run = v, r.n
	if tr.Paged {
		r.addr = tr.Pages[v>>12] + v&4095
		r.run = min(r.n, uint32(4096-v&4095))
	}
}

// Placement's check port (s_chk/m_chk) against mem.Check on a mirror of the
// table (stagtab.Image decoding the same register writes): random regions,
// contiguous and paged, registered, re-registered and invalidated while
// requests stream in; requests near the bounds, with wrong keys, PDs, QPs
// and rights; random valid gaps and m_chk_ready. Every verdict, tag,
// address and run is compared in order.
func TestPlacementCheckPort(t *testing.T) {
	for _, w := range []int{64, 512} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			rng := NewRand(seed)
			cfg := gen.PlacementDefault(w)
			m, err := gen.Placement(cfg)
			require.NoError(t, err)
			l := LayoutOf(m)
			path := LibPath(m.Name, false)
			require.NoError(t, Build(path))
			lib, err := Load(path)
			require.NoError(t, err)
			inst := lib.New()
			defer inst.Close()
			in, out := make([]uint32, l.InWords), make([]uint32, l.OutWords)
			port := func(name string) Port {
				p, err := l.In(name)
				if err != nil {
					p, err = l.Out(name)
				}
				require.NoError(t, err, name)
				return p
			}
			step := func() { require.NoError(t, inst.Run(in, out)) }
			for _, n := range []string{"m_dma_ready", "m_host_tready", "m_term_ready", "m_done_ready"} {
				port(n).Set(in, 1)
			}
			port("rst").Set(in, 1)
			step()
			port("rst").Set(in, 0)
			for guard := 0; port("init_done").Get(out) == 0; guard++ {
				require.Less(t, guard, 2*cfg.TableDepth, "init_done never rose")
				step()
			}

			img := stagtab.NewImage(cfg.TableDepth, cfg.PBLDepth)
			var writes []stagtab.Write
			const nIdx = 24 // indices in use: collisions with re-registration on purpose
			slot := uint32(0)
			register := func() {
				idx := uint32(rng.IntN(nIdx))
				e := mem.Entry{Valid: !rng.Chance(20), Key: uint8(rng.IntN(4)), PD: uint32(1 + rng.IntN(3)),
					Base: uint64(rng.IntN(1 << 20)), Length: uint64(1 + rng.IntN(20000)), Access: mem.Access(rng.IntN(16))}
				if rng.Chance(40) {
					e.QP = uint32(1 + rng.IntN(3))
				}
				var tr stagtab.Translation
				if rng.Chance(128) {
					off := uint64(rng.IntN(4096))
					pages := make([]uint64, stagtab.PagesFor(off, e.Length))
					for k := range pages {
						pages[k] = uint64(0x100000+rng.IntN(1<<20)) << 12
					}
					tr = stagtab.Paged(off, pages)
				} else {
					tr = stagtab.Contiguous(uint64(rng.Uint32()) << 8 >> uint(rng.IntN(8)))
				}
				writes = stagtab.AppendWrites(writes, idx, e, tr, slot)
				slot = (slot + uint32(len(tr.Pages))) % uint32(cfg.PBLDepth)
			}
			invalidate := func() {
				writes = append(writes, stagtab.Write{Off: pr.StagInvalidate, Val: uint32(rng.IntN(nIdx))})
			}
			for i := 0; i < nIdx; i++ {
				register()
			}
			newReq := func(tag uint8) *chkReq {
				r := &chkReq{stag: uint32(rng.IntN(nIdx+8))<<8 | uint32(rng.IntN(4)), pd: uint32(1 + rng.IntN(3)), qp: uint32(1 + rng.IntN(3)), tag: tag}
				if e, _, ok := img.Lookup(r.stag >> 8); ok && e.Kind != mem.KindMR && rng.Chance(128) {
					r.stag, r.pd, r.qp = r.stag&^0xff|uint32(e.Key), e.PD, max(e.QP, r.qp) // a window, mostly usable
				}
				if rng.Chance(8) {
					r.stag = rng.Uint32() // mostly past the table
				}
				r.need = []mem.Access{0, 0, 0, mem.LocalWrite, mem.RemoteRead, mem.RemoteWrite, mem.Bind}[rng.IntN(7)]
				e, _, ok := img.Lookup(r.stag >> 8)
				base, length := uint64(0), uint64(4096)
				if ok {
					base, length = e.Base, e.Length
				}
				switch rng.IntN(4) {
				case 0: // anywhere in or near the region
					r.to = base + uint64(rng.IntN(int(length)+64)) - 32
					r.n = uint32(rng.IntN(int(length)/2 + 2))
				case 1: // ending exactly at the end, or one past it
					r.n = uint32(1 + rng.IntN(int(length)))
					r.to = base + length - uint64(r.n) + uint64(rng.IntN(2))
				case 2: // wrapping 2^64
					r.to = ^uint64(0) - uint64(rng.IntN(100))
					r.n = uint32(1 + rng.IntN(1000))
				default: // small, inside
					r.to = base + uint64(rng.IntN(int(length)))
					r.n = uint32(min(uint64(1+rng.IntN(300)), base+length-r.to))
				}
				if r.n == 0 && r.need != 0 && r.need != mem.LocalWrite {
					r.n = 1 // the port checks zero-length remote requests; mem.Check does not
				}
				return r
			}

			var pending []*chkReq // accepted, verdict not yet seen
			var next *chkReq
			var mop *mopReq // offered to s_mop, or taken and not yet answered
			mopTaken, mopAt := false, 0
			mops := map[string]int{}
			windowUse := map[bool]int{} // requests at a valid window's key: remote, local
			checked, faults := 0, map[uint64]int{}
			const total = 6000
			tag := uint8(0)
			for cycle := 0; checked < total; cycle++ {
				require.Less(t, cycle, 200*total, "seed %d: check port stuck with %d verdicts pending", seed, len(pending))
				if len(writes) == 0 && rng.Chance(6) {
					if rng.Chance(128) {
						invalidate()
					} else {
						register()
					}
				}
				// Register write this cycle: seen by requests accepted from
				// the next one. None while a memory operation is under way:
				// one to the entries it reads would race with it (the
				// card's driver never does that).
				if len(writes) > 0 && mop == nil && rng.Chance(160) {
					port("reg_wr_valid").Set(in, 1)
					port("reg_wr_addr").Set(in, uint64(writes[0].Off))
					port("reg_wr_data").Set(in, uint64(writes[0].Val))
				} else {
					port("reg_wr_valid").Set(in, 0)
				}
				// A memory operation now and then in place of a request: the
				// port takes it once the requests before it have their verdicts.
				if next == nil && mop == nil && rng.Chance(200) {
					if rng.Chance(40) {
						mop, mopTaken = newMop(rng, img, nIdx), false
					} else {
						next = newReq(tag)
						tag++
					}
				}
				mopOffer(port, in, mop, mopTaken)
				if next != nil {
					port("s_chk_valid").Set(in, 1)
					port("s_chk_stag").Set(in, uint64(next.stag))
					port("s_chk_pd").Set(in, uint64(next.pd))
					port("s_chk_qp").Set(in, uint64(next.qp))
					port("s_chk_need").Set(in, uint64(next.need))
					port("s_chk_to").Set(in, next.to)
					port("s_chk_len").Set(in, uint64(next.n))
					port("s_chk_tag").Set(in, uint64(next.tag))
				} else {
					port("s_chk_valid").Set(in, 0)
				}
				ready := rng.Chance(180)
				port("m_chk_ready").Set(in, b2u(ready))
				step() // out: what the block showed during this cycle
				accepted := next != nil && port("s_chk_ready").Get(out) == 1
				if mop != nil && !mopTaken && port("s_mop_ready").Get(out) == 1 {
					mopTaken, mopAt = true, cycle
					mop.expect(img)
				}
				if port("m_mop_valid").Get(out) == 1 {
					require.True(t, mopTaken, "seed %d: cycle %d: a memory operation's answer nobody asked for", seed, cycle)
					// No register write while it is under way: the documented latency.
					lat := map[bool]int{false: gen.PlacementMopInvLatency, true: gen.PlacementMopBindLatency}[mop.bind]
					require.Equal(t, lat, cycle-mopAt, "seed %d: cycle %d: latency of memory operation %+v", seed, cycle, *mop)
					require.Equal(t, mop.ok, port("m_mop_ok").Get(out) == 1, "seed %d: cycle %d: memory operation %+v", seed, cycle, *mop)
					mop.apply(img)
					mops[mop.String()]++
					if mop.ok && !mop.bind {
						register() // keep the table's regions alive
					}
					mop = nil
				}
				if port("m_chk_valid").Get(out) == 1 && ready {
					require.NotEmpty(t, pending, "seed %d: a verdict nobody asked for", seed)
					r := pending[0]
					pending = pending[1:]
					got := [4]uint64{port("m_chk_tag").Get(out), port("m_chk_fault").Get(out), port("m_chk_addr").Get(out), port("m_chk_run").Get(out)}
					want := [4]uint64{uint64(r.tag), r.fault, r.addr, uint64(r.run)}
					require.Equal(t, want, got, "seed %d: cycle %d, request %+v: {tag, fault, addr, run}", seed, cycle, *r)
					checked++
					faults[r.fault]++
				}
				if accepted {
					if e, _, ok := img.Lookup(next.stag >> 8); ok && e.Kind != mem.KindMR && e.Valid && e.Key == mem.STag(next.stag).Key() {
						windowUse[next.need&(mem.RemoteRead|mem.RemoteWrite) != 0]++
					}
					chkExpect(img, next)
					pending = append(pending, next)
					next = nil
				}
				if port("reg_wr_valid").Get(in) == 1 {
					img.Write(writes[0].Off, writes[0].Val)
					writes = writes[1:]
				}
			}
			for f := uint64(0); f <= 5; f++ {
				require.Positive(t, faults[f], "seed %d: no verdict %d (%s) was exercised", seed, f, mem.Fault(f))
			}
			for _, k := range []string{"invalidate ok", "invalidate refused", "bind ok", "bind refused"} {
				require.Positive(t, mops[k], "seed %d: no %s was exercised (%v)", seed, k, mops)
			}
			require.Positive(t, windowUse[true], "seed %d: no remote request through a window", seed)
			require.Positive(t, windowUse[false], "seed %d: no local request through a window", seed)
			t.Logf("seed %d: %d verdicts checked, by fault %v; memory operations %v; requests through windows (remote, local) %d, %d",
				seed, checked, faults, mops, windowUse[true], windowUse[false])
		})
	}
}
