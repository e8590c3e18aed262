package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/cycle"
	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/host/driver/stagtab"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// engineWrite programs entry e at index through the engine's register port
// with the driver's encoder.
func engineWrite(t *testing.T, e *PlacementEngine, index uint32, ent mem.Entry, tr stagtab.Translation) {
	for _, w := range stagtab.AppendWrites(nil, index, ent, tr, 0) {
		require.NoError(t, e.RegWrite(w.Off, w.Val))
	}
}

// The exported engine places what the RTL places: an RDMA Write's payload
// lands, through DMA writes, exactly at the translated host address; a
// Read Response with L=1 is reported done; an untagged Send comes out on
// the host queue with its parsed header; a segment with a wrong key writes
// nothing and raises the Terminate golden/iwarp would send. Every cycle is
// checked against the cycle model (a difference would be an error).
func TestPlacementEngine(t *testing.T) {
	for _, w := range gen.PlacementWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			b, err := LoadPlacement(gen.PlacementDefault(w))
			require.NoError(t, err)
			e, err := b.NewEngine()
			require.NoError(t, err)
			defer e.Close()
			require.True(t, e.InitDone())
			require.Greater(t, e.Cycles(), uint64(b.Config.TableDepth), "the reset sweep is run and checked")

			ent := mem.Entry{Valid: true, Key: 0x5a, PD: 7, Base: 0x1000, Length: 5000, Access: mem.RemoteWrite | mem.LocalWrite}
			const host = 0x7_0000_0013 // not block aligned: the RTL realigns
			engineWrite(t, e, 9, ent, stagtab.Contiguous(host))
			res, err := e.Flush()
			require.NoError(t, err)
			require.Empty(t, res.DMA)
			require.Equal(t, uint64(12+cycle.PlacementLatency+2), res.Cycles, "one cycle per register write, then the drain")

			rng := NewRand(seedFor(t.Name()))
			payload := NewPool(rng, 3000)[:2999]
			const to = 0x1000 + 777
			write := ddp.TaggedFields{Last: true, Version: ddp.Version1, RsvdULP: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpWrite)),
				STag: uint32(mem.MakeSTag(9, 0x5a)), TO: to}.Append(nil)
			write = append(write, payload...)
			res, err = e.Place(PlacementSegment{ULPDU: write, QP: 3, PD: 7, Rev: true})
			require.NoError(t, err)
			require.Empty(t, res.Terms)
			hostMem := map[uint64]byte{}
			for _, d := range res.DMA {
				require.Zero(t, d.Addr%uint64(w/8), "block aligned")
				for i := range d.Data {
					if d.Strb>>i&1 != 0 {
						_, dup := hostMem[d.Addr+uint64(i)]
						require.False(t, dup, "byte %#x written twice", d.Addr+uint64(i))
						hostMem[d.Addr+uint64(i)] = d.Data[i]
					}
				}
			}
			require.Len(t, hostMem, len(payload))
			for i, v := range payload {
				require.Equal(t, v, hostMem[host+777+uint64(i)], "payload byte %d", i)
			}

			// A Read Response with L=1: placed, then reported done.
			resp := ddp.TaggedFields{Last: true, Version: ddp.Version1, RsvdULP: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpReadResponse)),
				STag: uint32(mem.MakeSTag(9, 0x5a)), TO: 0x1000}.Append(nil)
			resp = append(resp, payload[:100]...)
			// An untagged Send with Invalidate and a Write with a stale key, back to back.
			send := ddp.UntaggedFields{Last: true, Version: ddp.Version1, RsvdULP0: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpSendInvalidate)),
				RsvdULP1: 0xabcdef01, QN: 0, MSN: 5, MO: 0}.Append(nil)
			send = append(send, "hello"...)
			stale := append([]byte(nil), write[:64]...)
			stale[5] ^= 0xff // the STag's key byte (bytes 2-5 are the STag, big-endian)
			res, err = e.Place(PlacementSegment{ULPDU: resp, QP: 3, PD: 7, Rev: true}, PlacementSegment{ULPDU: send, QP: 4, PD: 7, Rev: true},
				PlacementSegment{ULPDU: stale, QP: 3, PD: 7, Rev: true})
			require.NoError(t, err)
			require.Equal(t, []PlacementDone{{QP: 3, STag: uint32(mem.MakeSTag(9, 0x5a)), TO: 0x1000, Len: uint16(len(resp))}}, res.Dones)
			require.Len(t, res.Host, 1)
			h := res.Host[0]
			assert.Equal(t, send, h.Data)
			assert.Equal(t, PlacementHost{QP: 4, Len: uint16(len(send)), Data: h.Data, Opcode: rdmap.OpSendInvalidate, Last: true, MSN: 5, Inv: 0xabcdef01}, h)
			require.Len(t, res.Terms, 1)
			term := res.Terms[0]
			assert.Equal(t, rdmap.DDPInvalidSTag, term.Cause)
			assert.Equal(t, uint32(3), term.QP)
			assert.Equal(t, uint16(64), term.SegLen)
			assert.Equal(t, stale[:cycle.PlacementHdrBytes], term.Hdr[:])
			wantM, wantD, wantR := rdmap.DDPInvalidSTag.Headers(rdmap.OpWrite)
			assert.Equal(t, [3]bool{wantM, wantD, wantR}, [3]bool{term.M, term.D, term.R})
			for _, d := range res.DMA {
				assert.Less(t, d.Addr, uint64(host+100+uint64(w/8)), "only the Read Response's 100 bytes are written")
			}

			// Bad input is refused before a cycle runs.
			_, err = e.Place(PlacementSegment{})
			require.ErrorIs(t, err, ErrPlacementInput)
			require.ErrorIs(t, e.RegWrite(0x101, 0), ErrPlacementInput)
		})
	}
}

