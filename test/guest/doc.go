// Package guest boots throw-away Linux guests under QEMU for harnesses that
// need a real kernel on the other side: Linux soft-iWARP (test/interop) and
// Linux VFIO against an emulated PCI device (the VFIO harness).
//
// Everything comes from Debian packages and is cached under CacheDir()
// (/var/cache/openiwarp, or $OPENIWARP_CACHE), shared by runs and clones:
//
//   - FetchKernel: apt-get download of the image package linux-image-amd64
//     depends on (bookworm: 6.1), unpacked with dpkg-deb, its vmlinux
//     extracted from the XZ payload of vmlinuz (ExtractVmlinux), depmod run.
//     With KernelOptions.Headers it adds linux-headers and linux-kbuild so
//     that Kernel.BuildModule builds out-of-tree modules (cached by source
//     hash); Kernel.Source extracts one subtree of linux-source-X.Y.
//   - Image.Build: an uncompressed newc initramfs with busybox-static, the
//     guest agent (built from ./agent with CGO_ENABLED=0), the modules named
//     in Image.Modules plus their dependencies (insmod'ed at boot in order),
//     programs copied with the libraries ldd lists (Image.Binaries), extra
//     files, and a shell fragment run by /init. The file is named by its
//     SHA-256, so an unchanged image is never rebuilt.
//   - Boot: QEMU with TCG (-accel tcg,thread=multi -cpu max; KVM is unusable
//     on the project's machines), -machine q35, the vmlinux booted through
//     PVH, -nodefaults, the serial console streamed to Config.ConsoleLog,
//     extra -device values first (e.g. "intel-iommu,intremap=on", "edu"),
//     extra kernel arguments, an optional 9p share at /mnt/host and an
//     optional virtio NIC on a tap port of a Network. It returns when the
//     agent inside the guest answers (about 4 s), or a *BootError holding
//     the console's last lines.
//   - VM.Run / VM.Shell / VM.Start: run programs in the guest over a
//     virtio-serial port (JSON lines, see internal/wire): exit status,
//     combined output, streaming (Proc.WaitOutput waits for a string),
//     signals. Every wait is bounded by a context; a program whose context
//     ends is killed. A non-zero exit is an *ExitError.
//   - NewNetwork: a network namespace oiw-<pid>-<n> with loopback and a
//     bridge br0 (198.18.0.1/24 by default) whose ports are taps for guests
//     (guest addresses 198.18.0.2, .3, ...). Network.Do runs Go code (dial,
//     listen) on a thread inside the namespace; Network.Command runs a
//     program there; Network.Capture runs tcpdump on the bridge. Nothing is
//     bridged to any outside interface.
//
// Cleanup: VM.Shutdown powers the guest off (VM.Close kills QEMU, only the
// process it started) and removes the VM's temporary directory; Network.Close
// deletes the namespace with its bridge and taps. Every QEMU, tcpdump and
// namespace program this package starts gets SIGKILL if the test process
// dies (Pdeathsig); namespaces (oiw-<pid>-<n>) and VM directories
// (oiw-vm-<pid>-*) whose creator is gone are removed by the next NewNetwork
// or Boot.
//
// Host requirements (Debian packages): qemu-system-x86, busybox-static, kmod,
// xz-utils, dpkg, apt (for apt-get download), iproute2, tcpdump; gcc and make
// for BuildModule. Root is needed for namespaces and taps.
//
// Running a statically linked Go test binary in a guest with VT-d and edu:
//
//	bin := "/path/to/vfio.test" // CGO_ENABLED=0 go test -c
//	k, _ := guest.FetchKernel(ctx, guest.KernelOptions{})
//	initrd, _ := guest.Image{Kernel: k, Modules: []string{"vfio_pci"},
//		Files: []guest.File{{Src: bin, Dst: "/bin/vfio.test", Mode: 0o755}}}.Build(ctx)
//	vm, _ := guest.Boot(ctx, guest.Config{Kernel: k, Initrd: initrd,
//		Devices: []string{"intel-iommu,intremap=on", "edu"},
//		Append:  []string{"intel_iommu=on"}, ConsoleLog: "build/vfio-console.log"})
//	defer vm.Close()
//	res, err := vm.Run(ctx, "/bin/vfio.test", "-test.v") // res.Output, *ExitError
//	_ = vm.Shutdown(ctx)
package guest
