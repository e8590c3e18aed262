//go:build cosim

package simcard_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/host/driver/simcard"
	"github.com/openiwarp/openiwarp/host/verbs"
	"github.com/openiwarp/openiwarp/host/verbs/verbstest"
)

// logTotals logs what the sim cards did since before, and the
// disagreements found since (up to the process's first 256).
func logTotals(t *testing.T, before simcard.Totals) simcard.Totals {
	n := simcard.ProcessTotals()
	d := simcard.Totals{Cycles: n.Cycles - before.Cycles, Checked: n.Checked - before.Checked, Bytes: n.Bytes - before.Bytes, Mismatches: n.Mismatches - before.Mismatches}
	t.Logf("RTL: %d cycles; %d DMA writes checked against the card model (%d stream and payload bytes); %d mismatches", d.Cycles, d.Checked, d.Bytes, d.Mismatches)
	if d.Mismatches > 0 {
		ms := simcard.ProcessMismatches()
		for _, e := range ms[max(0, len(ms)-int(d.Mismatches)):] {
			t.Logf("mismatch: %v", e)
		}
	}
	return d
}

// Every operation on the Verilated card, at both widths, either does
// what it should (the completion, and the bytes at the other end) or
// ends its QP with a *MismatchError naming what the RTL did not do; none
// hangs and none reports a success the RTL did not earn. The log says
// which.
func TestRTLOperationEndsOrFails(t *testing.T) {
	for _, w := range []int{64, 512} {
		for _, op := range []string{"inline-write", "write", "send", "read"} {
			t.Run(fmt.Sprintf("%d/%s", w, op), func(t *testing.T) {
				before := simcard.ProcessTotals()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				a, b := verbstest.Pair(t, ctx, fmt.Sprintf("sim:%d", w), 4096)
				n := 200
				for i := range a.Buf[:n] {
					a.Buf[i], b.Buf[i] = byte(i*7+1), byte(i*5+3)
				}
				src, dst := a.Buf[:n], b.Buf[:n]
				wr := verbs.SendWR{ID: 1, Signaled: true, SGL: []verbs.SGE{a.MR.SGE(0, n)}, RemoteAddr: b.MR.Addr(), RKey: b.MR.RKey()}
				switch op {
				case "inline-write":
					wr.Opcode, wr.SGL, wr.Inline = verbs.WRRDMAWrite, nil, a.Buf[:n]
				case "write":
					wr.Opcode = verbs.WRRDMAWrite
				case "send":
					wr.Opcode = verbs.WRSend
					require.NoError(t, b.QP.PostRecv(verbs.RecvWR{ID: 2, SGL: []verbs.SGE{b.MR.SGE(0, n)}}))
				case "read":
					wr.Opcode = verbs.WRRDMARead
					src, dst = b.Buf[:n], a.Buf[:n]
				}
				require.NoError(t, a.QP.PostSend(wr))
				done := make(chan error, 1)
				go func() {
					wc, err := a.CQ.Wait(ctx)
					if err == nil && wc.Status != verbs.WCSuccess {
						err = fmt.Errorf("completion %v", wc.Status)
					}
					for err == nil && !bytes.Equal(src, dst) && ctx.Err() == nil {
						time.Sleep(time.Millisecond)
					}
					done <- err
				}()
				var err error
				select {
				case err = <-done:
				case <-a.QP.Done():
					err = mismatchOf(ctx, a.QP, b.QP)
				case <-b.QP.Done():
					err = mismatchOf(ctx, b.QP, a.QP)
				case <-ctx.Done():
					t.Fatalf("%s: neither done nor failed: a hang", op)
				}
				d := logTotals(t, before)
				if err == nil {
					require.Equal(t, src, dst, "a completed %s moved the bytes", op)
					if d.Mismatches == 0 {
						t.Logf("%s: served by the RTL, bytes verified", op)
					} else {
						t.Logf("%s: the RTL moved the bytes (verified), but the checker ended a QP: %v / %v", op, a.QP.Err(), b.QP.Err())
					}
					return
				}
				var me *simcard.MismatchError
				require.True(t, errors.As(err, &me), "%s failed without naming the transaction: %v", op, err)
				require.NotZero(t, d.Mismatches)
				t.Logf("%s: not served by the RTL: %v", op, me)
			})
		}
	}
}

