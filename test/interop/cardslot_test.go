package interop

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/test/cardserve"
	"github.com/openiwarp/openiwarp/test/guest"
)

// GuestCard is the guest with the card in a PCI slot.
const GuestCard = "198.18.0.4"

// TestInteropCardInSlot runs iwping in a guest on the card in a PCI slot
// (test/cardserve serving the card through x-pci-proxy-dev, its interrupts
// through ivshmem-doorbell; the driver through VFIO's no-IOMMU mode, as in
// test/vfio's TestCardInSlot) against rping on Linux siw (the
// CRC-requiring build) in a second guest on the harness bridge, as client
// and as server, CRC on; every ping checked byte for byte, the capture
// checked by tshark and iwdump as every scenario's is.
func TestInteropCardInSlot(t *testing.T) {
	if testing.Short() {
		t.Skip("boots QEMU guests")
	}
	root, err := moduleRoot()
	require.NoError(t, err)
	results := *resultsFlag
	if results == "" {
		results = filepath.Join(root, "build", "interop")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	h, err := NewHarness(ctx, results, testLog{t})
	require.NoError(t, err)
	defer func() { assert.NoError(t, h.Close(), "cleanup") }()

	// iwping for the card's guest, with the libraries it links.
	iwping, err := h.IwpingBinary(ctx)
	require.NoError(t, err)
	vfioKO, err := h.Image.Kernel.NoIOMMUVFIO(ctx)
	require.NoError(t, err)
	img, err := guest.Image{Kernel: h.Image.Kernel, Modules: []string{vfioKO, "vfio_pci"}, Binaries: []string{iwping}}.Build(ctx)
	require.NoError(t, err)

	// Two cards, each with its own ivshmem device: the card's model, and
	// the Verilated card (cardserve.RTL(64), every DMA write checked by
	// the model). Card i and its ivshmem device take slots 1+2i and 2+2i.
	var mu sync.Mutex
	var reported []string
	kinds := []struct {
		label string
		card  cardserve.NewCard
	}{{"model", cardserve.Model(64)}, {"rtl", cardserve.RTL(64)}}
	var (
		servers []*cardserve.Server
		theirs  []*os.File
		devices []string
		qemu    []string
	)
	for i, k := range kinds {
		s, err := cardserve.New(cardserve.Config{Card: k.card, Report: func(err error) {
			mu.Lock()
			reported = append(reported, k.label+": "+err.Error())
			mu.Unlock()
		}})
		require.NoError(t, err)
		defer s.Close()
		ivsPath := filepath.Join(t.TempDir(), "ivshmem.sock")
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: ivsPath, Net: "unix"})
		require.NoError(t, err)
		defer l.Close()
		go s.ServeIVShmem(l)
		th, ours, err := cardserve.ProxySocket()
		require.NoError(t, err)
		defer ours.Close()
		go s.ServeProxy(ours)
		servers, theirs = append(servers, s), append(theirs, th)
		devices = append(devices, fmt.Sprintf("x-pci-proxy-dev,id=card%d,fd=%d", i, 3+i), fmt.Sprintf("ivshmem-doorbell,chardev=ivs%d,vectors=1", i))
		qemu = append(qemu, "-chardev", fmt.Sprintf("socket,path=%s,id=ivs%d", ivsPath, i))
	}

	const memMiB = 512
	t0 := time.Now()
	vm, err := guest.Boot(ctx, guest.Config{Kernel: h.Image.Kernel, Initrd: img, MemoryMiB: memMiB,
		Net: h.Net, Addr: GuestCard + "/24", ConsoleLog: h.consoleLog(GuestCard), BootTimeout: 2 * time.Minute,
		Devices: devices,
		QEMUArgs: append([]string{"-object", fmt.Sprintf("memory-backend-memfd,id=mem,size=%dM,share=on", memMiB),
			"-machine", "memory-backend=mem"}, qemu...),
		ExtraFiles: theirs,
		// Without an IOMMU, DMA memory beyond one page is a 2 MiB huge page.
		Append: []string{"hugepages=96"}})
	for _, f := range theirs {
		f.Close()
	}
	require.NoError(t, err)
	h.mu.Lock()
	h.guests[GuestCard] = vm // powered off by h.Close
	h.mu.Unlock()
	t.Logf("card guest %s up in %s", GuestCard, time.Since(t0).Round(time.Millisecond))

	// No-IOMMU mode on; the cards and the ivshmem devices bound to
	// vfio-pci (addresses in slot order: the cards, then the ivshmem
	// devices).
	res, err := vm.Shell(ctx, bindSlot)
	require.NoError(t, err, "%s", res.Output)
	f := strings.Fields(string(res.Output))
	require.Len(t, f, 2*len(kinds), "card and ivshmem addresses: %s", res.Output)

	for i, k := range kinds {
		card := "pci:" + f[i] + ",irq=" + f[len(kinds)+i]
		t.Logf("%s card %s", k.label, card)
		for _, sc := range cardSlotScenarios(iwping, card, k.label) {
			t.Run(sc.Name, func(t *testing.T) {
				r := h.Run(ctx, sc, "")
				record(r)
				t.Logf("%s: %s in %s; capture: %s; iwdump: %s", r.Name, r.Status, r.Elapsed.Round(time.Millisecond), r.Decoded, r.Iwdump)
				if r.Status != "pass" {
					t.Errorf("%s: %s: %s (kept in %s)", r.Name, r.Status, r.Detail, r.Dir)
					return
				}
				// Nothing malformed, no expert warning or error (SYN and FIN
				// notes are all tshark has to say of a clean connection).
				// TCP's own sequence analysis is left out: a retransmission
				// or a D-SACK is the guests' TCP answering a delay on a
				// loaded host (ci24: one D-SACK), not the card's stream.
				pcap := filepath.Join(r.Dir, "capture.pcap")
				out, err := exec.CommandContext(ctx, "tshark", "-o", "tcp.try_heuristic_first:TRUE", "-r", pcap,
					"-Y", "_ws.malformed || (_ws.expert.severity >= 0x00600000 && !tcp.analysis.flags && !tcp.options.sack.dsack_le)",
					"-T", "fields", "-e", "frame.number", "-e", "tcp.flags.reset", "-e", "_ws.expert.message").Output()
				require.NoError(t, err, "tshark %s", pcap)
				fins, err := exec.CommandContext(ctx, "tshark", "-r", pcap, "-Y", "tcp.flags.fin == 1",
					"-T", "fields", "-e", "frame.number", "-e", "ip.src").Output()
				require.NoError(t, err, "tshark %s", pcap)
				bad, closedRST := expertProblems(string(out), string(fins))
				for _, f := range closedRST {
					t.Logf("frame %s: a reset after both ends' FINs (a closed socket answering a late segment), not the card's stream", f)
				}
				assert.Empty(t, bad, "malformed frames or expert warnings in %s", pcap)
			})
		}
		st := servers[i].Stats()
		t.Logf("%s card: cardserve served %+v", k.label, st)
		assert.NotZero(t, st.Interrupts, "%s card: interrupts through ivshmem", k.label)
		assert.Zero(t, st.InterruptsLost, "%s card", k.label)
		assert.Zero(t, st.DMARefused, "%s card", k.label)
	}
	mu.Lock()
	assert.Empty(t, reported, "nothing reported by cardserve")
	mu.Unlock()
}

