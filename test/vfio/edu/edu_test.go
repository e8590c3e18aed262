//go:build vfioguest

package edu

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/openiwarp/openiwarp/host/driver/vfio"
)

// QEMU's edu device (hw/misc/edu.c, docs/specs/edu.rst).
const (
	eduVendor, eduDevice = 0x1234, 0x11e8

	regID        = 0x00 // 0xRRrr00ed: major, minor, 00, ed
	regLiveness  = 0x04 // reads back the complement of what was written
	regFactorial = 0x08
	regStatus    = 0x20 // bit 0: computing; bit 7: interrupt when done
	regIRQStatus = 0x24
	regIRQRaise  = 0x60
	regIRQAck    = 0x64
	regDMASrc    = 0x80 // 64-bit registers from 0x80 on
	regDMADst    = 0x88
	regDMACount  = 0x90
	regDMACmd    = 0x98

	dmaStart      = 0x1
	dmaToRAM      = 0x2 // direction: 0 RAM -> edu, 1 edu -> RAM
	dmaIRQ        = 0x4 // raise interrupt 0x100 when done
	dmaIRQStatus  = 0x100
	eduBuffer     = 0x40000 // the device's own 4 KiB buffer, DMA-only
	eduDMALimit   = 1 << 28 // edu masks DMA addresses to 28 bits
	eduMaxDMA     = 4095    // QEMU 7.2 aborts on a 4096-byte DMA (off-by-one)
	statusBusy    = 0x1
	statusFactIRQ = 0x80
)

var seed = time.Now().UnixNano()

func TestMain(m *testing.M) {
	fmt.Printf("edu: random seed %d\n", seed)
	os.Exit(m.Run())
}

// eduAddr finds edu in sysfs.
func eduAddr(t *testing.T) string { return pciAddrOf(t, eduVendor, eduDevice) }

// pciAddrOf finds the device with these IDs in sysfs.
func pciAddrOf(t *testing.T, vendor, device uint16) string {
	t.Helper()
	addrs := pciAddrsOf(t, vendor, device)
	if len(addrs) == 0 {
		t.Fatalf("no PCI device %04x:%04x in /sys/bus/pci/devices", vendor, device)
	}
	return addrs[0]
}

// pciAddrsOf lists the devices with these IDs, in address order.
func pciAddrsOf(t *testing.T, vendor, device uint16) []string {
	t.Helper()
	devs, err := filepath.Glob("/sys/bus/pci/devices/*")
	require.NoError(t, err)
	var out []string
	for _, d := range devs {
		v, _ := os.ReadFile(filepath.Join(d, "vendor"))
		id, _ := os.ReadFile(filepath.Join(d, "device"))
		if strings.TrimSpace(string(v)) == fmt.Sprintf("%#04x", vendor) && strings.TrimSpace(string(id)) == fmt.Sprintf("%#04x", device) {
			out = append(out, filepath.Base(d))
		}
	}
	return out
}

var echoLine = regexp.MustCompile(`^\s+echo (\S+) > (\S+)$`)

// runRecipe carries out the shell commands an error message gives (the
// echo lines), as a user would paste them: it proves the recipe works.
func runRecipe(t *testing.T, msg string) {
	t.Helper()
	n := 0
	for _, line := range strings.Split(msg, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "modprobe") {
			t.Fatalf("recipe asks for %q but vfio-pci is loaded", line)
		}
		m := echoLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		require.NoError(t, os.WriteFile(m[2], []byte(m[1]+"\n"), 0), "recipe line %q", line)
		n++
	}
	require.NotZero(t, n, "no commands in %q", msg)
}

// bindByRecipe opens edu, expects ErrNotBoundToVFIO, and binds it with the
// commands of the error message.
func bindByRecipe(t *testing.T, addr string) {
	t.Helper()
	_, err := vfio.Open(addr)
	require.ErrorIs(t, err, vfio.ErrNotBoundToVFIO)
	t.Logf("before binding: %v", err)
	require.Contains(t, err.Error(), "driver_override")
	runRecipe(t, err.Error())
	drv, err := os.Readlink("/sys/bus/pci/devices/" + addr + "/driver")
	require.NoError(t, err)
	require.Equal(t, "vfio-pci", filepath.Base(drv))
}

