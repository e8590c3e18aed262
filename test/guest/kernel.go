package guest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// MetaPackage is the Debian metapackage whose dependency names the default
// guest kernel (bookworm: the current 6.1 image).
const MetaPackage = "linux-image-amd64"

// Kernel is a Debian kernel image package unpacked in the cache.
type Kernel struct {
	Package string // Debian package, e.g. linux-image-6.1.0-56-amd64
	Version string // Debian version, e.g. 6.1.192-2
	Release string // uname -r, e.g. 6.1.0-56-amd64
	Vmlinux string // uncompressed ELF kernel, bootable by QEMU through PVH
	Root    string // unpacked package tree: lib/modules/<Release>, boot/config-<Release>
	Headers string // kbuild tree for out-of-tree modules ("" unless KernelOptions.Headers)
	cache   string
}

// KernelOptions selects the kernel FetchKernel prepares.
type KernelOptions struct {
	// Package is the image package; "" means what MetaPackage depends on.
	Package string
	// Headers also fetches linux-headers-<Release>, its -common package and
	// linux-kbuild, so that BuildModule works.
	Headers bool
	// CacheDir overrides CacheDir().
	CacheDir string
}

// FetchKernel downloads (apt-get download, once) and unpacks a Debian kernel
// image package, extracts its vmlinux and runs depmod over its modules. Every
// step is cached under CacheDir()/kernel; a second call costs a few stat calls
// and two apt-cache queries.
func FetchKernel(ctx context.Context, opts KernelOptions) (*Kernel, error) {
	cache := opts.CacheDir
	if cache == "" {
		cache = CacheDir()
	}
	pkg := opts.Package
	if pkg == "" {
		deps, err := aptDepends(ctx, MetaPackage)
		if err != nil {
			return nil, err
		}
		for _, d := range deps {
			if strings.HasPrefix(d, "linux-image-") {
				pkg = d
				break
			}
		}
		if pkg == "" {
			return nil, fmt.Errorf("guest: %s depends on no linux-image package", MetaPackage)
		}
	}
	version, err := aptCandidate(ctx, pkg)
	if err != nil {
		return nil, err
	}
	release := strings.TrimSuffix(strings.TrimPrefix(pkg, "linux-image-"), "-unsigned")
	k := &Kernel{Package: pkg, Version: version, Release: release, cache: cache}
	dir := filepath.Join(cache, "kernel", pkg+"_"+version)
	k.Root = filepath.Join(dir, "root")
	k.Vmlinux = filepath.Join(dir, "vmlinux")

	unlock, err := lockCache(filepath.Join(cache, "kernel"), pkg+"_"+version)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, ".image-done")); err != nil {
		if err := k.unpackImage(ctx, dir); err != nil {
			return nil, err
		}
	}
	if opts.Headers {
		k.Headers = filepath.Join(k.Root, "usr/src/linux-headers-"+release)
		if _, err := os.Stat(filepath.Join(dir, ".headers-done")); err != nil {
			if err := k.unpackHeaders(ctx, dir); err != nil {
				return nil, err
			}
		}
	}
	return k, nil
}

func (k *Kernel) unpackImage(ctx context.Context, dir string) error {
	deb, err := fetchDeb(ctx, k.cache, k.Package, k.Version)
	if err != nil {
		return err
	}
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(k.Root, 0o755); err != nil {
		return fmt.Errorf("guest: %w", err)
	}
	if _, err := runCmd(ctx, "", "dpkg-deb", "-x", deb, k.Root); err != nil {
		return err
	}
	vmlinuz := filepath.Join(k.Root, "boot", "vmlinuz-"+k.Release)
	if err := ExtractVmlinux(ctx, vmlinuz, k.Vmlinux); err != nil {
		return err
	}
	if _, err := runCmd(ctx, "", "depmod", "-b", k.Root, k.Release); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ".image-done"), nil, 0o644)
}

