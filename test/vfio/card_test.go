package vfio

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/host/driver/cardcheck"
	"github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/test/cardserve"
	"github.com/openiwarp/openiwarp/test/guest"
)

// TestCardInSlot puts the card in a PCI slot of a guest without an IOMMU
// (test/cardserve serving the card's golden model through x-pci-proxy-dev,
// its interrupts through ivshmem-doorbell) and runs the card's driver
// inside the guest through VFIO's no-IOMMU mode (edu/card_test.go): first
// the wrong set-ups and loopback traffic between two QPs of one card, then
// the whole verbs suite (messages up to 64 KiB) with each end of a
// connection on its own card (four cards in slots), then the first card's
// cardserve goes away under the driver.
func TestCardInSlot(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a QEMU guest")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Minute)
	defer cancel()
	share := buildGuestTests(ctx, t)
	k, err := guest.FetchKernel(ctx, guest.KernelOptions{Headers: true})
	require.NoError(t, err)
	img := noiommuImage(ctx, t, k)

	// Four cards, each with its own ivshmem device: the verbs suite opens
	// one device per end of a connection, and ManyQPs (2 QPs) and
	// FlushOnDisconnect hold four at once.
	var mu sync.Mutex
	var reported []string
	var rtlReported []error // what the RTL cards' servers reported
	report := func(err error) {
		mu.Lock()
		reported = append(reported, err.Error())
		mu.Unlock()
	}
	reportRTL := func(err error) {
		mu.Lock()
		rtlReported = append(rtlReported, err)
		mu.Unlock()
	}
	dir := t.TempDir()
	// Four model cards, then four Verilated cards (cardserve.RTL(64), the
	// card's model checking each; FlushOnDisconnect holds four at once):
	// card i and its ivshmem device take slots 1+2i and 2+2i (QEMU's
	// order), which the guest's tests are told (OPENIWARP_CARD_SLOTS) so
	// that each runs on one kind.
	const modelCards, rtlCards, memMiB = 4, 4, 512
	const cards = modelCards + rtlCards
	slotsOf := func(from, to int) string {
		var l []string
		for i := from; i < to; i++ {
			l = append(l, fmt.Sprintf("0000:00:%02x.0=0000:00:%02x.0", 1+2*i, 2+2*i))
		}
		return "OPENIWARP_CARD_SLOTS=" + strings.Join(l, ",")
	}
	modelSlots, rtlSlots := slotsOf(0, modelCards), slotsOf(modelCards, cards)
	var (
		servers []*cardserve.Server
		ours    []*net.UnixConn
		theirs  []*os.File
		served  []chan error
		devices []string
		qemu    = []string{"-object", fmt.Sprintf("memory-backend-memfd,id=mem,size=%dM,share=on", memMiB), "-machine", "memory-backend=mem"}
	)
	for i := range cards {
		cfg := cardserve.Config{Card: cardserve.Model(64), Report: report}
		if i >= modelCards {
			cfg = cardserve.Config{Card: cardserve.RTL(64), Report: reportRTL}
		}
		s, err := cardserve.New(cfg)
		require.NoError(t, err)
		defer s.Close()
		ivsPath := filepath.Join(dir, fmt.Sprintf("ivshmem%d.sock", i))
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: ivsPath, Net: "unix"})
		require.NoError(t, err)
		defer l.Close()
		go s.ServeIVShmem(l)
		th, o, err := cardserve.ProxySocket()
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() { done <- s.ServeProxy(o) }()
		servers, ours, theirs, served = append(servers, s), append(ours, o), append(theirs, th), append(served, done)
		devices = append(devices, fmt.Sprintf("x-pci-proxy-dev,id=card%d,fd=%d", i, 3+i), fmt.Sprintf("ivshmem-doorbell,chardev=ivs%d,vectors=1", i))
		qemu = append(qemu, "-chardev", fmt.Sprintf("socket,path=%s,id=ivs%d", ivsPath, i))
	}
	stats := func() (all []cardserve.Stats) {
		for _, s := range servers {
			all = append(all, s.Stats())
		}
		return all
	}
	s := servers[0]

	console := filepath.Join(logDir(t), "card-slot-console.log")
	vm, err := guest.Boot(ctx, guest.Config{Kernel: k, Initrd: img, MemoryMiB: memMiB, Share: share, ConsoleLog: console,
		Devices: devices, QEMUArgs: qemu, ExtraFiles: theirs,
		// Without an IOMMU, DMA memory beyond one page is a 2 MiB huge page.
		Append: []string{"hugepages=96"}})
	for _, f := range theirs {
		f.Close()
	}
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
	proc, err := vm.Start([]string{"/mnt/host/edu.test", "-test.v", "-test.count=1", "-test.run", "^TestCardSlot$"}, guest.StartOptions{Env: append(env, modelSlots)})
	require.NoError(t, err)
	res, err := proc.Wait(ctx)
	took := time.Since(began)
	t.Logf("guest, console in %s:\n%s", console, res.Output)
	require.NoError(t, err, "cardserve served %+v; reported: %v", stats(), reported)
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

	// The verbs suite, one card per end.
	proc, err = vm.Start([]string{"/mnt/host/edu.test", "-test.v", "-test.count=1", "-test.run", "^TestCardVerbs$/^(" + strings.Join(verbsCases, "|") + ")$"},
		guest.StartOptions{Env: append(env, modelSlots)})
	require.NoError(t, err)
	began = time.Now()
	res, err = proc.Wait(ctx)
	t.Logf("guest (%v):\n%s", time.Since(began).Round(time.Millisecond), res.Output)
	require.NoError(t, err, "cardserve served %+v; reported: %v", stats(), reported)
	for _, c := range verbsCases {
		require.Contains(t, string(res.Output), "--- PASS: TestCardVerbs/"+c+" ", "the verbs case %s", c)
	}
	t.Logf("cardserve served %+v", stats())

	// The RTL cards: what the register path costs on each kind, then the
	// verbs cases the all-RTL card serves today.
	rtl := servers[modelCards:]
	for _, kind := range []struct{ label, slots string }{{"model", modelSlots}, {"rtl", rtlSlots}} {
		proc, err = vm.Start([]string{"/mnt/host/edu.test", "-test.v", "-test.count=1", "-test.run", "^TestCardCost$"},
			guest.StartOptions{Env: append(env, kind.slots, "OPENIWARP_CARD_LABEL="+kind.label)})
		require.NoError(t, err)
		res, err = proc.Wait(ctx)
		t.Logf("guest, %s card:\n%s", kind.label, res.Output)
		require.NoError(t, err, "cardserve served %+v; reported: %v", stats(), reported)
		checkRan(t, string(res.Output), []string{"TestCardCost"})
		for _, m := range figure.FindAllStringSubmatch(string(res.Output), -1) {
			t.Logf("figure: %s = %s", m[1], m[2])
		}
	}
	proc, err = vm.Start([]string{"/mnt/host/edu.test", "-test.v", "-test.count=1", "-test.run", "^TestCardVerbs$/^(" + strings.Join(verbsCases, "|") + ")$"},
		guest.StartOptions{Env: append(env, rtlSlots)})
	require.NoError(t, err)
	began = time.Now()
	res, err = proc.Wait(ctx)
	t.Logf("guest, RTL cards (%v):\n%s", time.Since(began).Round(time.Millisecond), res.Output)
	require.NoError(t, err, "cardserve served %+v; reported: %v", stats(), reported)
	for _, c := range verbsCases {
		require.Contains(t, string(res.Output), "--- PASS: TestCardVerbs/"+c+" ", "the verbs case %s on the RTL card", c)
	}
	for _, s := range rtl {
		st := s.Stats()
		t.Logf("RTL card: %d cycles, %d DMA writes checked against the card model, %d disagreements; cardserve served %+v", st.Check.Cycles, st.Check.Checked, st.Check.Mismatches, st)
		assert.NotZero(t, st.Check.Checked, "the model checked the RTL's DMA writes")
		assert.Zero(t, st.DMARefused)
		assert.Zero(t, st.BARErrors)
	}
	// What the RTL does not do yet is named by the check, one report per
	// QP and missing write; anything else reported is a failure.
	mu.Lock()
	missing := map[string]int{}
	for _, err := range rtlReported {
		var me *cardcheck.MismatchError
		if !assert.ErrorAs(t, err, &me, "the RTL cards' servers report only the check's disagreements") {
			continue
		}
		t.Logf("the check on an RTL card: %v", err)
		what := me.Kind
		if me.Kind == "EQE" && len(me.Want) == cardspec.EQESize {
			what = cardspec.EQE(me.Want).Type().String()
		}
		missing[what]++
	}
	mu.Unlock()
	t.Logf("the check's disagreements in the verbs cases on the RTL cards, by what the model wrote and the RTL did not: %v", missing)

	// cardserve goes away under the driver.
	proc, err = vm.Start([]string{"/mnt/host/edu.test", "-test.v", "-test.count=1", "-test.run", "^TestCardServeGone$"}, guest.StartOptions{Env: append(env, modelSlots)})
	require.NoError(t, err)
	require.NoError(t, proc.WaitOutput(ctx, "card-ready"))
	ours[0].Close()
	require.NoError(t, <-served[0])
	require.NoError(t, os.WriteFile(filepath.Join(share, "cardserve-gone"), nil, 0o644))
	res, err = proc.Wait(ctx)
	t.Logf("guest:\n%s", res.Output)
	require.NoError(t, err)
	checkRan(t, string(res.Output), []string{"TestCardServeGone"})
}

// verbsCases are the verbs suite's cases run on the cards in slots, the
// model cards and the RTL cards alike.
var verbsCases = []string{"Write", "Read", "Send", "SendWithInvalidate", "SolicitedEvent", "ScatterGather", "PostCopiesWR",
	"Unsignaled", "Inline", "ReadFence", "MPAOptions", "PrivateDataAndReject", "ManyQPs", "RemoteAccessError",
	"FlushOnDisconnect", "BadUse", "TerminateBeforeFIN", "MemoryWindows"}

var figure = regexp.MustCompile(`(?m)^FIGURE (\S+) (\S+)$`)
