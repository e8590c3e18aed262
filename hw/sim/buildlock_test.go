package sim

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// lockBuild holds the build lock until released: another open file of
// the lock cannot take it meanwhile, and can once it is released (flock
// locks of different open files exclude each other, as those of two
// processes do).
func TestBuildLockExcludes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "build", "hw", "sim") // made by lockBuild
	unlock, err := lockBuild(dir)
	require.NoError(t, err)
	f, err := os.Open(filepath.Join(dir, ".build.lock"))
	require.NoError(t, err)
	defer f.Close()
	require.ErrorIs(t, unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB), unix.EWOULDBLOCK, "the lock is not held")
	unlock()
	require.NoError(t, unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB), "the lock was not released")
}
