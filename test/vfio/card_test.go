package vfio

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/test/cardserve"
	"github.com/openiwarp/openiwarp/test/guest"
)

// TestCardInSlot puts the card in a PCI slot of a guest without an IOMMU
// (test/cardserve serving the card's golden model through x-pci-proxy-dev,
// its interrupts through ivshmem-doorbell) and runs the card's driver
// inside the guest through VFIO's no-IOMMU mode (edu/card_test.go): first
// the wrong set-ups and loopback traffic between two QPs of the card, then
// cardserve goes away under the driver.
func TestCardInSlot(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a QEMU guest")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	share := buildGuestTests(ctx, t)
	k, err := guest.FetchKernel(ctx, guest.KernelOptions{Headers: true})
	require.NoError(t, err)
	img := noiommuImage(ctx, t, k)

	var mu sync.Mutex
	var reported []string
	s, err := cardserve.New(cardserve.Config{Card: cardserve.Model(64), Report: func(err error) {
		mu.Lock()
		reported = append(reported, err.Error())
		mu.Unlock()
	}})
	require.NoError(t, err)
	defer s.Close()
	ivsPath := filepath.Join(t.TempDir(), "ivshmem.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: ivsPath, Net: "unix"})
	require.NoError(t, err)
	defer l.Close()
	go s.ServeIVShmem(l)
	theirs, ours, err := cardserve.ProxySocket()
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- s.ServeProxy(ours) }()

	const memMiB = 512
	console := filepath.Join(logDir(t), "card-slot-console.log")
	vm, err := guest.Boot(ctx, guest.Config{Kernel: k, Initrd: img, MemoryMiB: memMiB, Share: share, ConsoleLog: console,
		Devices: []string{"x-pci-proxy-dev,id=card0,fd=3", "ivshmem-doorbell,chardev=ivs,vectors=1"},
		QEMUArgs: []string{"-object", fmt.Sprintf("memory-backend-memfd,id=mem,size=%dM,share=on", memMiB),
			"-machine", "memory-backend=mem", "-chardev", "socket,path=" + ivsPath + ",id=ivs"},
		ExtraFiles: []*os.File{theirs},
		// Without an IOMMU, DMA memory beyond one page is a 2 MiB huge page.
		Append: []string{"hugepages=40"}})
	theirs.Close()
	require.NoError(t, err)
	defer vm.Close()
	booted := s.Stats()
	t.Logf("booted (kernel %s): %+v; guest RAM %+v", vm.Kernel, booted, s.RAM())

	// The guest's watchdogs as patient as the host's.
	var env []string
	if v := os.Getenv("OPENIWARP_TEST_PATIENCE"); v != "" {
		env = append(env, "OPENIWARP_TEST_PATIENCE="+v)
	}
	began := time.Now()
	proc, err := vm.Start([]string{"/mnt/host/edu.test", "-test.v", "-test.count=1", "-test.run", "^TestCardSlot$"}, guest.StartOptions{Env: env})
	require.NoError(t, err)
	res, err := proc.Wait(ctx)
	took := time.Since(began)
	t.Logf("guest, console in %s:\n%s", console, res.Output)
	require.NoError(t, err, "cardserve served %+v; last reported: %v", s.Stats(), s.LastError())
	checkRan(t, string(res.Output), []string{"TestCardSlot"})
	st := s.Stats()
	t.Logf("TestCardSlot took %v in the guest; cardserve served %+v", took.Round(time.Millisecond), st)
	for _, m := range figure.FindAllStringSubmatch(string(res.Output), -1) {
		t.Logf("figure: %s = %s", m[1], m[2])
	}
	assert.NotZero(t, st.Interrupts, "interrupts through ivshmem")
	assert.Zero(t, st.InterruptsLost)
	assert.Zero(t, st.DMARefused)
	mu.Lock()
	assert.Empty(t, reported, "nothing reported")
	mu.Unlock()

	// cardserve goes away under the driver.
	proc, err = vm.Start([]string{"/mnt/host/edu.test", "-test.v", "-test.count=1", "-test.run", "^TestCardServeGone$"}, guest.StartOptions{Env: env})
	require.NoError(t, err)
	require.NoError(t, proc.WaitOutput(ctx, "card-ready"))
	ours.Close()
	require.NoError(t, <-served)
	require.NoError(t, os.WriteFile(filepath.Join(share, "cardserve-gone"), nil, 0o644))
	res, err = proc.Wait(ctx)
	t.Logf("guest:\n%s", res.Output)
	require.NoError(t, err)
	checkRan(t, string(res.Output), []string{"TestCardServeGone"})
}

var figure = regexp.MustCompile(`(?m)^FIGURE (\S+) (\S+)$`)
