package guest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCpioListsWithBusybox(t *testing.T) {
	var buf bytes.Buffer
	err := writeCpio(&buf, []cpioEntry{
		{Name: "/init", Mode: 0o755, Data: []byte("#!/bin/sh\n")},
		{Name: "/a/b/c.txt", Mode: 0o644, Data: []byte("hello")},
		{Name: "/a/link", Link: "b/c.txt"},
	})
	require.NoError(t, err)
	dir := t.TempDir()
	cmd := exec.Command(BusyboxPath, "cpio", "-i", "-d")
	cmd.Dir = dir
	cmd.Stdin = &buf
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	b, err := os.ReadFile(filepath.Join(dir, "a/b/c.txt"))
	require.NoError(t, err)
	require.Equal(t, "hello", string(b))
	l, err := os.Readlink(filepath.Join(dir, "a/link"))
	require.NoError(t, err)
	require.Equal(t, "b/c.txt", l)
	st, err := os.Stat(filepath.Join(dir, "init"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), st.Mode().Perm())
}

func TestCpioRejectsRelativePath(t *testing.T) {
	err := writeCpio(io.Discard, []cpioEntry{{Name: "init"}})
	require.ErrorContains(t, err, "not absolute")
}

func TestExtractVmlinuxFindsXZPayload(t *testing.T) {
	dir := t.TempDir()
	// A fake bzImage: junk, a false XZ magic, then a real XZ stream holding
	// an ELF file (this test binary), then trailing junk.
	self, err := os.ReadFile("/proc/self/exe")
	require.NoError(t, err)
	cmd := exec.Command("xz", "-c", "-0")
	cmd.Stdin = bytes.NewReader(self)
	xzData, err := cmd.Output()
	require.NoError(t, err)
	img := append([]byte("MZ-not-a-kernel"), xzMagic...)
	img = append(img, "garbage"...)
	img = append(img, xzData...)
	img = append(img, "trailer"...)
	vmlinuz := filepath.Join(dir, "vmlinuz")
	require.NoError(t, os.WriteFile(vmlinuz, img, 0o644))
	dst := filepath.Join(dir, "vmlinux")
	require.NoError(t, ExtractVmlinux(context.Background(), vmlinuz, dst))
	got, err := os.ReadFile(dst)
	require.NoError(t, err)
	require.True(t, bytes.Equal(self, got))

	require.NoError(t, os.WriteFile(vmlinuz, []byte("no payload here"), 0o644))
	err = ExtractVmlinux(context.Background(), vmlinuz, dst)
	require.True(t, errors.Is(err, ErrNoKernelPayload), "%v", err)
}

