package simcard_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/host/driver"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/host/driver/rnic"
	"github.com/openiwarp/openiwarp/host/driver/simcard"
	"github.com/openiwarp/openiwarp/host/verbs"
	"github.com/openiwarp/openiwarp/host/verbs/verbstest"
)

var (
	corruptPayload = make(chan struct{}, 1) // a token: corrupt the next payload write
	dropCQE        = make(chan struct{}, 1) // a token: drop the next CQE
)

var (
	openedMu sync.Mutex
	opened   []*simcard.Card // every "simtest" card, for their counts
)

func init() {
	driver.Register("simtest", func(name, arg string) (driver.Card, error) {
		c, err := simcard.OpenWith(name, simcard.Config{}, newModelDevice(nil), rnic.Options{})
		if err == nil {
			openedMu.Lock()
			opened = append(opened, c)
			openedMu.Unlock()
		}
		return c, err
	})
	driver.Register("simtest-corrupt", func(name, arg string) (driver.Card, error) {
		return simcard.OpenWith(name, simcard.Config{}, newModelDevice(func(addr uint64, p []byte) bool {
			if len(p) > 100 { // a payload or stream piece, not a record
				select {
				case <-corruptPayload:
					p[len(p)/2] ^= 0x40
				default:
				}
			}
			return false
		}), rnic.Options{})
	})
	driver.Register("simtest-drop", func(name, arg string) (driver.Card, error) {
		return simcard.OpenWith(name, simcard.Config{}, newModelDevice(func(addr uint64, p []byte) bool {
			if len(p) == cs.CQESize && cs.CQE(p).Opcode() == cs.WCOpcodeRDMAWrite {
				select {
				case <-dropCQE:
					return true
				default:
				}
			}
			return false
		}), rnic.Options{})
	})
}

// The whole verbs suite passes through the backend with a second card
// model as the device: the plumbing (card thread, BAR0, IOMMU, interrupts)
// and a checker that accepts a device running behind the model as the RTL
// does.
func TestSuiteThroughChecker(t *testing.T) {
	o := verbstest.Options{MaxSize: 1 << 20, QPs: 4}
	verbstest.Run(t, "simtest", o)
	var total simcard.Counts
	openedMu.Lock()
	for _, c := range opened {
		n := c.Phys.Counts()
		for _, e := range c.Phys.Mismatches() {
			t.Log(e)
		}
		total.Bytes += n.Bytes
		total.Loose += n.Loose
		total.Mismatches += n.Mismatches
		if total.Checked == nil {
			total.Checked = map[string]uint64{}
		}
		for k, v := range n.Checked {
			total.Checked[k] += v
		}
	}
	openedMu.Unlock()
	t.Logf("%d cards; writes checked: %v, %d bytes; %d accepted by timing; %d mismatches", len(opened), total.Checked, total.Bytes, total.Loose, total.Mismatches)
	require.Greater(t, total.Checked["CQE"], uint64(100))
	require.Zero(t, total.Mismatches, "a second model as the device agrees with the model")
	require.Greater(t, total.Bytes, uint64(4<<20))
}

// A device that writes one wrong byte is caught: the QP ends with a
// *MismatchError naming the write, and the wrong byte never reaches the
// user's buffer.
func TestMismatchStopsQP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b := verbstest.Pair(t, ctx, "simtest-corrupt", 64<<10)
	for i := range a.Buf {
		a.Buf[i] = byte(i)
	}
	corruptPayload <- struct{}{}
	require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, Signaled: true,
		SGL: []verbs.SGE{a.MR.SGE(0, 64<<10)}, RemoteAddr: b.MR.Addr(), RKey: b.MR.RKey()}))
	select {
	case <-a.QP.Done():
	case <-b.QP.Done():
	case <-ctx.Done():
		t.Fatal("no QP ended after a corrupted write")
	}
	var me *simcard.MismatchError
	err := errors.Join(a.QP.Err(), b.QP.Err())
	require.True(t, errors.As(err, &me), "a QP ends with the mismatch: %v", err)
	require.ErrorIs(t, err, simcard.ErrMismatch)
	t.Log(me)
}

// A device that leaves a completion unwritten does not hang its user: once
// it is idle the checker names the missing CQE and the QP ends with it.
func TestMissingWriteStopsQP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b := verbstest.Pair(t, ctx, "simtest-drop", 4096)
	dropCQE <- struct{}{}
	require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 7, Opcode: verbs.WRRDMAWrite, Signaled: true,
		SGL: []verbs.SGE{a.MR.SGE(0, 100)}, RemoteAddr: b.MR.Addr(), RKey: b.MR.RKey()}))
	select {
	case <-a.QP.Done():
	case <-ctx.Done():
		t.Fatal("the QP did not end after its completion went missing")
	}
	var me *simcard.MismatchError
	require.True(t, errors.As(a.QP.Err(), &me), "the QP ends with the mismatch: %v", a.QP.Err())
	require.Equal(t, "CQE", me.Kind)
	t.Log(me)
	wc := make([]verbs.WC, 4)
	n, _ := a.CQ.Poll(wc)
	for _, c := range wc[:n] {
		require.NotEqual(t, verbs.WCSuccess, c.Status, "the dropped completion never reports success")
	}
}