// A model out of step with the RTL is caught on the port that shows it,
// and the engine refuses to run afterwards.
func TestPlacementEngineMismatchIsCaught(t *testing.T) {
	b, err := LoadPlacement(gen.PlacementDefault(64))
	require.NoError(t, err)
	e, err := b.NewEngine()
	require.NoError(t, err)
	defer e.Close()
	engineWrite(t, e, 1, mem.Entry{Valid: true, PD: 1, Length: 100, Access: mem.RemoteWrite}, stagtab.Contiguous(0x2000))
	seg := ddp.TaggedFields{Last: true, Version: ddp.Version1, RsvdULP: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpWrite)),
		STag: uint32(mem.MakeSTag(1, 0))}.Append(nil)
	seg = append(seg, make([]byte, 50)...)
	_, err = e.Place(PlacementSegment{ULPDU: seg, QP: 1, PD: 1, Rev: true})
	require.NoError(t, err)
	// The model alone invalidates the entry.
	e.model.m.Step(cycle.PlacementIn{Data: make([]byte, 8), Cmd: cycle.PlacementCmd{Kind: cycle.CmdInvalidate, Index: 1},
		DMAReady: true, HostReady: true, TermReady: true, DoneReady: true})
	_, err = e.Place(PlacementSegment{ULPDU: seg, QP: 1, PD: 1, Rev: true})
	var m *Mismatch
	require.ErrorAs(t, err, &m)
	require.Equal(t, "placement_w64", m.Block)
	t.Log(m.Error())
	_, err = e.Place(PlacementSegment{ULPDU: seg, QP: 1, PD: 1, Rev: true})
	require.ErrorAs(t, err, &m, "a failed engine stays failed")
}

// An RDMA Write through the Verilated placement engine, every cycle
// checked against its cycle model: the STag table entry is programmed
// through the register map, the segment's payload comes out as DMA writes.
func ExamplePlacementBlock_NewEngine() {
	b, err := LoadPlacement(gen.PlacementDefault(64))
	if err != nil {
		fmt.Println(err)
		return
	}
	e, err := b.NewEngine()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close()
	region := mem.Entry{Valid: true, Key: 0x42, PD: 1, Base: 0, Length: 4096, Access: mem.RemoteWrite}
	for _, w := range stagtab.AppendWrites(nil, 5, region, stagtab.Contiguous(0x10000), 0) {
		if err := e.RegWrite(w.Off, w.Val); err != nil {
			fmt.Println(err)
			return
		}
	}
	seg := ddp.TaggedFields{Last: true, Version: ddp.Version1, RsvdULP: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpWrite)),
		STag: uint32(mem.MakeSTag(5, 0x42)), TO: 8}.Append(nil)
	seg = append(seg, "sixteen bytes..."...)
	res, err := e.Place(PlacementSegment{ULPDU: seg, QP: 1, PD: 1, Rev: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range res.DMA {
		fmt.Printf("DMA %#x strobes %08b %q\n", d.Addr, d.Strb, d.Data)
	}
	fmt.Println("Terminates:", len(res.Terms))
	// Output:
	// DMA 0x10008 strobes 11111111 "sixteen "
	// DMA 0x10010 strobes 11111111 "bytes..."
	// Terminates: 0
}
