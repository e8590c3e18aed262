package cycle

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/ddp"
)

// runDDPTx feeds messages (descriptors and payloads) to a model at full
// speed until it has emitted nsegs segments, and returns them and the
// cycles they took.
func runDDPTx(t *testing.T, width int, descs []DDPTxDesc, pays [][]byte, nsegs int) ([][]byte, int) {
	t.Helper()
	m, err := NewDDPTx(width)
	require.NoError(t, err)
	L := width / 8
	var stream []struct {
		data []byte
		last bool
	}
	for _, p := range pays {
		for off := 0; off < len(p); off += L {
			beat := make([]byte, L)
			copy(beat, p[off:])
			stream = append(stream, struct {
				data []byte
				last bool
			}{beat, off+L >= len(p)})
		}
	}
	var segs [][]byte
	var cur []byte
	in, out := &DDPTxIn{MReady: true}, &DDPTxOut{}
	cycles := 0
	for cycles = 0; cycles < 1_000_000 && len(segs) < nsegs; cycles++ {
		in.DescValid = len(descs) > 0
		if in.DescValid {
			in.Desc = descs[0]
		}
		in.Valid = len(stream) > 0
		if in.Valid {
			in.Data, in.Last = stream[0].data, stream[0].last
		}
		m.Step(in, out)
		if out.Valid {
			for i := 0; i < L && out.Keep>>i&1 != 0; i++ {
				cur = append(cur, out.Data[i])
			}
			if out.Last {
				segs, cur = append(segs, cur), nil
			}
		}
		if in.DescValid && out.DescReady {
			descs = descs[1:]
		}
		if in.Valid && out.SReady {
			stream = stream[1:]
		}
	}
	return segs, cycles
}

// One RDMA Write of 3000 octets at MULPDU 1024 and one zero-length Send come
// out as golden/ddp frames them, at every width.
func TestDDPTxSegments(t *testing.T) {
	pay := make([]byte, 3000)
	for i := range pay {
		pay[i] = byte(i * 7)
	}
	write := DDPTxDesc{Tagged: true, RDMAP: 0x40, DV: ddp.Version1, STag: 0x1234, TO: 0xFFFF_FFFF_FFFF_FF00, Len: 3000, MULPDU: 1024, User: 9}
	send := DDPTxDesc{RDMAP: 0x43, DV: ddp.Version1, STag: 0, QN: 0, MSN: 7, Len: 0, MULPDU: 1024, User: 9}
	var want [][]byte
	for off := 0; off < 3000; off += 1024 - ddp.TaggedHeaderLen {
		n := min(1024-ddp.TaggedHeaderLen, 3000-off)
		h := ddp.TaggedFields{Last: off+n == 3000, Version: ddp.Version1, RsvdULP: 0x40, STag: 0x1234, TO: write.TO + uint64(off)}.Append(nil)
		want = append(want, append(h, pay[off:off+n]...))
	}
	want = append(want, ddp.UntaggedFields{Last: true, Version: ddp.Version1, RsvdULP0: 0x43, MSN: 7}.Append(nil))
	for _, w := range []int{64, 128, 256, 512} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			segs, _ := runDDPTx(t, w, []DDPTxDesc{write, send}, [][]byte{pay}, len(want))
			require.Len(t, segs, len(want))
			for i := range want {
				assert.True(t, bytes.Equal(want[i], segs[i]), "segment %d", i)
			}
		})
	}
}

// At full speed the output moves a beat every cycle once started: a stream
// of 4 KiB RDMA Writes at 512 bits takes about as many cycles as beats.
func TestDDPTxFullSpeed(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var descs []DDPTxDesc
	var pays [][]byte
	beats := 0
	for i := 0; i < 50; i++ {
		p := make([]byte, 4096)
		for j := range p {
			p[j] = byte(rng.Uint32())
		}
		descs = append(descs, DDPTxDesc{Tagged: true, DV: ddp.Version1, Len: 4096, MULPDU: 1432})
		pays = append(pays, p)
		for off := 0; off < 4096; off += 1432 - ddp.TaggedHeaderLen {
			n := min(1432-ddp.TaggedHeaderLen, 4096-off)
			beats += (n + ddp.TaggedHeaderLen + 63) / 64
		}
	}
	segs, cycles := runDDPTx(t, 512, descs, pays, 150)
	require.Len(t, segs, 150)
	assert.LessOrEqual(t, cycles, beats+8, "%d beats took %d cycles", beats, cycles)
}

func TestDDPTxWidths(t *testing.T) {
	for _, w := range []int{0, 32, 96, 1024} {
		_, err := NewDDPTx(w)
		assert.Error(t, err, "width %d", w)
	}
}
