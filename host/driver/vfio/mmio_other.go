//go:build !amd64

package vfio

import (
	"sync/atomic"
	"unsafe"
)

// On other architectures the sync/atomic operations give single, untorn
// accesses with acquire (load) and release (store) ordering against normal
// memory, which covers what a driver needs: descriptors written before the
// doorbell store, and data read after the status load. (On arm64 these are
// LDAR/STLR, which Device memory accepts.)

func mmioLoad32(p unsafe.Pointer) uint32     { return atomic.LoadUint32((*uint32)(p)) }
func mmioStore32(p unsafe.Pointer, v uint32) { atomic.StoreUint32((*uint32)(p), v) }
func mmioLoad64(p unsafe.Pointer) uint64     { return atomic.LoadUint64((*uint64)(p)) }
func mmioStore64(p unsafe.Pointer, v uint64) { atomic.StoreUint64((*uint64)(p), v) }
