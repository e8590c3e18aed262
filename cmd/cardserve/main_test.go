package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUsage(t *testing.T) {
	assert.Equal(t, 0, run([]string{"-h"}))
	assert.Equal(t, 2, run(nil), "no QEMU command line")
	assert.Equal(t, 2, run([]string{"-nosuchflag"}))
	assert.Equal(t, 2, run([]string{"-vectors", "65", "--", "true"}), "vectors out of range")
	assert.Equal(t, 2, run([]string{"-card", "fpga", "--", "true"}), "no such card")
	assert.Equal(t, 2, run([]string{"-card", "rtl", "-width", "128", "--", "true"}), "the RTL is 64 or 512 bits")
	assert.Equal(t, 1, run([]string{"--", filepath.Join(t.TempDir(), "no-such-qemu")}), "QEMU does not start")
}

// A "QEMU" that exits at once: cardserve serves nothing, reports its
// counters and exits with QEMU's status.
func TestExitStatus(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "ivshmem.sock")
	assert.Equal(t, 0, run([]string{"-json", "-ivshmem", sock, "--", "true"}))
	assert.Equal(t, 1, run([]string{"--", "false"}))
	assert.Equal(t, 3, run([]string{"--", "sh", "-c", "test -S /proc/self/fd/3 || exit 9; exit 3"}), "QEMU gets the proxy socket as descriptor 3")
	_, err := os.Stat(sock)
	assert.ErrorIs(t, err, os.ErrNotExist, "the ivshmem socket is removed when cardserve exits")
}
