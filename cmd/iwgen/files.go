package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/openiwarp/openiwarp/hw/gen"
)

// RegMapRoot, when not empty, is the repository root under which Files also
// renders the register maps (docs/regmap.md, host/driver/regs/regs.go);
// main sets it from -regmap-root.
var RegMapRoot string

// File is one generated file; gen.Render made it, so it opens with the
// generated-file marker.
type File = gen.GenFile

// Files renders every shipped block: <rtl>/<name>.v, <rtl>/<name>.vhd and
// <ports>/<name>.h, and the register maps.
func Files(rtl, ports string) ([]File, error) {
	mods, err := gen.Blocks()
	if err != nil {
		return nil, err
	}
	var files []File
	for _, m := range mods {
		for _, out := range []struct {
			path string
			emit func(io.Writer, *gen.Module) error
		}{
			{filepath.Join(rtl, m.Name+".v"), gen.WriteVerilog},
			{filepath.Join(rtl, m.Name+".vhd"), gen.WriteVHDL},
			{filepath.Join(ports, m.Name+".h"), gen.WriteSimGlue},
		} {
			f, err := gen.Render(out.path, func(w io.Writer) error { return out.emit(w, m) })
			if err != nil {
				return nil, err
			}
			files = append(files, f)
		}
	}
	rms, err := gen.RegMapFiles()
	if err != nil {
		return nil, err
	}
	for _, f := range rms {
		switch {
		case filepath.Dir(f.Path) == "hw/rtl": // register-map RTL constants live with the RTL
			files = append(files, File{Path: filepath.Join(rtl, filepath.Base(f.Path)), Data: f.Data})
		case RegMapRoot != "":
			files = append(files, File{Path: filepath.Join(RegMapRoot, f.Path), Data: f.Data})
		}
	}
	return files, nil
}

// Check compares files with the disk and lists every difference: a file
// that would change or be created, and a file in rtl or ports that the
// generator does not produce.
func Check(files []File, rtl, ports string) ([]string, error) {
	var diffs []string
	want := map[string]bool{}
	for _, f := range files {
		want[f.Path] = true
		old, err := os.ReadFile(f.Path)
		switch {
		case os.IsNotExist(err):
			diffs = append(diffs, "missing: "+f.Path)
		case err != nil:
			return nil, err
		case !bytes.Equal(old, f.Data):
			diffs = append(diffs, "differs: "+f.Path)
		}
	}
	for _, dir := range []string{rtl, ports} {
		ents, err := os.ReadDir(dir)
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			ext := filepath.Ext(p)
			if !e.IsDir() && (ext == ".v" || ext == ".vhd" || ext == ".h") && !want[p] {
				diffs = append(diffs, "not generated: "+p)
			}
		}
	}
	sort.Strings(diffs)
	return diffs, nil
}
