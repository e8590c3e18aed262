package interop

import (
	"context"
	"fmt"
	"strings"

	"github.com/openiwarp/openiwarp/cmd/iwping/rping"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/test/guest"
)

// Cycle count and message size of the rping scenarios: 4000 octets make the
// RDMA Read Response and the RDMA Write span several DDP segments.
const (
	pingCount = 5
	pingSize  = 4000
)

func rpingOps(cycles int) map[rdmap.Opcode]int {
	return map[rdmap.Opcode]int{rdmap.OpSend: 4 * cycles, rdmap.OpReadRequest: cycles, rdmap.OpReadResponse: cycles, rdmap.OpWrite: cycles}
}

// VerifyRpingOutput checks that a real rping printed (with -v) exactly the
// data of cycles 0..count-1 of the given size, byte for byte: prefix is
// "ping data: " (client) or "server ping data: " (server).
func VerifyRpingOutput(out, prefix string, count, size int) error {
	var got []string
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(l, prefix); ok {
			got = append(got, rest)
		}
	}
	if len(got) != count {
		return fmt.Errorf("interop: %d %q lines, want %d", len(got), prefix, count)
	}
	for i, g := range got {
		if want := rping.ExpectedLine(i, size); g != want {
			return fmt.Errorf("interop: cycle %d data differs from rping's pattern (got %d octets, want %d; first difference at %d)",
				i, len(g), len(want), firstDiffStr(g, want))
		}
	}
	return nil
}

func firstDiffStr(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// siwInitiatorDelay is the harness's workaround for siw's first-Send race
// when siw is the Initiator too (see KnownSiwDefects): guest B's packets
// are held this long (netem), so its first Send cannot land in the window
// right after guest A's MPA Reply.
const siwInitiatorDelay = "100ms"

const netemNote = "guest B egress delayed " + siwInitiatorDelay + " with netem (siw first-Send race workaround)"

// startGuestServer starts a server program in the guest at addr and waits
// until it listens on port (without ever connecting to it).
func startGuestServer(ctx context.Context, h *Harness, addr string, port int, argv ...string) (*guest.Proc, error) {
	vm, err := h.Guest(ctx, addr)
	if err != nil {
		return nil, err
	}
	p, err := vm.Start(argv, guest.StartOptions{})
	if err != nil {
		return nil, err
	}
	if err := WaitListen(ctx, vm, port); err != nil {
		_ = p.Signal(9)
		return nil, fmt.Errorf("%w\n%s", err, p.Output())
	}
	return p, nil
}

// runSiwPair runs server (argv) on guest A and, once it listens, client on
// guest B, each side reported under its name. Guest B's egress is delayed to
// stay clear of siw's first-Send stall (see MATRIX.md).
func runSiwPair(ctx context.Context, h *Harness, a *Attempt, srvName string, server []string, cliName string, client []string) ([]SideResult, error) {
	srv, err := startGuestServer(ctx, h, GuestA, a.Port, server...)
	if err != nil {
		return nil, err
	}
	cliVM, err := h.Guest(ctx, GuestB)
	if err != nil {
		return nil, err
	}
	undo, err := DelayEgress(ctx, cliVM, siwInitiatorDelay)
	if err != nil {
		return nil, err
	}
	defer undo()
	return RunSides(ctx, timeoutOf(ctx), gracePeriod,
		StartedGuestSide(a, srvName, srv),
		GuestSide(a, cliName, cliVM, client...))
}

// siwRpingPair runs rping -s on guest A and rping -c on guest B.
func siwRpingPair(ctx context.Context, h *Harness, a *Attempt) error {
	port := fmt.Sprint(a.Port)
	res, err := runSiwPair(ctx, h, a,
		"guest A rping -s", []string{"rping", "-s", "-a", GuestA, "-p", port, "-v", "-S", fmt.Sprint(pingSize)},
		"guest B rping -c", []string{"rping", "-c", "-a", GuestA, "-p", port, "-v", "-V", "-C", fmt.Sprint(pingCount), "-S", fmt.Sprint(pingSize)})
	if err != nil {
		return err
	}
	if err := VerifyRpingOutput(res[0].Output.Stdout, "server ping data: ", pingCount, pingSize); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return VerifyRpingOutput(res[1].Output.Stdout, "ping data: ", pingCount, pingSize)
}

// siwExamplePair runs librdmacm's rdma_server on guest A and rdma_client on B.
func siwExamplePair(ctx context.Context, h *Harness, a *Attempt) error {
	port := fmt.Sprint(a.Port)
	res, err := runSiwPair(ctx, h, a, "guest A rdma_server", []string{"rdma_server", "-p", port},
		"guest B rdma_client", []string{"rdma_client", "-s", GuestA, "-p", port})
	if err != nil {
		return err
	}
	for i, want := range []string{"rdma_server: end 0", "rdma_client: end 0"} {
		if !strings.Contains(res[i].Output.Stdout, want) {
			return fmt.Errorf("interop: %s did not print %q:\n%s", res[i].Name, want, res[i].Output)
		}
	}
	return nil
}

// Scenarios returns every scenario the harness runs, in order.
func Scenarios() []*Scenario {
	stock := map[string]string{GuestA: SiwModule, GuestB: SiwModule}
	crc := map[string]string{GuestA: SiwCRCModule, GuestB: SiwCRCModule}
	return append([]*Scenario{
		{Name: "siw-siw-rping", Roles: "rping -c (siw guest B) → rping -s (siw guest A)", MPA: "Rev 2", Card: "— (siw both ends)",
			Guests: stock, Expect: Expect{Rev: 2, MinOps: rpingOps(pingCount)}, Run: siwRpingPair, Note: netemNote},
		{Name: "siw-siw-rping-crc", Roles: "rping -c (CRC-requiring siw B) → rping -s (CRC-requiring siw A)", CRC: true, MPA: "Rev 2", Card: "— (siw both ends)",
			Guests: crc, Expect: Expect{Rev: 2, CRC: true, MinOps: rpingOps(pingCount)}, Run: siwRpingPair, Note: netemNote},
		{Name: "siw-siw-rdma-example", Roles: "rdma_client (siw guest B) → rdma_server (siw guest A)", MPA: "Rev 2", Card: "— (siw both ends)",
			Guests: stock, Expect: Expect{Rev: 2, MinOps: map[rdmap.Opcode]int{rdmap.OpSend: 2}}, Run: siwExamplePair, Note: netemNote},
	}, iwpingScenarios()...)
}