func (k *Kernel) unpackHeaders(ctx context.Context, dir string) error {
	hdr := "linux-headers-" + k.Release
	deps, err := aptDepends(ctx, hdr)
	if err != nil {
		return err
	}
	pkgs := []string{hdr}
	for _, d := range deps {
		// The compiler package only depends on gcc-N, which must be installed.
		if strings.HasPrefix(d, "linux-headers-") || strings.HasPrefix(d, "linux-kbuild-") {
			pkgs = append(pkgs, d)
		}
	}
	for _, p := range pkgs {
		v, err := aptCandidate(ctx, p)
		if err != nil {
			return err
		}
		deb, err := fetchDeb(ctx, k.cache, p, v)
		if err != nil {
			return err
		}
		if _, err := runCmd(ctx, "", "dpkg-deb", "-x", deb, k.Root); err != nil {
			return err
		}
	}
	// Debian's arch Makefile includes the -common tree by absolute path;
	// point it at our unpacked copy instead.
	mk := filepath.Join(k.Root, "usr/src", hdr, "Makefile")
	b, err := os.ReadFile(mk)
	if err != nil {
		return fmt.Errorf("guest: headers: %w", err)
	}
	fixed := strings.ReplaceAll(string(b), "include /usr/src/", "include "+filepath.Join(k.Root, "usr/src")+"/")
	if err := os.WriteFile(mk, []byte(fixed), 0o644); err != nil {
		return fmt.Errorf("guest: headers: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, ".headers-done"), nil, 0o644)
}

// xzMagic starts an XZ stream (the payload of Debian's x86 vmlinuz).
var xzMagic = []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}

// ErrNoKernelPayload means a vmlinuz held no XZ stream that decompresses to
// an ELF image.
var ErrNoKernelPayload = errors.New("guest: no XZ-compressed ELF kernel in image")

// ExtractVmlinux writes the uncompressed ELF kernel found inside a bzImage
// (vmlinuz) to dst. Like the kernel's scripts/extract-vmlinux, it tries each
// XZ stream header in the file and keeps the first that decompresses to an
// ELF file. It needs the xz program.
func ExtractVmlinux(ctx context.Context, vmlinuz, dst string) error {
	img, err := os.ReadFile(vmlinuz)
	if err != nil {
		return fmt.Errorf("guest: %w", err)
	}
	for off := 0; ; {
		i := bytes.Index(img[off:], xzMagic)
		if i < 0 {
			return fmt.Errorf("%w: %s", ErrNoKernelPayload, vmlinuz)
		}
		off += i
		cmd := exec.CommandContext(ctx, "xz", "-dc", "--single-stream", "-q")
		cmd.Stdin = bytes.NewReader(img[off:])
		out, _ := cmd.Output() // trailing data after the stream is expected
		if len(out) > 4 && bytes.Equal(out[:4], []byte(elf.ELFMAG)) {
			if _, err := elf.NewFile(bytes.NewReader(out)); err != nil {
				return fmt.Errorf("guest: %s: payload is not a valid ELF: %w", vmlinuz, err)
			}
			tmp := dst + ".tmp"
			if err := os.WriteFile(tmp, out, 0o644); err != nil {
				return fmt.Errorf("guest: %w", err)
			}
			return os.Rename(tmp, dst)
		}
		off += len(xzMagic)
	}
}

// ModulePaths resolves kernel module names (as modprobe knows them, e.g.
// "virtio_net") or paths of out-of-tree .ko files into the list of .ko files
// to insmod, dependencies first, each once. Built-in modules are skipped.
func (k *Kernel) ModulePaths(ctx context.Context, mods ...string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, m := range mods {
		if strings.HasSuffix(m, ".ko") {
			deps, err := runCmd(ctx, "", "modinfo", "-F", "depends", m)
			if err != nil {
				return nil, err
			}
			for _, d := range strings.Split(strings.TrimSpace(string(deps)), ",") {
				if d == "" {
					continue
				}
				sub, err := k.ModulePaths(ctx, d)
				if err != nil {
					return nil, fmt.Errorf("guest: dependency of %s: %w", m, err)
				}
				for _, p := range sub {
					add(p)
				}
			}
			add(m)
			continue
		}
		o, err := runCmd(ctx, "", "modprobe", "-d", k.Root, "-S", k.Release, "--show-depends", m)
		if err != nil {
			return nil, err
		}
		for _, l := range strings.Split(string(o), "\n") {
			f := strings.Fields(l)
			if len(f) >= 2 && f[0] == "insmod" {
				add(f[1])
			}
		}
	}
	return out, nil
}

// ModuleBuild describes an out-of-tree kernel module build.
type ModuleBuild struct {
	// Src is a directory with the module's sources and Kbuild/Makefile.
	Src string
	// Vars are extra make variables, e.g. "CONFIG_RDMA_SIW=m".
	Vars []string
	// Patch, if set, edits the copied sources before the build (for a
	// compile-time variant); the result is part of the cache key.
	Patch func(dir string) error
}

// BuildModule compiles an out-of-tree module against this kernel's headers
// (FetchKernel with Headers) and returns the built .ko files by base name,
// debug info stripped. Results are cached by the content of the (patched)
// sources, the make variables and the kernel.
func (k *Kernel) BuildModule(ctx context.Context, b ModuleBuild) (map[string]string, error) {
	if k.Headers == "" {
		return nil, errors.New("guest: BuildModule needs a kernel fetched with Headers")
	}
	work, err := os.MkdirTemp("", "oiw-kmod-")
	if err != nil {
		return nil, fmt.Errorf("guest: %w", err)
	}
	defer os.RemoveAll(work)
	if err := copyTree(b.Src, work); err != nil {
		return nil, err
	}
	if b.Patch != nil {
		if err := b.Patch(work); err != nil {
			return nil, fmt.Errorf("guest: patch %s: %w", b.Src, err)
		}
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s %s %q\n", k.Package, k.Version, b.Vars)
	if err := hashTree(h, work); err != nil {
		return nil, err
	}
	key := hex.EncodeToString(h.Sum(nil))[:24]
	dir := filepath.Join(k.cache, "modules", key)
	if _, err := os.Stat(filepath.Join(dir, ".done")); err != nil {
		args := append([]string{"-C", k.Headers, "M=" + work, "-j2"}, b.Vars...)
		args = append(args, "modules")
		if _, err := runCmd(ctx, "", "make", args...); err != nil {
			return nil, err
		}
		tmp := dir + ".tmp"
		_ = os.RemoveAll(tmp)
		if err := os.MkdirAll(tmp, 0o755); err != nil {
			return nil, fmt.Errorf("guest: %w", err)
		}
		kos, _ := filepath.Glob(filepath.Join(work, "*.ko"))
		if len(kos) == 0 {
			return nil, fmt.Errorf("guest: building %s produced no .ko", b.Src)
		}
		for _, ko := range kos {
			if _, err := runCmd(ctx, "", "strip", "--strip-debug", "-o", filepath.Join(tmp, filepath.Base(ko)), ko); err != nil {
				return nil, err
			}
		}
		if err := os.WriteFile(filepath.Join(tmp, ".done"), nil, 0o644); err != nil {
			return nil, fmt.Errorf("guest: %w", err)
		}
		if err := publishDir(tmp, dir); err != nil {
			return nil, err
		}
	}
	kos, _ := filepath.Glob(filepath.Join(dir, "*.ko"))
	res := map[string]string{}
	for _, ko := range kos {
		res[filepath.Base(ko)] = ko
	}
	return res, nil
}

// Source returns a directory holding subdir (e.g. "drivers/infiniband/sw/siw")
// of the Debian kernel source matching this kernel (linux-source-X.Y at the
// image's version), extracted once into the cache.
func (k *Kernel) Source(ctx context.Context, subdir string) (string, error) {
	parts := strings.SplitN(k.Release, ".", 3)
	if len(parts) < 2 {
		return "", fmt.Errorf("guest: cannot tell the source series of release %q", k.Release)
	}
	series := parts[0] + "." + parts[1]
	pkg := "linux-source-" + series
	base := filepath.Join(k.cache, "kernel", pkg+"_"+k.Version)
	dst := filepath.Join(base, subdir)
	unlock, err := lockCache(filepath.Join(k.cache, "kernel"), pkg+"_"+k.Version)
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(dst, ".done")); err == nil {
		return dst, nil
	}
	deb, err := fetchDeb(ctx, k.cache, pkg, k.Version)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Errorf("guest: %w", err)
	}
	// dpkg-deb --fsys-tarfile | tar -xO <inner .tar.xz> | xz -dc | tar -x <subdir>
	inner := "./usr/src/" + pkg + ".tar.xz"
	top := pkg + "/" + strings.Trim(subdir, "/")
	script := fmt.Sprintf("set -o pipefail; dpkg-deb --fsys-tarfile %q | tar -xO %q | xz -dc | tar -x --strip-components=1 %q",
		deb, inner, top)
	if _, err := runCmd(ctx, base, "bash", "-c", script); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dst, ".done"), nil, 0o644); err != nil {
		return "", fmt.Errorf("guest: %w", err)
	}
	return dst, nil
}

// copyTree copies regular files and directories from src into dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.Name() == ".done" {
			return nil
		}
		t := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(t, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return copyFile(p, t, 0o644)
	})
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("guest: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return fmt.Errorf("guest: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("guest: copy %s: %w", src, err)
	}
	return out.Close()
}

// hashTree feeds every regular file's relative path and contents into h, in
// sorted order.
func hashTree(h io.Writer, root string) error {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("guest: %w", err)
	}
	sort.Strings(files)
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("guest: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", rel, len(b))
		h.Write(b)
	}
	return nil
}
