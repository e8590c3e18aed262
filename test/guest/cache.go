package guest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// DefaultCacheDir is where downloaded packages, extracted kernels, built
// modules and initramfs images are kept between runs (and between clones of
// the repository). OPENIWARP_CACHE overrides it.
const DefaultCacheDir = "/var/cache/openiwarp"

// CacheDir returns the cache directory in use: $OPENIWARP_CACHE if set, else
// DefaultCacheDir.
func CacheDir() string {
	if d := os.Getenv("OPENIWARP_CACHE"); d != "" {
		return d
	}
	return DefaultCacheDir
}

// lockCache takes an exclusive advisory lock on name inside dir, so that two
// test processes (or two helpers' harnesses) never build the same cache entry
// at once. The returned func releases it.
func lockCache(dir, name string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("guest: cache dir: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "."+name+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("guest: cache lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("guest: cache lock %s: %w", f.Name(), err)
	}
	return func() {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}

// runCmd runs a command, returning its stdout; on failure the error carries
// the command line and its stderr.
func runCmd(ctx context.Context, dir string, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("guest: %s %s: %w: %s", name, strings.Join(args, " "), err,
			strings.TrimSpace(lastLines(stderr.String(), 15)))
	}
	return stdout.Bytes(), nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// aptCandidate returns the version apt would install for pkg.
func aptCandidate(ctx context.Context, pkg string) (string, error) {
	out, err := runCmd(ctx, "", "apt-cache", "policy", pkg)
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(out), "\n") {
		l = strings.TrimSpace(l)
		if v, ok := strings.CutPrefix(l, "Candidate:"); ok {
			v = strings.TrimSpace(v)
			if v == "" || v == "(none)" {
				break
			}
			return v, nil
		}
	}
	return "", fmt.Errorf("guest: apt has no candidate for %s (apt-get update?)", pkg)
}

// aptDepends returns the direct Depends of pkg (first alternative of each).
func aptDepends(ctx context.Context, pkg string) ([]string, error) {
	out, err := runCmd(ctx, "", "apt-cache", "depends", pkg)
	if err != nil {
		return nil, err
	}
	var deps []string
	for _, l := range strings.Split(string(out), "\n") {
		if d, ok := strings.CutPrefix(strings.TrimSpace(l), "Depends:"); ok {
			deps = append(deps, strings.Trim(strings.TrimSpace(d), "<>"))
		}
	}
	return deps, nil
}

// fetchDeb returns the path of pkg's .deb at version in cache/debs,
// downloading it with apt-get download if it is not there yet.
func fetchDeb(ctx context.Context, cache, pkg, version string) (string, error) {
	dir := filepath.Join(cache, "debs")
	unlock, err := lockCache(dir, "download")
	if err != nil {
		return "", err
	}
	defer unlock()
	// apt-get download names files pkg_version_arch.deb with ':' escaped.
	ver := strings.ReplaceAll(version, ":", "%3a")
	matches, _ := filepath.Glob(filepath.Join(dir, pkg+"_"+ver+"_*.deb"))
	if len(matches) > 0 {
		return matches[0], nil
	}
	if _, err := runCmd(ctx, dir, "apt-get", "download", "-q", pkg+"="+version); err != nil {
		return "", err
	}
	matches, _ = filepath.Glob(filepath.Join(dir, pkg+"_"+ver+"_*.deb"))
	if len(matches) == 0 {
		return "", fmt.Errorf("guest: apt-get download %s=%s left no .deb in %s", pkg, version, dir)
	}
	return matches[0], nil
}

// publishDir atomically moves a fully built tmp directory to final (another
// process may have won the race: then tmp is dropped).
func publishDir(tmp, final string) error {
	if err := os.Rename(tmp, final); err != nil {
		if _, serr := os.Stat(final); serr == nil {
			return os.RemoveAll(tmp)
		}
		return fmt.Errorf("guest: publish %s: %w", final, err)
	}
	return nil
}
