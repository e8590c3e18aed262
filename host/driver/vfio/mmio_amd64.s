#include "textflag.h"

// Plain MOVs, as the kernel's readl/writel on x86: the BAR is mapped
// uncached, x86 keeps uncached accesses in program order with every other
// load and store, and a locked instruction (what sync/atomic would use for a
// store) is not something a PCIe device can be sent.

// func mmioLoad32(p unsafe.Pointer) uint32
TEXT ·mmioLoad32(SB), NOSPLIT, $0-12
	MOVQ p+0(FP), AX
	MOVL (AX), BX
	MOVL BX, ret+8(FP)
	RET

// func mmioStore32(p unsafe.Pointer, v uint32)
TEXT ·mmioStore32(SB), NOSPLIT, $0-12
	MOVQ p+0(FP), AX
	MOVL v+8(FP), BX
	MOVL BX, (AX)
	RET

// func mmioLoad64(p unsafe.Pointer) uint64
TEXT ·mmioLoad64(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ (AX), BX
	MOVQ BX, ret+8(FP)
	RET

// func mmioStore64(p unsafe.Pointer, v uint64)
TEXT ·mmioStore64(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, (AX)
	RET