// edu is an opened edu device with BAR0 mapped and its registers.
type edu struct {
	t   *testing.T
	dev *vfio.Device
	bar *vfio.BAR
}

func openEdu(t *testing.T) *edu {
	t.Helper()
	d, err := vfio.Open(eduAddr(t))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	bar, err := d.MapBAR(0)
	require.NoError(t, err)
	return &edu{t: t, dev: d, bar: bar}
}

func (e *edu) r32(off uint64) uint32 {
	v, err := e.bar.Read32(off)
	require.NoError(e.t, err)
	return v
}

func (e *edu) w32(off uint64, v uint32) { require.NoError(e.t, e.bar.Write32(off, v)) }
func (e *edu) w64(off uint64, v uint64) { require.NoError(e.t, e.bar.Write64(off, v)) }

// dma runs one edu DMA and waits for it to finish (about 100 ms of guest
// time). toRAM moves edu's buffer to iova, otherwise iova to edu's buffer.
func (e *edu) dma(iova uint64, bufOff uint64, n int, toRAM, irq bool) {
	e.t.Helper()
	require.LessOrEqual(e.t, n, eduMaxDMA)
	cmd := uint64(dmaStart)
	if toRAM {
		e.w64(regDMASrc, eduBuffer+bufOff)
		e.w64(regDMADst, iova)
		cmd |= dmaToRAM
	} else {
		e.w64(regDMASrc, iova)
		e.w64(regDMADst, eduBuffer+bufOff)
	}
	e.w64(regDMACount, uint64(n))
	if irq {
		cmd |= dmaIRQ
	}
	e.w64(regDMACmd, cmd)
	e.waitIdle(regDMACmd, dmaStart)
}

func (e *edu) waitIdle(reg uint64, busy uint32) {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for e.r32(reg)&busy != 0 {
		if time.Now().After(deadline) {
			e.t.Fatalf("edu register %#x still busy (%#x) after 20 s", reg, e.r32(reg))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func pattern(rng *rand.Rand, n int) []byte {
	p := make([]byte, n)
	rng.Read(p)
	return p
}

func waitIRQ(t *testing.T, c <-chan vfio.Interrupt, what string) vfio.Interrupt {
	t.Helper()
	select {
	case ev, ok := <-c:
		require.True(t, ok, "interrupt channel closed while waiting for %s", what)
		return ev
	case <-time.After(20 * time.Second):
		t.Fatalf("no interrupt for %s in 20 s", what)
	}
	return vfio.Interrupt{}
}

// kmsg reads the kernel log from now on.
type kmsg struct{ f *os.File }

func tailKmsg(t *testing.T) *kmsg {
	fd, err := unix.Open("/dev/kmsg", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	_, err = unix.Seek(fd, 0, unix.SEEK_END)
	require.NoError(t, err)
	k := &kmsg{os.NewFile(uintptr(fd), "/dev/kmsg")}
	t.Cleanup(func() { k.f.Close() })
	return k
}

// waitFor returns the first new kernel log line containing all of want.
func (k *kmsg) waitFor(t *testing.T, want ...string) string {
	t.Helper()
	k.f.SetReadDeadline(time.Now().Add(20 * time.Second))
	buf := make([]byte, 8192)
	var seen []string
	for {
		n, err := k.f.Read(buf)
		if errors.Is(err, unix.EPIPE) { // records were overwritten: keep going
			continue
		}
		if err != nil {
			t.Fatalf("no kernel log line with %q (%v); saw:\n%s", want, err, strings.Join(seen, "\n"))
		}
		rec := string(buf[:n])
		if _, msg, ok := strings.Cut(rec, ";"); ok {
			rec = strings.TrimSpace(msg)
		}
		seen = append(seen, rec)
		all := true
		for _, w := range want {
			all = all && strings.Contains(rec, w)
		}
		if all {
			return rec
		}
	}
}