// bindSlot turns VFIO's no-IOMMU mode on, binds every card (the card's PCI
// IDs, cardspec) and every ivshmem-doorbell device to vfio-pci, and prints
// their addresses: the cards', then the ivshmem devices', each in slot
// order.
const bindSlot = `set -e
echo 1 > /sys/module/vfio/parameters/enable_unsafe_noiommu_mode
bind() {
	n=0
	for d in /sys/bus/pci/devices/*; do
		if [ "$(cat $d/vendor)" = $1 ] && [ "$(cat $d/device)" = $2 ]; then
			a=${d##*/}
			[ -e $d/driver ] && echo $a > $d/driver/unbind
			echo vfio-pci > $d/driver_override
			echo $a > /sys/bus/pci/drivers_probe
			echo $a
			n=$((n+1))
		fi
	done
	[ $n -gt 0 ] || { echo "no PCI device $1:$2" >&2; return 1; }
}
bind 0x10ee 0x1e1a
bind 0x1af4 0x1110
`

// cardSlotScenarios are iwping on the card in a slot (its guest) against
// the CRC-requiring siw's rping (guest A), both roles; kind is "model" or
// "rtl" (the Verilated card), which names the scenarios.
func cardSlotScenarios(iwping, card, kind string) []*Scenario {
	crc := map[string]string{GuestA: SiwCRCModule}
	ops := rpingOps(pingCount)
	// The card's path traps every register access (50-700 µs under TCG;
	// 2-6 ms on the RTL card, which clocks the Verilated card for each).
	slow := []string{"-card", card, "-timeout", "90s", "-startup-timeout", "30s"}
	name, label, limit := "card-in-slot", "pci (cardserve: card model)", 3*time.Minute
	if kind == "rtl" {
		slow = []string{"-card", card, "-timeout", "4m", "-startup-timeout", "90s"}
		name, label, limit = "rtl-card-in-slot", "pci (cardserve: Verilated card)", 8*time.Minute
	}
	return []*Scenario{
		{Name: "iwping-" + name + "-client-siw-server-crc", Roles: "iwping -c -crc -card pci (card guest) → rping -s (CRC-requiring siw)",
			CRC: true, MPA: "Rev 2", Card: label, Guests: crc, Expect: Expect{Rev: 2, CRC: true, MinOps: ops}, Timeout: limit,
			Note: firstDelayNote,
			Run: func(ctx context.Context, h *Harness, a *Attempt) error {
				port := fmt.Sprint(a.Port)
				srv, err := startGuestServer(ctx, h, GuestA, a.Port, withPort(rpingServer(std), port)...)
				if err != nil {
					return err
				}
				vm, err := h.Guest(ctx, GuestCard)
				if err != nil {
					return err
				}
				args := append([]string{iwping, "-c", "-a", GuestA, "-p", port}, iwpingClientArgs(true, std, slow...)...)
				res, err := RunSides(ctx, timeoutOf(ctx), gracePeriod,
					StartedGuestSide(a, "guest rping -s (siw)", srv), GuestSide(a, "card guest iwping -c (openiwarp card in a slot)", vm, args...))
				if err != nil {
					return err
				}
				return verifyPings(std)(res[0].Output, res[1].Output)
			}},
		{Name: "siw-client-iwping-" + name + "-server-crc", Roles: "rping -c (CRC-requiring siw) → iwping -s -crc -card pci (card guest)",
			CRC: true, MPA: "Rev 2", Card: label, Guests: crc, Expect: Expect{Rev: 2, CRC: true, MinOps: ops}, Timeout: limit,
			Run: func(ctx context.Context, h *Harness, a *Attempt) error {
				port := fmt.Sprint(a.Port)
				vm, err := h.Guest(ctx, GuestCard)
				if err != nil {
					return err
				}
				args := append([]string{iwping, "-s", "-a", GuestCard, "-p", port}, iwpingFlags(true, std, slow...)...)
				srv, err := vm.Start(args, guest.StartOptions{})
				if err != nil {
					return err
				}
				if err := WaitListen(ctx, vm, a.Port); err != nil {
					_ = srv.Signal(9)
					return err
				}
				cli := []string{"rping", "-c", "-a", GuestCard, "-p", port, "-v", "-V", "-C", fmt.Sprint(std.count), "-S", fmt.Sprint(std.size)}
				vmA, err := h.Guest(ctx, GuestA)
				if err != nil {
					return err
				}
				res, err := RunSides(ctx, timeoutOf(ctx), gracePeriod,
					StartedGuestSide(a, "card guest iwping -s (openiwarp card in a slot)", srv), GuestSide(a, "guest rping -c (siw)", vmA, cli...))
				if err != nil {
					return err
				}
				return verifyPings(std)(res[0].Output, res[1].Output)
			}},
	}
}

