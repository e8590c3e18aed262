package vfio

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/test/guest"
)

// scenario is one guest configuration and the in-guest tests that run in it.
type scenario struct {
	name    string
	devices []string
	append  []string
	tests   []string // run in this order; each must PASS
	// noiommu: boot with vfio rebuilt with CONFIG_VFIO_NOIOMMU (Debian's
	// is built without it) and 256 MiB, all below edu's 28-bit DMA limit.
	noiommu bool
}

var scenarios = []scenario{
	{
		name:    "vtd-edu",
		devices: []string{"intel-iommu,intremap=on", "edu", "nvme,serial=deadbeef"},
		append:  []string{"intel_iommu=on"},
		tests: []string{"TestNVMeIdentifyMSIX", "TestNVMeReset", "TestEduBind", "TestEduInfo", "TestEduRegisters", "TestEduDMA", "TestEduDMAHugePages",
			"TestEduDMABlocked", "TestEduINTx", "TestEduMSI", "TestEduErrors", "TestEduDMAEntryLimit",
			"TestEduMemlock", "TestEduClose", "TestEduCard", "TestEduPhys", "TestEduMapMemory"},
	},
	{
		name:    "no-iommu",
		devices: []string{"edu"},
		tests:   []string{"TestNoIOMMU"},
	},
	{
		name:    "noiommu-edu",
		devices: []string{"edu"},
		tests:   []string{"TestNoIOMMUMode"},
		noiommu: true,
	},
	{
		name:    "vtd-without-intremap",
		devices: []string{"intel-iommu,intremap=off", "edu"},
		append:  []string{"intel_iommu=on"},
		tests:   []string{"TestNoIntremap"},
	},
	{
		// Behind a PCIe-to-PCI bridge every function shares the bridge's
		// requester ID, so edu and the virtio RNG form one IOMMU group.
		name: "shared-group",
		devices: []string{"intel-iommu,intremap=on", "pcie-pci-bridge,id=pb,bus=pcie.0,addr=0x5",
			"edu,bus=pb,addr=0x1", "virtio-rng-pci,bus=pb,addr=0x2"},
		append: []string{"intel_iommu=on"},
		tests:  []string{"TestNotViable"},
	},
}

func TestVFIOInGuests(t *testing.T) {
	if testing.Short() {
		t.Skip("boots QEMU guests")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	share := buildGuestTests(ctx, t)
	k, err := guest.FetchKernel(ctx, guest.KernelOptions{Headers: true})
	require.NoError(t, err)
	initrd, err := guest.Image{Kernel: k, Modules: []string{"vfio_pci", "vfio_iommu_type1"}}.Build(ctx)
	require.NoError(t, err)
	noiommuInitrd := noiommuImage(ctx, t, k)

	logDir := logDir(t)
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			console := filepath.Join(logDir, sc.name+"-console.log")
			img, mem := initrd, 512
			if sc.noiommu {
				img, mem = noiommuInitrd, 256
			}
			vm, err := guest.Boot(ctx, guest.Config{Kernel: k, Initrd: img, Devices: sc.devices,
				Append: sc.append, Share: share, ConsoleLog: console, MemoryMiB: mem})
			require.NoError(t, err)
			defer vm.Close()
			res, err := vm.Run(ctx, "/mnt/host/edu.test", "-test.v", "-test.count=1",
				"-test.run", "^("+strings.Join(sc.tests, "|")+")$")
			t.Logf("guest %s (kernel %s), console in %s:\n%s", sc.name, vm.Kernel, console, res.Output)
			require.NoError(t, err)
			checkRan(t, string(res.Output), sc.tests)
			require.NoError(t, vm.Shutdown(ctx))
		})
	}
}

// buildGuestTests builds the in-guest tests, static, into a directory
// shared with the guests over 9p (so that the cached initramfs does not
// change with every edit of the tests).
func buildGuestTests(ctx context.Context, t *testing.T) string {
	share := t.TempDir()
	build := exec.CommandContext(ctx, guest.GoTool(), "test", "-c", "-tags", "vfioguest", "-o", filepath.Join(share, "edu.test"), "./edu")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building the in-guest tests: %s", out)
	return share
}

// noiommuImage is the initramfs with vfio.ko rebuilt from the kernel's
// own source with CONFIG_VFIO_NOIOMMU defined (cached after the first
// build); the stock vfio_pci and its other dependencies load on top of it.
func noiommuImage(ctx context.Context, t *testing.T, k *guest.Kernel) string {
	ko, err := k.NoIOMMUVFIO(ctx)
	require.NoError(t, err)
	img, err := guest.Image{Kernel: k, Modules: []string{ko, "vfio_pci"}}.Build(ctx)
	require.NoError(t, err)
	return img
}

var resultLine = regexp.MustCompile(`(?m)^--- (PASS|FAIL|SKIP): (\S+)`)

// checkRan insists that every expected test ran and passed, in order, and
// nothing else ran: a test that silently went missing fails the harness.
func checkRan(t *testing.T, out string, want []string) {
	t.Helper()
	var got []string
	for _, m := range resultLine.FindAllStringSubmatch(out, -1) {
		require.Equal(t, "PASS", m[1], "%s", m[2])
		got = append(got, m[2])
	}
	require.Equal(t, want, got, "in-guest tests that ran")
}

// logDir keeps the guests' consoles under build/ for a failed run.
func logDir(t *testing.T) string {
	root, err := exec.Command(guest.GoTool(), "env", "GOMOD").Output()
	require.NoError(t, err)
	d := filepath.Join(filepath.Dir(strings.TrimSpace(string(root))), "build", "vfio")
	require.NoError(t, os.MkdirAll(d, 0o755))
	return d
}
