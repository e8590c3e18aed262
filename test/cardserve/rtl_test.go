package cardserve_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/host/driver/cardcheck"
	"github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/host/verbs"
	"github.com/openiwarp/openiwarp/internal/testwatch"
	"github.com/openiwarp/openiwarp/test/cardserve"
	"github.com/openiwarp/openiwarp/test/cardserve/slotcheck"
)

func newRTLServer(t testing.TB, width int) (*cardserve.Server, *reports) {
	r := &reports{}
	s, err := cardserve.New(cardserve.Config{Card: cardserve.RTL(width), Report: r.add})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s, r
}

// The Verilated card behind the proxy: its ID registers, SCRATCH, an
// error response read as all ones, and DEVICE_RESET a fresh card (a new
// simulation).
func TestRTLRegisters(t *testing.T) {
	s, rep := newRTLServer(t, 64)
	q := newFakeQEMU(t, s, true)
	assert.EqualValues(t, cardID, q.barRead(cardspec.ID, 4), "ID")
	assert.EqualValues(t, cardspec.InterfaceVersion, q.barRead(cardspec.Version, 4), "VERSION")
	q.barWrite(cardspec.Scratch, 0x1234_5678, 4)
	assert.EqualValues(t, 0x1234_5678, q.barRead(cardspec.Scratch, 4))
	assert.EqualValues(t, 0x34, q.barRead(cardspec.Scratch+2, 1), "a byte of the register")
	st := s.Stats()
	assert.NotZero(t, st.Check.Cycles, "the RTL was clocked")
	require.Zero(t, q.call(7, nil))
	q.cfgWrite(0x10, fakeBAR, 4)
	q.cfgWrite(0x04, 0x06, 2)
	assert.NotEqualValues(t, 0x1234_5678, q.barRead(cardspec.Scratch, 4), "a fresh card")
	assert.EqualValues(t, cardID, q.barRead(cardspec.ID, 4))
	assert.Greater(t, s.Stats().Check.Cycles, st.Check.Cycles, "the cycles of the replaced card are kept")
	assert.Empty(t, rep.all())
}

// The driver over the Verilated card through the proxy: identification,
// reset, CQs, QPs, STags (memory regions) and a connection of two QPs of
// the card over 127.0.0.1, then a Send: it either completes with its
// bytes at the other end, or the model's check names what the RTL did not
// do (today: the RTL writes no TX_DATA events, so the Send's bytes never
// leave). It never hangs and never completes with bytes it did not move.
// At both data path widths.
func TestRTLDriverOverProxy(t *testing.T) {
	for _, w := range []int{64, 512} {
		t.Run(fmt.Sprintf("w%d", w), func(t *testing.T) { rtlDriverOverProxy(t, w) })
	}
}

func rtlDriverOverProxy(t *testing.T, width int) {
	s, rep := newRTLServer(t, width)
	q := newFakeQEMU(t, s, false)
	p := newFakePhys(q)
	dev := openFake(t, p)
	ctx := testwatch.Context(t, "a connection on the RTL card through the proxy")
	began := time.Now()
	a, b := slotcheck.Pair(t, ctx, dev, p.ramBuf, 4096)
	st := s.Stats()
	t.Logf("connected in %v: %+v", time.Since(began), st)
	t.Cleanup(func() { t.Logf("closing at %v", time.Since(began)) })
	require.Empty(t, rep.all(), "nothing reported while connecting")
	require.Zero(t, st.Check.Mismatches)
	require.NotZero(t, st.Check.Checked, "the model checked the RTL's DMA writes")

	const n = 200
	for i := range n {
		a.Buf[i], b.Buf[i] = byte(i*7+1), 0
	}
	require.NoError(t, b.QP.PostRecv(verbs.RecvWR{ID: 2, SGL: []verbs.SGE{b.MR.SGE(0, n)}}))
	require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 1, Opcode: verbs.WRSend, Signaled: true, SGL: []verbs.SGE{a.MR.SGE(0, n)}}))
	done := make(chan error, 1)
	go func() {
		wc, err := b.CQ.Wait(ctx)
		if err == nil && wc.Status != verbs.WCSuccess {
			err = fmt.Errorf("receive completion %v", wc.Status)
		}
		done <- err
	}()
	// The driver is not told of a mismatch here (in a guest it could not
	// be): the check's report to the Server is what ends the wait.
	var me *cardcheck.MismatchError
	mismatch := func() bool {
		for _, r := range rep.all() {
			if errors.As(r, &me) {
				return true
			}
		}
		return false
	}
	var err error
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(2 * time.Minute)
wait:
	for {
		select {
		case err = <-done:
			break wait
		case <-a.QP.Done():
			err = a.QP.Err()
			break wait
		case <-tick.C:
			if mismatch() {
				err = me
				break wait
			}
		case <-deadline:
			t.Fatalf("a Send on the RTL card neither completed nor failed in 2 minutes: a hang; cardserve %+v", s.Stats())
		}
	}
	st = s.Stats()
	t.Logf("the Send ended at %v", time.Since(began))
	if err == nil {
		require.Equal(t, a.Buf[:n], b.Buf[:n], "a completed Send moved the bytes")
		t.Logf("Send: served by the RTL, bytes verified; %+v", st.Check)
		return
	}
	require.True(t, mismatch(), "the Send failed without the check naming the transaction: %v; reported %v", err, rep.all())
	require.NotZero(t, st.Check.Mismatches)
	t.Logf("NOT DONE: a Send on the RTL card: %v (the model's check: %v)", err, me)
}

