package vfio

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/cardspec"
)

func TestCheckIdentity(t *testing.T) {
	card := uint32(cardspec.DeviceID)<<16 | cardspec.VendorID
	for _, tc := range []struct {
		name        string
		id, version uint32
		ok          bool
		says        []string
	}{
		{"the card", card, cardspec.InterfaceVersion, true, nil},
		{"a later minor version", card, cardspec.InterfaceVersion | 7, true, nil},
		{"QEMU edu", 0x010000ed, 0, false, []string{"0x010000ed", "vendor 0x00ed", "device 0x0100", "0x1e1a10ee"}},
		{"vendor and device swapped", 0x10ee1e1a, cardspec.InterfaceVersion, false, []string{"0x10ee1e1a", "vendor 0x1e1a"}},
		{"no answer", 0xffffffff, 0xffffffff, false, []string{"0xffffffff", "does not answer"}},
		{"another major version", card, 2 << 16, false, []string{"version 2.0", "major version 1"}},
		{"major version 0", card, 5, false, []string{"version 0.5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkIdentity("0000:00:03.0", tc.id, tc.version)
			if tc.ok {
				assert.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrNotCard)
			var ie *IdentityError
			require.True(t, errors.As(err, &ie), "%v is not an *IdentityError", err)
			assert.Equal(t, IdentityError{ID: tc.id, Version: tc.version}, *ie)
			assert.Contains(t, err.Error(), "0000:00:03.0")
			for _, s := range tc.says {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}

// A watchdog for waits that must end: generous, only says what was stuck.
const watchdog = 30 * time.Second

func TestWaitInterrupt(t *testing.T) {
	w := newVectorWaiter(3)
	it, fds, _ := eventfdInterrupts(t, 3, w.notify)
	defer it.Close()
	ctx, cancel := context.WithTimeout(context.Background(), watchdog)
	defer cancel()

	// Fired before the wait: not lost.
	signal(t, fds[1], 1)
	require.NoError(t, w.wait(ctx, 1, "dev"), "vector 1 fired before the wait")

	// Fired during the wait.
	done := make(chan error, 1)
	go func() { done <- w.wait(ctx, 2, "dev") }()
	signal(t, fds[2], 1)
	require.NoError(t, <-done)

	// Several firings coalesce into one wake-up; another vector's do not count.
	signal(t, fds[0], 1)
	signal(t, fds[0], 1)
	require.NoError(t, w.wait(ctx, 0, "dev"))
	short, stop := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer stop()
	signal(t, fds[1], 1)
	assert.ErrorIs(t, w.wait(short, 0, "dev"), context.DeadlineExceeded, "vector 0 was consumed, vector 1 fired")
	require.NoError(t, w.wait(ctx, 1, "dev"))

	err := w.wait(ctx, 3, "dev")
	assert.ErrorIs(t, err, driver.ErrInvalid)
	assert.Contains(t, err.Error(), "vector 3 of 3")
	assert.ErrorIs(t, w.wait(ctx, -1, "dev"), driver.ErrInvalid)

	// Cancelled while waiting.
	cctx, ccancel := context.WithCancel(context.Background())
	go func() { done <- w.wait(cctx, 2, "dev") }()
	ccancel()
	assert.ErrorIs(t, <-done, context.Canceled)

	// Close wakes a waiter and fails later waits.
	go func() { done <- w.wait(ctx, 2, "dev") }()
	w.close()
	w.close()
	assert.ErrorIs(t, <-done, driver.ErrClosed)
	assert.ErrorIs(t, w.wait(ctx, 1, "dev"), driver.ErrClosed)
}

func TestWaitInterruptNoVectors(t *testing.T) {
	w := newVectorWaiter(0)
	assert.Equal(t, 0, w.vectors())
	assert.ErrorIs(t, w.wait(context.Background(), 0, "dev"), driver.ErrInvalid)
	w.notify(Interrupt{Vector: 0, Count: 1}) // ignored, no panic
}

func TestPhysRefusesForeignMappings(t *testing.T) {
	p := &Phys{dev: &Device{}, maps: map[*MappedMemory]bool{}}
	for _, m := range []driver.Mapping{
		{},
		driver.NewMapping(0x1000, nil, 0, 10, "not ours"),
		driver.NewMapping(0x1000, nil, 0, 10, &MappedMemory{}),
	} {
		err := p.Unmap(m)
		assert.ErrorIs(t, err, driver.ErrInvalid)
		assert.Contains(t, err.Error(), "not a live mapping")
	}
}

func TestDMASetErrors(t *testing.T) {
	s := newDMASet(&Device{}, "vfio card")
	assert.ErrorIs(t, s.Free(nil), driver.ErrInvalid)
	err := s.Free(&driver.Buffer{Bytes: make([]byte, 8), IOVA: 0x2000})
	assert.ErrorIs(t, err, driver.ErrInvalid)
	assert.Contains(t, err.Error(), "IOVA 0x2000")
	require.NoError(t, s.close())
	_, err = s.Alloc(4096)
	assert.ErrorIs(t, err, driver.ErrClosed)
}
