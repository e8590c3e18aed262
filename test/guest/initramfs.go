package guest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
)

// BaseModules are loaded in every guest: the virtio transport, the NIC, the
// agent's serial port and the 9p share.
var BaseModules = []string{"virtio_pci", "virtio_net", "virtio_console", "9pnet_virtio", "9p"}

// BusyboxPath is the static busybox copied into every initramfs (Debian's
// busybox-static).
const BusyboxPath = "/bin/busybox"

// LibDirs is the library search path set for every guest program.
const LibDirs = "/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:/lib64"

// File is one extra file for the initramfs: host Src (symlinks followed) or
// literal Data, placed at guest path Dst.
type File struct {
	Src  string
	Data []byte
	Dst  string
	Mode os.FileMode // 0: Src's permission bits, or 0644 for Data
}

// Image describes an initramfs: busybox, the guest agent, kernel modules,
// programs with their shared libraries, extra files and an init fragment.
type Image struct {
	Kernel *Kernel
	// Modules are module names (modprobe's names) or paths of out-of-tree
	// .ko files; with their dependencies they are insmod'ed at boot, in
	// order, after BaseModules.
	Modules []string
	// Binaries are host programs or shared objects copied to the same path
	// in the guest with every library ldd lists (and libgcc_s, which glibc
	// loads at thread exit). Static binaries are copied alone.
	Binaries []string
	// Files are copied as they are.
	Files []File
	// Init is a busybox sh fragment that /init sources after modules,
	// network and share are up, before the agent starts (e.g. `rdma link
	// add ...`). A failing command there does not stop the boot.
	Init string
}

// Build assembles the initramfs and returns its path in the cache
// (CacheDir()/initramfs/<sha256>.cpio): identical inputs give the same file,
// built once.
func (im Image) Build(ctx context.Context) (string, error) {
	if im.Kernel == nil {
		return "", errors.New("guest: Image.Kernel is nil")
	}
	k := im.Kernel
	var entries []cpioEntry
	add := func(e cpioEntry) { entries = append(entries, e) }
	addHost := func(src, dst string, mode os.FileMode) error {
		b, err := os.ReadFile(src)
		if err != nil {
			return fmt.Errorf("guest: initramfs: %w", err)
		}
		if mode == 0 {
			st, err := os.Stat(src)
			if err != nil {
				return fmt.Errorf("guest: initramfs: %w", err)
			}
			mode = st.Mode().Perm()
		}
		add(cpioEntry{Name: dst, Mode: uint32(mode.Perm()), Data: b})
		return nil
	}

	if err := checkStatic(BusyboxPath); err != nil {
		return "", err
	}
	if err := addHost(BusyboxPath, "/bin/busybox", 0o755); err != nil {
		return "", err
	}
	agent, err := buildAgent(ctx)
	if err != nil {
		return "", err
	}
	add(cpioEntry{Name: "/sbin/oiw-agent", Mode: 0o755, Data: agent})

	mods, err := k.ModulePaths(ctx, append(append([]string{}, BaseModules...), im.Modules...)...)
	if err != nil {
		return "", err
	}
	var modList bytes.Buffer
	for _, m := range mods {
		dst := path.Join("/lib/modules", k.Release, "extra", filepath.Base(m))
		if rel, err := filepath.Rel(filepath.Join(k.Root, "lib/modules", k.Release), m); err == nil && !strings.HasPrefix(rel, "..") {
			dst = path.Join("/lib/modules", k.Release, filepath.ToSlash(rel))
		}
		if err := addHost(m, dst, 0o644); err != nil {
			return "", err
		}
		fmt.Fprintln(&modList, dst)
	}
	add(cpioEntry{Name: "/etc/oiw/modules", Mode: 0o644, Data: modList.Bytes()})

	seen := map[string]bool{}
	for _, b := range im.Binaries {
		files, err := lddClosure(ctx, b)
		if err != nil {
			return "", err
		}
		for _, f := range files {
			if seen[f] {
				continue
			}
			seen[f] = true
			if err := addHost(f, f, 0); err != nil {
				return "", err
			}
		}
	}
	for _, f := range im.Files {
		if f.Src != "" {
			if err := addHost(f.Src, f.Dst, f.Mode); err != nil {
				return "", err
			}
			continue
		}
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		add(cpioEntry{Name: f.Dst, Mode: uint32(mode.Perm()), Data: f.Data})
	}
	add(cpioEntry{Name: "/init", Mode: 0o755, Data: []byte(initScript)})
	add(cpioEntry{Name: "/etc/oiw/init.sh", Mode: 0o644, Data: []byte(im.Init + "\n")})
	// Debian's merged /usr layout, so that paths ldd printed resolve.
	add(cpioEntry{Name: "/lib64/.keep", Mode: 0o644})

	var buf bytes.Buffer
	if err := writeCpio(&buf, entries); err != nil {
		return "", err
	}
	sum := sha256.Sum256(buf.Bytes())
	dir := filepath.Join(CacheDir(), "initramfs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("guest: %w", err)
	}
	out := filepath.Join(dir, hex.EncodeToString(sum[:16])+".cpio")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	tmp, err := os.CreateTemp(dir, "tmp-*.cpio")
	if err != nil {
		return "", fmt.Errorf("guest: %w", err)
	}
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", fmt.Errorf("guest: %w", err)
	}
	tmp.Close()
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return "", fmt.Errorf("guest: %w", err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return "", fmt.Errorf("guest: %w", err)
	}
	return out, nil
}

