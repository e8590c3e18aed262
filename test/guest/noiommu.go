package guest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// NoIOMMUVFIO builds vfio.ko from the kernel's own source with VFIO's
// no-IOMMU mode compiled in (Debian's 6.1 leaves CONFIG_VFIO_NOIOMMU
// unset) and returns its path, cached as BuildModule caches. Put it in
// Image.Modules before "vfio_pci": the stock vfio_pci and its other
// dependencies load on top of it. The kernel needs Headers.
func (k *Kernel) NoIOMMUVFIO(ctx context.Context) (string, error) {
	src, err := k.Source(ctx, "drivers/vfio")
	if err != nil {
		return "", err
	}
	kos, err := k.BuildModule(ctx, ModuleBuild{Src: src, Patch: func(dir string) error {
		// Only vfio.ko, with the no-IOMMU mode compiled in.
		return os.WriteFile(filepath.Join(dir, "Makefile"), []byte(
			"obj-m += vfio.o\nvfio-y += vfio_main.o iova_bitmap.o container.o\nccflags-y += -DCONFIG_VFIO_NOIOMMU=1\n"), 0o644)
	}})
	if err != nil {
		return "", fmt.Errorf("guest: building vfio.ko with CONFIG_VFIO_NOIOMMU: %w", err)
	}
	if kos["vfio.ko"] == "" {
		return "", fmt.Errorf("guest: building vfio.ko with CONFIG_VFIO_NOIOMMU produced no vfio.ko")
	}
	return kos["vfio.ko"], nil
}