// expertProblems sorts tshark's malformed frames and expert warnings
// (lines of frame number, RST flag, message) into problems and resets
// that came after both ends had sent their FIN (lines of frame number
// and source in fins): once both streams are over, a reset is TCP's
// answer from a socket already closed to a late segment (a duplicate ACK
// for a FIN retransmitted on a loaded host, ci1 of 29 Nov), not a stream
// the card cut.
func expertProblems(expert, fins string) (bad, closedRST []string) {
	firstFIN := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(fins), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		n, err := strconv.Atoi(f[0])
		if _, seen := firstFIN[f[1]]; err == nil && !seen {
			firstFIN[f[1]] = n
		}
	}
	bothFIN := 0 // the frame by which both ends had sent a FIN
	if len(firstFIN) == 2 {
		for _, n := range firstFIN {
			bothFIN = max(bothFIN, n)
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(expert), "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		f := strings.Split(l, "\t")
		n, err := strconv.Atoi(f[0])
		if err == nil && len(f) >= 2 && (f[1] == "1" || f[1] == "True") && bothFIN > 0 && n > bothFIN {
			closedRST = append(closedRST, f[0])
			continue
		}
		bad = append(bad, l)
	}
	return bad, closedRST
}

// A reset after both FINs is a closed socket answering a late segment; one
// before, or anything malformed, is a problem.
func TestExpertProblems(t *testing.T) {
	fins := "91\t198.18.0.2\n93\t198.18.0.4\n94\t198.18.0.4\n"
	for _, c := range []struct {
		name, expert, fins string
		bad, rst           []string
	}{
		{"ci1: reset after the FIN exchange", "97\t1\tConnection reset (RST)\n", fins, nil, []string{"97"}},
		{"reset before the peer's FIN", "92\t1\tConnection reset (RST)\n", fins, []string{"92\t1\tConnection reset (RST)"}, nil},
		{"reset with one side's FIN only", "97\t1\tConnection reset (RST)\n", "91\t198.18.0.2\n", []string{"97\t1\tConnection reset (RST)"}, nil},
		{"malformed after the FINs", "98\t0\tMalformed Packet\n", fins, []string{"98\t0\tMalformed Packet"}, nil},
		{"clean", "", fins, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad, rst := expertProblems(c.expert, c.fins)
			assert.Equal(t, c.bad, bad)
			assert.Equal(t, c.rst, rst)
		})
	}
}