// BenchmarkRTLRegisterRead is BenchmarkRegisterRead on the Verilated card
// at each width: the proxy message, an AXI4-Lite read clocked until its
// response, and the wait for the bus while the card's goroutine clocks
// its quiet period.
func BenchmarkRTLRegisterRead(b *testing.B) {
	for _, w := range []int{64, 512} {
		b.Run(fmt.Sprintf("w%d", w), func(b *testing.B) {
			s, _ := newRTLServer(b, w)
			q := newFakeQEMU(b, s, true)
			for b.Loop() {
				q.barRead(cardspec.Scratch, 4)
			}
		})
	}
}

// BenchmarkRTLRegisterWrite is one BAR0 write on the Verilated card (the
// model beside it takes the write too).
func BenchmarkRTLRegisterWrite(b *testing.B) {
	for _, w := range []int{64, 512} {
		b.Run(fmt.Sprintf("w%d", w), func(b *testing.B) {
			s, _ := newRTLServer(b, w)
			q := newFakeQEMU(b, s, true)
			for b.Loop() {
				q.barWrite(cardspec.Scratch, 1, 4)
			}
		})
	}
}

// A DMA write of the RTL card outside guest RAM is refused (an error
// response) and reported as the card model reports it: the driver's QP
// status table (its second DMA buffer) is said to be in the hole below
// 4 GiB, so the RTL's first status record write is refused, which stops
// the card (STATUS.FATAL) with DMA_FAULT_ADDR naming the record and a
// DMA_FAULT event; the check beside it agrees (no mismatch).
func TestRTLDMAOutsideRAM(t *testing.T) {
	s, rep := newRTLServer(t, 64)
	q := newFakeQEMU(t, s, false)
	p := newFakePhys(q)
	p.holeAlloc = 2
	dev := openFake(t, p)
	ctx := testwatch.Context(t, "a QP whose status record is outside guest RAM")
	slotcheck.Pair(t, ctx, dev, p.ramBuf, 4096)
	testwatch.Until(t, "the refused status record", func() bool { return s.Stats().DMARefused > 0 })
	var de *cardserve.DMAError
	for _, err := range rep.all() {
		if errors.As(err, &de) {
			break
		}
	}
	require.NotNil(t, de, "a *DMAError reported: %v", rep.all())
	assert.True(t, de.Write)
	assert.GreaterOrEqual(t, de.Addr, uint64(fakeHole))
	testwatch.Until(t, "the RTL's fault report", func() bool {
		lo, hi := q.barRead(cardspec.DMAFaultAddrLo, 4), q.barRead(cardspec.DMAFaultAddrHi, 4)
		return hi<<32|lo == de.Addr && q.barRead(cardspec.Status, 4)>>cardspec.StatusFatalShift&1 != 0
	})
	info := q.barRead(cardspec.DMAFaultInfo, 4)
	assert.EqualValues(t, 1, info>>cardspec.DMAFaultInfoCountShift&cardspec.DMAFaultInfoCountMask, "DMA_FAULT_INFO %#x: one fault", info)
	assert.EqualValues(t, 1, info>>cardspec.DMAFaultInfoWriteShift&1, "DMA_FAULT_INFO %#x: a write", info)
	for _, err := range rep.all() {
		var me *cardcheck.MismatchError
		assert.False(t, errors.As(err, &me), "the check disagreed: %v", err)
	}
	assert.Zero(t, s.Stats().Check.Mismatches, "the model faulted as the RTL did")
	t.Logf("the RTL reports the fault at %#x and stops; %+v", de.Addr, s.Stats())
}
