package sim

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// ddp_tx's RTL matches its cycle model (golden/ddp's header encoders for
// the data) on every output of every cycle.
func TestDDPTxCosim(t *testing.T) {
	for _, w := range gen.DDPTxWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			b, err := DDPTxBench(w)
			require.NoError(t, err)
			seed := seedFor(t.Name())
			st, err := b.Run(seed, *cosimCycles)
			require.NoError(t, err, "seed %d (rerun with -cosim.seed=%d)", seed, seed)
			assert.Greater(t, st.Emitted["m_axis_tvalid"], st.Cycles/10, "seed %d", seed)
			t.Logf("%s: %d cycles, %.2f M cycles/s, %d payload beats in, %d segment beats out", b.Module.Name,
				st.Cycles, st.CyclesPerSecond()/1e6, st.Accepted["s_axis_tvalid"], st.Emitted["m_axis_tvalid"])
		})
	}
}

// The segments the RTL emits, parsed by golden/ddp, are the messages that
// went in: per message, segments no longer than the MULPDU, the L bit on
// the last one only, TO (tagged) or MO (untagged) advancing by the payload,
// every other header field as described, and the payload in order.
func TestDDPTxSegmentsParse(t *testing.T) {
	for _, w := range []int{64, 512} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			b, err := DDPTxBench(w)
			require.NoError(t, err)
			var drv *ddpTxDriver
			b.NewDriver = func(seed uint64) Driver {
				drv = newDDPTxDriver(b.Layout, seed, false).(*ddpTxDriver)
				drv.noReset, drv.record = true, true
				return drv
			}
			p, err := lookupDDPTxPorts(b.Layout)
			require.NoError(t, err)
			lanes := w / 8
			beat := make([]byte, lanes)
			var seg, msgPay []byte
			msg, segs, checked := 0, 0, 0
			var failure error
			check := func(cond bool, format string, a ...any) {
				if !cond && failure == nil {
					failure = fmt.Errorf("message %d segment %d: "+format, append([]any{msg, segs}, a...)...)
				}
			}
			b.Tap = func(in, got []uint32) {
				if failure != nil || p.mValid.Get(got) == 0 || p.mReady.Get(in) == 0 {
					return
				}
				p.mData.Bytes(got, beat)
				keep := p.mKeep.Get(got)
				n := 0
				for keep>>n&1 != 0 {
					n++
				}
				check(keep == 1<<n-1 || n == 64, "tkeep %#x not contiguous", keep)
				seg = append(seg, beat[:n]...)
				if p.mLast.Get(got) == 0 {
					return
				}
				m := drv.sent[msg]
				d := m.desc
				check(int(p.mLen.Get(got)) == len(seg), "tuser_len %d, segment of %d octets", p.mLen.Get(got), len(seg))
				check(len(seg) <= d.MULPDU, "segment of %d octets over MULPDU %d", len(seg), d.MULPDU)
				check(uint16(p.mUser.Get(got)) == d.User, "user %#x, want %#x", p.mUser.Get(got), d.User)
				s, err := ddp.Parse(seg)
				check(err == nil, "%v", err)
				if err == nil {
					c := s.Control
					off := uint64(len(msgPay))
					check(c.Tagged() == d.Tagged && c.Version() == d.DV && s.RsvdULP0() == d.RDMAP, "control %v, RDMAP %#x", c, s.RsvdULP0())
					if d.Tagged {
						h := s.Tagged()
						check(h.STag() == d.STag && h.TO() == d.TO+off, "STag %#x TO %#x, want %#x %#x", h.STag(), h.TO(), d.STag, d.TO+off)
					} else {
						h := s.Untagged()
						check(h.RsvdULP1() == d.STag && h.QN() == d.QN && h.MSN() == d.MSN && uint64(h.MO()) == off,
							"ULP1 %#x QN %d MSN %d MO %d", h.RsvdULP1(), h.QN(), h.MSN(), h.MO())
					}
					msgPay = append(msgPay, s.Payload...)
					last := uint64(len(msgPay)) == uint64(len(m.payload))
					check(c.Last() == last && (p.mMsg.Get(got) != 0) == last, "L bit %v at %d of %d octets", c.Last(), len(msgPay), len(m.payload))
					check(last || len(seg) == d.MULPDU, "a segment before the last one is short: %d of %d", len(seg), d.MULPDU)
					if last {
						check(bytes.Equal(msgPay, m.payload), "payload differs")
						msg, segs, msgPay = msg+1, -1, msgPay[:0]
						checked++
					}
				}
				segs++
				seg = seg[:0]
			}
			seed := seedFor(t.Name())
			_, err = b.Run(seed, 300000)
			require.NoError(t, err, "seed %d", seed)
			require.NoError(t, failure, "seed %d", seed)
			assert.Greater(t, checked, 100, "seed %d: messages checked", seed)
			t.Logf("%d messages reassembled from the RTL's segments", checked)
		})
	}
}

// ddp_tx's VHDL at two widths, under the generated test bench.
func TestDDPTxGHDL(t *testing.T) {
	runGHDL(t, DDPTxBench, []int{64, 128}, 30000)
}