// TestBootNetworkShare boots a guest on a namespace bridge and checks the
// agent, the network both ways, and the 9p share.
func TestBootNetworkShare(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a QEMU guest")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	k, err := FetchKernel(ctx, KernelOptions{})
	require.NoError(t, err)
	initrd, err := Image{Kernel: k, Init: "echo init-fragment-ran > /tmp/frag"}.Build(ctx)
	require.NoError(t, err)
	n, err := NewNetwork(ctx, "")
	require.NoError(t, err)
	defer n.Close()
	share := t.TempDir()
	vm, err := Boot(ctx, Config{Kernel: k, Initrd: initrd, Net: n, Addr: "198.18.0.2/24", Share: share})
	require.NoError(t, err)
	defer vm.Close()
	t.Logf("guest kernel %s, console %s", vm.Kernel, vm.ConsoleLog)
	require.Equal(t, k.Release, vm.Kernel)

	res, err := vm.Shell(ctx, "cat /tmp/frag; echo from-guest > /mnt/host/out.txt")
	require.NoError(t, err)
	require.Equal(t, "init-fragment-ran\n", string(res.Output))
	b, err := os.ReadFile(filepath.Join(share, "out.txt"))
	require.NoError(t, err)
	require.Equal(t, "from-guest\n", string(b))

	_, err = vm.Run(ctx, "sh", "-c", "exit 3")
	var ee *ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 3, ee.Code)

	// Guest listens, host (inside the namespace) connects and sends; the
	// bridge capture sees it.
	pcap := filepath.Join(t.TempDir(), "bridge.pcap")
	capt, err := n.Capture(ctx, "", pcap, "tcp", "port", "5000")
	require.NoError(t, err)
	srv, err := vm.Start([]string{"nc", "-l", "-p", "5000"}, StartOptions{})
	require.NoError(t, err)
	var conn net.Conn
	require.Eventually(t, func() bool {
		err := n.Do(func() (err error) {
			conn, err = net.DialTimeout("tcp", "198.18.0.2:5000", time.Second)
			return err
		})
		return err == nil
	}, 30*time.Second, 200*time.Millisecond)
	_, err = conn.Write([]byte("over-the-bridge\n"))
	require.NoError(t, err)
	conn.Close()
	res, err = srv.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, "over-the-bridge\n", string(res.Output))
	require.NoError(t, capt.Stop())
	dec, err := exec.Command("tshark", "-r", pcap, "-T", "fields", "-e", "tcp.payload").Output()
	require.NoError(t, err)
	require.Contains(t, string(dec), "6f7665722d7468652d627269646765") // "over-the-bridge"

	// A program that outlives its deadline is killed.
	sctx, scancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err = vm.Run(sctx, "sleep", "60")
	scancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)

	log, _ := os.ReadFile(vm.ConsoleLog)
	require.True(t, strings.Contains(string(log), "oiw-init: starting agent"))
	require.NoError(t, vm.Shutdown(ctx))
	_, err = os.Stat(vm.Dir)
	require.True(t, os.IsNotExist(err), "VM directory left behind")
	require.NoError(t, n.Close())
	_, err = os.Stat(filepath.Join("/run/netns", n.Name))
	require.True(t, os.IsNotExist(err), "namespace left behind")
}

// TestBootIOMMUEdu boots q35 with the emulated VT-d and QEMU's edu device, as
// the VFIO harness does, and finds edu (1234:11e8) behind an IOMMU group.
func TestBootIOMMUEdu(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a QEMU guest")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	k, err := FetchKernel(ctx, KernelOptions{})
	require.NoError(t, err)
	initrd, err := Image{Kernel: k, Modules: []string{"vfio_pci"}}.Build(ctx)
	require.NoError(t, err)
	vm, err := Boot(ctx, Config{Kernel: k, Initrd: initrd,
		Devices: []string{"intel-iommu,intremap=on", "edu"}, Append: []string{"intel_iommu=on"}})
	require.NoError(t, err)
	defer vm.Close()
	res, err := vm.Shell(ctx, `for d in /sys/bus/pci/devices/*; do
  if [ "$(cat $d/vendor):$(cat $d/device)" = "0x1234:0x11e8" ]; then basename $(readlink $d/iommu_group); fi
done; ls /sys/module | grep -c '^vfio_pci$'`)
	require.NoError(t, err)
	lines := strings.Fields(string(res.Output))
	require.Len(t, lines, 2, "%s", res.Output)
	require.Equal(t, "1", lines[1], "vfio_pci loaded")
	require.NoError(t, vm.Shutdown(ctx))
}

// A guest that cannot boot (no init in its initramfs) ends the boot with a
// *BootError carrying the kernel's last words, and leaves nothing running;
// its kernel panic is retried exactly once (a known TCG flake), no more.
func TestBootFailureReportsConsole(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a QEMU guest")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	k, err := FetchKernel(ctx, KernelOptions{})
	require.NoError(t, err)
	var empty bytes.Buffer
	require.NoError(t, writeCpio(&empty, []cpioEntry{{Name: "/etc/motd", Mode: 0o644, Data: []byte("no init here\n")}}))
	initrd := filepath.Join(t.TempDir(), "noinit.cpio")
	require.NoError(t, os.WriteFile(initrd, empty.Bytes(), 0o644))
	vm, err := Boot(ctx, Config{Kernel: k, Initrd: initrd, BootTimeout: 2 * time.Minute})
	require.Nil(t, vm)
	var be *BootError
	require.ErrorAs(t, err, &be)
	require.ErrorIs(t, err, ErrVMExited)
	require.Contains(t, be.Console, "Kernel panic")
	require.Equal(t, 2, be.Attempts, "a boot-time kernel panic is retried once")
}