// mismatchOf is the error of a pair whose QP first ended: the checker's
// mismatch if either QP has one. The checker stops one QP, whose peer then
// loses its connection; which of the two ends is seen first depends on the
// scheduler, so the other is given until ctx ends to report its cause.
func mismatchOf(ctx context.Context, first, other *verbs.QP) error {
	var me *simcard.MismatchError
	if err := first.Err(); err == nil || errors.As(err, &me) {
		return err
	}
	select {
	case <-other.Done():
		if err := other.Err(); errors.As(err, &me) {
			return err
		}
	case <-ctx.Done():
	}
	return first.Err()
}

var (
	suiteWidth = flag.Int("sim.width", simcard.DefaultWidth, "data path width of TestSuiteSim's card (64 or 512)")
	suiteMax   = flag.Int("sim.max", 16<<20, "largest message of TestSuiteSim (bytes)")
	suiteQPs   = flag.Int("sim.qps", 16, "connections at once in TestSuiteSim's ManyQPs")
)

// TestSuiteSim runs the whole verbs suite on the sim card (at
// -sim.width): every size from 0 B to -sim.max (16 MiB by default),
// -sim.qps connections at once in ManyQPs. It is the proof (make
// test-host-sim runs it at both widths; the report names what fails).
func TestSuiteSim(t *testing.T) {
	before := simcard.ProcessTotals()
	dev := "sim"
	if *suiteWidth != simcard.DefaultWidth {
		dev = fmt.Sprintf("sim:%d", *suiteWidth)
	}
	verbstest.Run(t, dev, verbstest.Options{MaxSize: *suiteMax, QPs: *suiteQPs})
	logTotals(t, before)
}

// TestRTLLongMessage: messages longer than the stream rings go through
// the driver and the RTL whole. Two QPs of the sim card with 8 KiB rings
// move an RDMA Write, a Send and an RDMA Read of 40 KiB each (five times
// the ring; every DMA write checked against the card model), bytes
// verified. Before 27 Nov the RTL published TXS_PI only at a message's
// end, so such a message waited for ring space for ever.
func TestRTLLongMessage(t *testing.T) {
	for _, w := range []int{64, 512} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			before := simcard.ProcessTotals()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			const n = 40 << 10
			a, b := verbstest.Pair(t, ctx, fmt.Sprintf("sim:%d,ring=8192", w), n)
			for i, op := range []verbs.WROpcode{verbs.WRRDMAWrite, verbs.WRSend, verbs.WRRDMARead} {
				for j := range n {
					a.Buf[j], b.Buf[j] = byte(i+j*7+1), byte(i+j*5+3)
				}
				src, dst := a.Buf[:n], b.Buf[:n]
				wr := verbs.SendWR{ID: uint64(i), Opcode: op, Signaled: true, SGL: []verbs.SGE{a.MR.SGE(0, n)}, RemoteAddr: b.MR.Addr(), RKey: b.MR.RKey()}
				switch op {
				case verbs.WRSend:
					require.NoError(t, b.QP.PostRecv(verbs.RecvWR{ID: 100, SGL: []verbs.SGE{b.MR.SGE(0, n)}}))
				case verbs.WRRDMARead:
					src, dst = b.Buf[:n], a.Buf[:n]
				}
				want := append([]byte(nil), src...)
				require.NoError(t, a.QP.PostSend(wr))
				wc, err := a.CQ.Wait(ctx)
				require.NoError(t, err, "%v: %v / %v", op, a.QP.Err(), b.QP.Err())
				require.Equal(t, verbs.WCSuccess, wc.Status, "%v", op)
				if op == verbs.WRSend {
					wc, err = b.CQ.Wait(ctx)
					require.NoError(t, err, "%v: the receive", op)
					require.Equal(t, verbs.WCSuccess, wc.Status)
					require.EqualValues(t, n, wc.ByteLen)
				}
				for !bytes.Equal(want, dst) && ctx.Err() == nil {
					time.Sleep(time.Millisecond) // a Write completes once sent: its bytes land at the peer a little later
				}
				require.Equal(t, want, dst, "%v: the bytes", op)
			}
			d := logTotals(t, before)
			require.Zero(t, d.Mismatches, "the checker disagreed with the RTL")
		})
	}
}
