package sim

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

typedef const char* (*name_fn)(void);
typedef int (*int_fn)(void);
typedef void* (*new_fn)(void);
typedef void (*free_fn)(void*);
typedef void (*run_fn)(void*, const uint32_t*, uint32_t*, uint64_t);
typedef int64_t (*run_check_fn)(void*, const uint32_t*, const uint32_t*, uint32_t*, uint64_t);
typedef int (*trace_open_fn)(void*, const char*);

static const char* call_name(void* f) { return ((name_fn)f)(); }
static int call_int(void* f) { return ((int_fn)f)(); }
static void* call_new(void* f) { return ((new_fn)f)(); }
static void call_free(void* f, void* h) { ((free_fn)f)(h); }
static void call_run(void* f, void* h, const uint32_t* in, uint32_t* out, uint64_t n) { ((run_fn)f)(h, in, out, n); }
static int64_t call_run_check(void* f, void* h, const uint32_t* in, const uint32_t* want, uint32_t* got, uint64_t n) {
	return ((run_check_fn)f)(h, in, want, got, n);
}
static int call_trace_open(void* f, void* h, const char* path) { return ((trace_open_fn)f)(h, path); }
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// ErrLibrary is wrapped by errors about loading a co-simulation library.
var ErrLibrary = errors.New("sim: co-simulation library")

// Lib is a Verilated block loaded from its shared object.
type Lib struct {
	Path     string
	Name     string // module name
	InWords  int    // 32-bit words of inputs per cycle
	OutWords int    // 32-bit words of outputs per cycle

	fnNew, fnFree, fnRun, fnRunCheck, fnTraceOpen, fnTraceClose unsafe.Pointer
}

var (
	libsMu sync.Mutex
	libs   = map[string]*Lib{}
)

// Load opens the shared object at path (once per process).
func Load(path string) (*Lib, error) {
	libsMu.Lock()
	defer libsMu.Unlock()
	if l := libs[path]; l != nil {
		return l, nil
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	h := C.dlopen(cpath, C.RTLD_NOW|C.RTLD_LOCAL)
	if h == nil {
		return nil, fmt.Errorf("%w: dlopen %s: %s", ErrLibrary, path, C.GoString(C.dlerror()))
	}
	sym := func(name string) (unsafe.Pointer, error) {
		cn := C.CString(name)
		defer C.free(unsafe.Pointer(cn))
		p := C.dlsym(h, cn)
		if p == nil {
			return nil, fmt.Errorf("%w: %s has no symbol %s", ErrLibrary, path, name)
		}
		return p, nil
	}
	l := &Lib{Path: path}
	var ptrs [9]unsafe.Pointer
	for i, name := range []string{"iw_sim_name", "iw_sim_in_words", "iw_sim_out_words", "iw_sim_new", "iw_sim_free",
		"iw_sim_run", "iw_sim_trace_open", "iw_sim_trace_close", "iw_sim_run_check"} {
		p, err := sym(name)
		if err != nil {
			return nil, err
		}
		ptrs[i] = p
	}
	l.Name = C.GoString(C.call_name(ptrs[0]))
	l.InWords = int(C.call_int(ptrs[1]))
	l.OutWords = int(C.call_int(ptrs[2]))
	l.fnNew, l.fnFree, l.fnRun, l.fnTraceOpen, l.fnTraceClose, l.fnRunCheck = ptrs[3], ptrs[4], ptrs[5], ptrs[6], ptrs[7], ptrs[8]
	libs[path] = l
	return l, nil
}

// Instance is one simulated copy of a block, at cycle 0 after New.
type Instance struct {
	lib *Lib
	h   unsafe.Pointer
}

// New creates an instance (registers at Verilator's power-up values; drive
// rst first).
func (l *Lib) New() *Instance {
	return &Instance{lib: l, h: C.call_new(l.fnNew)}
}

// cycles checks that in holds whole cycles and that out words can take
// their outputs; it returns how many cycles.
func (i *Instance) cycles(in []uint32, out int) (int, error) {
	l := i.lib
	if len(in)%l.InWords != 0 {
		return 0, fmt.Errorf("%w: %s: %d input words is not a whole number of %d-word cycles", ErrLibrary, l.Name, len(in), l.InWords)
	}
	n := len(in) / l.InWords
	if out < n*l.OutWords {
		return 0, fmt.Errorf("%w: %s: output buffer of %d words for %d cycles of %d words", ErrLibrary, l.Name, out, n, l.OutWords)
	}
	return n, nil
}

// Run simulates len(in)/InWords cycles; out receives OutWords words per cycle.
func (i *Instance) Run(in, out []uint32) error {
	n, err := i.cycles(in, len(out))
	if err != nil || n == 0 {
		return err
	}
	C.call_run(i.lib.fnRun, i.h, (*C.uint32_t)(unsafe.Pointer(&in[0])), (*C.uint32_t)(unsafe.Pointer(&out[0])), C.uint64_t(n))
	return nil
}

// RunCheck simulates the cycles of in and compares each cycle's outputs with
// want (OutWords per cycle) in C++, stopping at the first cycle that differs:
// it returns that cycle's index with its outputs in got (OutWords words), or
// -1 when every cycle matched.
func (i *Instance) RunCheck(in, want, got []uint32) (int, error) {
	n, err := i.cycles(in, len(want))
	if err == nil && len(got) < i.lib.OutWords {
		err = fmt.Errorf("%w: %s: result buffer of %d words for a %d-word cycle", ErrLibrary, i.lib.Name, len(got), i.lib.OutWords)
	}
	if err != nil || n == 0 {
		return -1, err
	}
	c := C.call_run_check(i.lib.fnRunCheck, i.h, (*C.uint32_t)(unsafe.Pointer(&in[0])), (*C.uint32_t)(unsafe.Pointer(&want[0])),
		(*C.uint32_t)(unsafe.Pointer(&got[0])), C.uint64_t(n))
	return int(c), nil
}

// TraceOpen starts writing a VCD waveform of the following cycles (the
// library must be a trace build).
func (i *Instance) TraceOpen(path string) error {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	if C.call_trace_open(i.lib.fnTraceOpen, i.h, cp) != 0 {
		return fmt.Errorf("%w: %s: cannot trace to %s (is it a --trace build?)", ErrLibrary, i.lib.Path, path)
	}
	return nil
}

// TraceClose finishes the waveform.
func (i *Instance) TraceClose() { C.call_free(i.lib.fnTraceClose, i.h) }

// Close frees the instance.
func (i *Instance) Close() {
	if i.h != nil {
		C.call_free(i.lib.fnFree, i.h)
		i.h = nil
	}
}
