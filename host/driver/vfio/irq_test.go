package vfio

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// eventfdInterrupts is an Interrupts whose eventfds the test signals itself,
// as the kernel does when the device raises a vector.
func eventfdInterrupts(t *testing.T, n int, fn func(Interrupt)) (*Interrupts, []int, *int) {
	disabled := 0
	it := &Interrupts{d: &Device{fd: -1}, typ: MSI, handler: fn, done: make(chan struct{}),
		disable: func() error { disabled++; return nil }}
	if fn == nil {
		it.c = make(chan Interrupt, n)
	}
	var fds []int
	for i := 0; i < n; i++ {
		fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
		require.NoError(t, err)
		fds = append(fds, fd)
		it.files = append(it.files, os.NewFile(uintptr(fd), fmt.Sprint("test-eventfd-", i)))
	}
	it.start()
	return it, fds, &disabled
}

func signal(t *testing.T, fd int, n uint64) {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], n)
	_, err := unix.Write(fd, b[:])
	require.NoError(t, err)
}

func TestInterruptDeliveryChannel(t *testing.T) {
	it, fds, disabled := eventfdInterrupts(t, 3, nil)
	assert.Equal(t, 3, it.Vectors())
	assert.ErrorIs(t, it.Unmask(), ErrNotSupported, "MSI is not maskable through VFIO")
	signal(t, fds[2], 1)
	select {
	case ev := <-it.C():
		assert.Equal(t, Interrupt{Vector: 2, Count: 1}, ev)
	case <-time.After(10 * time.Second):
		t.Fatal("no interrupt delivered")
	}
	// Interrupts nobody has read yet coalesce in the eventfd counter.
	signal(t, fds[0], 1)
	signal(t, fds[0], 1)
	total := uint64(0)
	for total < 2 {
		select {
		case ev := <-it.C():
			assert.Equal(t, 0, ev.Vector)
			total += ev.Count
		case <-time.After(10 * time.Second):
			t.Fatal("interrupts lost")
		}
	}
	assert.Equal(t, uint64(2), total)
	require.NoError(t, it.Close())
	_, open := <-it.C()
	assert.False(t, open, "C is closed by Close")
	assert.Equal(t, 1, *disabled)
	require.NoError(t, it.Close())
	assert.Equal(t, 1, *disabled, "Close is idempotent")
}

func TestInterruptDeliveryHandler(t *testing.T) {
	var mu sync.Mutex
	got := map[int]uint64{}
	done := make(chan struct{}, 4)
	it, fds, _ := eventfdInterrupts(t, 2, func(ev Interrupt) {
		mu.Lock()
		got[ev.Vector] += ev.Count
		mu.Unlock()
		done <- struct{}{}
	})
	assert.Nil(t, it.C())
	signal(t, fds[1], 5)
	signal(t, fds[0], 1)
	for i := 0; i < 2; i++ {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("handler not called")
		}
	}
	require.NoError(t, it.Close())
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, map[int]uint64{0: 1, 1: 5}, got)
}

// A full channel must not keep Close from returning.
func TestInterruptCloseWhileBlocked(t *testing.T) {
	it, fds, _ := eventfdInterrupts(t, 1, nil)
	for i := 0; i < 3; i++ {
		signal(t, fds[0], 1)
		time.Sleep(20 * time.Millisecond)
	}
	closed := make(chan error)
	go func() { closed <- it.Close() }()
	select {
	case err := <-closed:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs")
	}
}

func TestIRQTypeString(t *testing.T) {
	assert.Equal(t, "INTx", INTx.String())
	assert.Equal(t, "MSI", MSI.String())
	assert.Equal(t, "MSI-X", MSIX.String())
	assert.Equal(t, "IRQType(9)", IRQType(9).String())
}
