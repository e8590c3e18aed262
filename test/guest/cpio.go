package guest

import (
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
)

// cpioEntry is one member of an initramfs: a directory, a regular file or a
// symbolic link (Link set).
type cpioEntry struct {
	Name string // absolute guest path
	Mode uint32 // permission bits
	Dir  bool
	Link string
	Data []byte
}

const (
	cpioDir  = 0o040000
	cpioFile = 0o100000
	cpioLink = 0o120000
)

// writeCpio writes entries as an uncompressed "newc" cpio archive (the format
// the kernel unpacks into its rootfs), creating parent directories first and
// ordering entries by name so the archive is reproducible.
func writeCpio(w io.Writer, entries []cpioEntry) error {
	byName := map[string]cpioEntry{}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name, "/") {
			return fmt.Errorf("guest: initramfs path %q is not absolute", e.Name)
		}
		e.Name = path.Clean(e.Name)
		byName[e.Name] = e
		for d := path.Dir(e.Name); d != "/"; d = path.Dir(d) {
			if _, ok := byName[d]; !ok {
				byName[d] = cpioEntry{Name: d, Dir: true, Mode: 0o755}
			}
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	ino := uint32(1)
	for _, n := range names {
		e := byName[n]
		mode, data := cpioFile|e.Mode, e.Data
		switch {
		case e.Dir:
			mode, data = cpioDir|e.Mode, nil
		case e.Link != "":
			mode, data = cpioLink|0o777, []byte(e.Link)
		}
		if err := writeCpioRecord(w, ino, mode, strings.TrimPrefix(n, "/"), data); err != nil {
			return err
		}
		ino++
	}
	return writeCpioRecord(w, 0, 0, "TRAILER!!!", nil)
}

func writeCpioRecord(w io.Writer, ino, mode uint32, name string, data []byte) error {
	nlink := uint32(1)
	if mode&0o170000 == cpioDir {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(name)+1, 0)
	buf := make([]byte, 0, len(hdr)+len(name)+8)
	buf = append(buf, hdr...)
	buf = append(buf, name...)
	buf = append(buf, 0)
	buf = pad4(buf)
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("guest: write initramfs: %w", err)
	}
	if len(data) > 0 {
		if _, err := w.Write(data); err != nil {
			return fmt.Errorf("guest: write initramfs: %w", err)
		}
		if p := (4 - len(data)%4) % 4; p > 0 {
			if _, err := w.Write(make([]byte, p)); err != nil {
				return fmt.Errorf("guest: write initramfs: %w", err)
			}
		}
	}
	return nil
}

func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}
