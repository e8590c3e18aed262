package interop

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/openiwarp/openiwarp/test/guest"
)

// SiwSubdir is where siw lives in the kernel source.
const SiwSubdir = "drivers/infiniband/sw/siw"

// Guest paths of the two siw builds in the image.
const (
	SiwModule    = "/lib/modules/extra/siw.ko"     // stock 6.1 siw: CRC only if the peer asks
	SiwCRCModule = "/lib/modules/extra/siw-crc.ko" // mpa_crc_required = true
)

// Guest programs from rdma-core (rdmacm-utils, ibverbs-utils) and iproute2.
var siwBinaries = []string{
	"/usr/bin/rping", "/usr/bin/rdma_server", "/usr/bin/rdma_client",
	"/usr/bin/ibv_devinfo", "/usr/bin/rdma", "/usr/sbin/tc",
	"/usr/lib/x86_64-linux-gnu/libibverbs/libsiw-rdmav34.so",
}

// siwModules are the in-tree modules siw and the verbs/CM user space need.
var siwModules = []string{"ib_core", "ib_uverbs", "iw_cm", "rdma_cm", "rdma_ucm", "libcrc32c", "crc32c_generic", "crc32c_intel",
	"sch_netem"} // netem: DelayEgress

// SiwImage is a guest kernel and initramfs carrying siw (both builds) and
// rdma-core's user space.
type SiwImage struct {
	Kernel *guest.Kernel
	Initrd string
}

// crcRequired patches siw_main.c so that siw insists on MPA CRC (in 6.1
// mpa_crc_required is a compile-time constant, not a module parameter).
func crcRequired(dir string) error {
	p := filepath.Join(dir, "siw_main.c")
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	old := []byte("const bool mpa_crc_required;")
	if !bytes.Contains(b, old) {
		return fmt.Errorf("siw_main.c: %q not found (siw source changed?)", old)
	}
	return os.WriteFile(p, bytes.Replace(b, old, []byte("const bool mpa_crc_required = true;"), 1), 0o644)
}

// BuildSiwImage fetches the Debian kernel with headers, builds siw out of tree
// twice (stock and CRC-requiring) and assembles the guest image. Everything
// is cached (see package guest); a warm call takes a few seconds.
func BuildSiwImage(ctx context.Context) (*SiwImage, error) {
	k, err := guest.FetchKernel(ctx, guest.KernelOptions{Headers: true})
	if err != nil {
		return nil, err
	}
	src, err := k.Source(ctx, SiwSubdir)
	if err != nil {
		return nil, err
	}
	stock, err := k.BuildModule(ctx, guest.ModuleBuild{Src: src, Vars: []string{"CONFIG_RDMA_SIW=m"}})
	if err != nil {
		return nil, fmt.Errorf("interop: build siw: %w", err)
	}
	crc, err := k.BuildModule(ctx, guest.ModuleBuild{Src: src, Vars: []string{"CONFIG_RDMA_SIW=m"}, Patch: crcRequired})
	if err != nil {
		return nil, fmt.Errorf("interop: build CRC-requiring siw: %w", err)
	}
	if stock["siw.ko"] == "" || crc["siw.ko"] == "" {
		return nil, fmt.Errorf("interop: siw build produced no siw.ko")
	}
	img := guest.Image{
		Kernel:   k,
		Modules:  siwModules,
		Binaries: siwBinaries,
		Files: []guest.File{
			{Src: stock["siw.ko"], Dst: SiwModule},
			{Src: crc["siw.ko"], Dst: SiwCRCModule},
			{Src: "/etc/libibverbs.d/siw.driver", Dst: "/etc/libibverbs.d/siw.driver"},
		},
	}
	initrd, err := img.Build(ctx)
	if err != nil {
		return nil, err
	}
	return &SiwImage{Kernel: k, Initrd: initrd}, nil
}

// LoadSiw loads one siw build in a booted guest (unloading another first)
// and attaches it to eth0 as siw0.
func LoadSiw(ctx context.Context, vm *guest.VM, module string) error {
	script := fmt.Sprintf(`set -e
if [ -d /sys/module/siw ]; then rdma link del siw0 2>/dev/null || true; rmmod siw; fi
insmod %s
rdma link add siw0 type siw netdev eth0
test -e /sys/class/infiniband/siw0
echo siw-%s-loaded`, module, path.Base(module))
	if _, err := vm.Shell(ctx, script); err != nil {
		return fmt.Errorf("interop: load %s: %w", module, err)
	}
	return nil
}

// DelayEgress makes the guest hold every packet it sends for d (netem on
// eth0, set with iproute2's tc: busybox's knows no netem) until the returned
// func undoes it. The host kernel has no netem; the Debian guest kernel
// does. It is the workaround for siw's first-Send race between two siw
// guests: the Initiator's first FPDU then reaches the Responder d after the
// Responder sent its MPA Reply.
func DelayEgress(ctx context.Context, vm *guest.VM, d string) (func(), error) {
	if _, err := vm.Shell(ctx, "/usr/sbin/tc qdisc replace dev eth0 root netem delay "+d); err != nil {
		return nil, fmt.Errorf("interop: netem on the guest: %w", err)
	}
	return func() {
		uctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = vm.Shell(uctx, "/usr/sbin/tc qdisc del dev eth0 root")
	}, nil
}