// initScript is the guest's PID 1. Its kernel command line parameters:
// oiw.addr=CIDR (eth0's address), oiw.share=TAG (9p share at /mnt/host).
const initScript = `#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /tmp /run /mnt/host /sbin /usr/bin /usr/sbin /var/run
/bin/busybox --install -s
export PATH=/sbin:/bin:/usr/sbin:/usr/bin LD_LIBRARY_PATH=` + LibDirs + ` HOME=/tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /dev/shm
while read m; do insmod "$m" || echo "oiw-init: insmod $m failed"; done < /etc/oiw/modules
ip link set lo up
for a in $(cat /proc/cmdline); do
  case "$a" in
  oiw.addr=*) ADDR="${a#oiw.addr=}" ;;
  oiw.share=*) SHARE="${a#oiw.share=}" ;;
  esac
done
if [ -n "$ADDR" ]; then ip addr add "$ADDR" dev eth0 && ip link set eth0 up; fi
if [ -n "$SHARE" ]; then mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 "$SHARE" /mnt/host || echo "oiw-init: 9p mount failed"; fi
. /etc/oiw/init.sh
echo "oiw-init: starting agent"
/sbin/oiw-agent
echo "oiw-init: agent exited ($?), powering off"
sync
poweroff -f
`

// checkStatic fails unless the ELF file at p has no program interpreter.
func checkStatic(p string) error {
	f, err := elf.Open(p)
	if err != nil {
		return fmt.Errorf("guest: %s: %w", p, err)
	}
	defer f.Close()
	for _, ph := range f.Progs {
		if ph.Type == elf.PT_INTERP {
			return fmt.Errorf("guest: %s is dynamically linked; install busybox-static", p)
		}
	}
	return nil
}

// lddClosure returns bin and the shared libraries ldd resolves for it, plus
// libgcc_s when bin is dynamic.
func lddClosure(ctx context.Context, bin string) ([]string, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("guest: binary: %w", err)
	}
	files := []string{bin}
	if checkStatic(bin) == nil {
		return files, nil
	}
	out, err := runCmd(ctx, "", "ldd", bin)
	if err != nil {
		return nil, err
	}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			files = append(files, f[2])
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			files = append(files, f[0])
		case len(f) >= 2 && f[1] == "=>" && f[2] == "not":
			return nil, fmt.Errorf("guest: %s: library %s not found", bin, f[0])
		}
	}
	if gcc, err := findLib("libgcc_s.so.1"); err == nil {
		files = append(files, gcc)
	}
	return files, nil
}

func findLib(name string) (string, error) {
	for _, d := range strings.Split(LibDirs, ":") {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("guest: %s not found in %s", name, LibDirs)
}

// buildAgent compiles the guest agent (./agent next to this file) as a static
// binary and returns its bytes.
func buildAgent(ctx context.Context) ([]byte, error) {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return nil, errors.New("guest: cannot locate the agent's source")
	}
	dir := filepath.Join(filepath.Dir(self), "agent")
	tmp, err := os.MkdirTemp("", "oiw-agent-")
	if err != nil {
		return nil, fmt.Errorf("guest: %w", err)
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "oiw-agent")
	cmd := exec.CommandContext(ctx, GoTool(), "build", "-trimpath", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("guest: building the agent: %w: %s", err, b)
	}
	return os.ReadFile(out)
}

// GoTool returns the go command that builds what goes into guests: PATH's
// (go test puts its own toolchain's bin directory first there), else the
// toolchain's usual place.
func GoTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "/usr/local/go/bin/go"
}
