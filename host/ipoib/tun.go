package ipoib

import (
	"fmt"
	"os"
	"os/exec"
	"strings"

	"golang.org/x/sys/unix"
)

// openTUN creates (or attaches to) the layer-3 TUN device name: IFF_TUN
// without packet information, so each read or write is one bare IP packet.
// The fd is non-blocking so reads go through the Go poller and Close
// interrupts them.
func openTUN(name string) (*os.File, string, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", fmt.Errorf("open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return nil, "", fmt.Errorf("interface name %q: %w", name, err)
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, "", fmt.Errorf("TUNSETIFF %q: %w", name, err)
	}
	return os.NewFile(uintptr(fd), "/dev/net/tun"), ifr.Name(), nil
}

// ipCmd runs `ip args...` and reports its output on failure.
func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// configureTUN sets the MTU, the addresses and brings the device up. IPv6
// addresses skip duplicate address detection: the daemon answers neighbour
// solicitations itself, and the kernel never sees them.
func configureTUN(dev string, mtu int, addrs []string) error {
	if err := ipCmd("link", "set", "dev", dev, "mtu", fmt.Sprint(mtu)); err != nil {
		return err
	}
	for _, a := range addrs {
		args := []string{"addr", "add", a, "dev", dev}
		if strings.Contains(a, ":") {
			args = append([]string{"-6"}, append(args, "nodad")...)
		}
		if err := ipCmd(args...); err != nil {
			return err
		}
	}
	return ipCmd("link", "set", "dev", dev, "up")
}
