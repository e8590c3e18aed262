package vfio

import "unsafe"

// Single-instruction MMIO accesses in assembly (mmio_amd64.s). Being calls
// to assembly, they are also compiler barriers: Go code cannot move memory
// accesses across them.

//go:noescape
func mmioLoad32(p unsafe.Pointer) uint32

//go:noescape
func mmioStore32(p unsafe.Pointer, v uint32)

//go:noescape
func mmioLoad64(p unsafe.Pointer) uint64

//go:noescape
func mmioStore64(p unsafe.Pointer, v uint64)
