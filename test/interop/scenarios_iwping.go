package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openiwarp/openiwarp/golden/rdmap"
)

// load is a ping run's cycle count and message size.
type load struct{ count, size int }

var (
	// std makes the Read Response and the Write span several DDP segments.
	std = load{pingCount, pingSize}
	// big is rping's largest message: 45 FPDUs per Read Response or Write.
	big = load{3, 65535}
)

// iwpingFlags are the rping flags both roles share, plus CRC.
func iwpingFlags(crc bool, l load, extra ...string) []string {
	f := []string{"-v", "-S", fmt.Sprint(l.size), "-timeout", iwpingTimeout}
	if crc {
		f = append(f, "-crc")
	}
	return append(f, extra...)
}

// iwpingTimeout bounds every iwping run: a cycle takes milliseconds even
// under TCG, so a stall is reported long before the scenario's deadline.
const iwpingTimeout = "20s"

// siwFirstDelay is the harness's workaround for siw 6.1's first-Send race
// (see KnownSiwDefects): iwping as Initiator waits this long after the MPA
// Reply before its first FPDU.
const siwFirstDelay = "300ms"

const firstDelayNote = "iwping -first-delay " + siwFirstDelay + " (siw first-Send race workaround)"

// hostClient runs guestServer (argv) on guest A, then iwping with
// clientArgs on the host as the client, and verifies both outputs.
func hostClient(guestServer []string, clientArgs []string, verify func(server, client Output) error) func(ctx context.Context, h *Harness, a *Attempt) error {
	return func(ctx context.Context, h *Harness, a *Attempt) error {
		bin, err := h.hostIwping(ctx, clientArgs)
		if err != nil {
			return err
		}
		port := fmt.Sprint(a.Port)
		srv, err := startGuestServer(ctx, h, GuestA, a.Port, withPort(guestServer, port)...)
		if err != nil {
			return err
		}
		res, err := RunSides(ctx, timeoutOf(ctx), gracePeriod,
			StartedGuestSide(a, "guest "+guestServer[0]+" (siw)", srv),
			h.HostSide("host iwping client (openiwarp)", bin, append([]string{"-c", "-a", GuestA, "-p", port}, clientArgs...)...))
		if err != nil {
			return err
		}
		return verify(res[0].Output, res[1].Output)
	}
}

// guestClient runs iwping with serverArgs on the host as the server, then
// guestClient (argv) on guest A, and verifies both outputs.
func guestClient(serverArgs []string, guestClient []string, verify func(server, client Output) error) func(ctx context.Context, h *Harness, a *Attempt) error {
	return func(ctx context.Context, h *Harness, a *Attempt) error {
		res, err := runGuestClient(ctx, h, a, serverArgs, guestClient)
		if err != nil {
			return err
		}
		return verify(res[0].Output, res[1].Output)
	}
}

// runGuestClient starts iwping -s with serverArgs in the namespace, waits
// until it listens, and runs guestClient (argv) on guest A against it.
func runGuestClient(ctx context.Context, h *Harness, a *Attempt, serverArgs, guestClient []string) ([]SideResult, error) {
	bin, err := h.hostIwping(ctx, serverArgs)
	if err != nil {
		return nil, err
	}
	vm, err := h.Guest(ctx, GuestA)
	if err != nil {
		return nil, err
	}
	port := fmt.Sprint(a.Port)
	srv, err := h.StartHost(ctx, bin, append([]string{"-s", "-a", HostAddr, "-p", port}, serverArgs...)...)
	if err != nil {
		return nil, err
	}
	if err := h.WaitListenNS(ctx, srv, a.Port); err != nil {
		srv.Kill()
		return nil, err
	}
	return RunSides(ctx, timeoutOf(ctx), gracePeriod,
		srv.Side("host iwping server (openiwarp)"),
		GuestSide(a, "guest "+guestClient[0]+" (siw)", vm, withPort(guestClient, port)...))
}

// withPort replaces the "PORT" placeholder in argv.
func withPort(argv []string, port string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = strings.ReplaceAll(a, "PORT", port)
	}
	return out
}

// verifyPings checks both rping -v outputs byte for byte.
func verifyPings(l load) func(server, client Output) error {
	return func(server, client Output) error {
		if err := VerifyRpingOutput(server.Stdout, "server ping data: ", l.count, l.size); err != nil {
			return fmt.Errorf("server: %w", err)
		}
		if err := VerifyRpingOutput(client.Stdout, "ping data: ", l.count, l.size); err != nil {
			return fmt.Errorf("client: %w", err)
		}
		return nil
	}
}

// verifyExample checks that the librdmacm example on the siw side ended
// with 0 (iwping checked the 16 octets it received itself).
func verifyExample(siwSide func(server, client Output) Output, want string) func(server, client Output) error {
	return func(server, client Output) error {
		if out := siwSide(server, client); !strings.Contains(out.Stdout, want) {
			return fmt.Errorf("interop: no %q from the siw side:\n%s", want, out)
		}
		return nil
	}
}

// The guest's rping in each role.
func rpingServer(l load) []string {
	return []string{"rping", "-s", "-a", GuestA, "-p", "PORT", "-v", "-S", fmt.Sprint(l.size)}
}

func rpingClient(l load) []string {
	return []string{"rping", "-c", "-a", HostAddr, "-p", "PORT", "-v", "-V", "-C", fmt.Sprint(l.count), "-S", fmt.Sprint(l.size)}
}

// iwpingClientArgs are iwping -c's flags against a siw rping -s.
func iwpingClientArgs(crc bool, l load, extra ...string) []string {
	return append([]string{"-V", "-C", fmt.Sprint(l.count), "-first-delay", siwFirstDelay}, iwpingFlags(crc, l, extra...)...)
}

func iwpingClientToSiw(crc bool, l load) func(ctx context.Context, h *Harness, a *Attempt) error {
	return hostClient(rpingServer(l), iwpingClientArgs(crc, l), verifyPings(l))
}

func siwClientToIwping(crc bool, l load) func(ctx context.Context, h *Harness, a *Attempt) error {
	return guestClient(iwpingFlags(crc, l), rpingClient(l), verifyPings(l))
}

var (
	iwpingSimClientToSiw = hostClient(rpingServer(std), iwpingClientArgs(true, std, simCard...), verifyRTL(false, verifyPings(std)))
	siwClientToIwpingSim = guestClient(iwpingFlags(true, std, simCard...), rpingClient(std), verifyRTL(true, verifyPings(std)))
)

// iwpingMarkersRefused asks siw for markers: siw must refuse the Request
// and iwping must fail with a clear error naming the rejection.
func iwpingMarkersRefused(ctx context.Context, h *Harness, a *Attempt) error {
	bin, err := h.IwpingBinary(ctx)
	if err != nil {
		return err
	}
	port := fmt.Sprint(a.Port)
	srv, err := startGuestServer(ctx, h, GuestA, a.Port, "rping", "-s", "-a", GuestA, "-p", port, "-v")
	if err != nil {
		return err
	}
	defer func() { _ = srv.Signal(9); _, _ = srv.Wait(ctx) }()
	res, err := RunSides(ctx, timeoutOf(ctx), gracePeriod,
		h.HostSide("host iwping -c -markers (openiwarp)", bin, "-c", "-a", GuestA, "-p", port, "-C", "1", "-markers", "-timeout", iwpingTimeout))
	if err == nil {
		return fmt.Errorf("interop: iwping -markers succeeded against siw, which must refuse markers:\n%s", res[0].Output)
	}
	msg := res[0].Output.Stderr
	if res[0].State != "failed" || !strings.Contains(msg, "MPA startup") || !strings.Contains(msg, "rejected") {
		return fmt.Errorf("interop: iwping did not report the refusal clearly (%s): %q", res[0].State, msg)
	}
	fmt.Fprintf(a.Log, "iwping reported: %s", msg)
	return nil
}

// simCard runs iwping on the sim card (MPA CRC datapath in Verilated RTL,
// cycle-checked) with a JSON summary, so the check can see the RTL ran.
var simCard = []string{"-card", "sim", "-json"}

// verifyRTL checks the exchange with verify and that the sim card's RTL
// checked cycles: iwping is the server (ours = server) or the client.
func verifyRTL(oursIsServer bool, verify func(server, client Output) error) func(server, client Output) error {
	return func(server, client Output) error {
		if err := verify(server, client); err != nil {
			return err
		}
		ours := client
		if oursIsServer {
			ours = server
		}
		// The summary is stdout's last line to open with "{" (the whole
		// of stdout when iwping prints nothing else).
		i := strings.LastIndex("\n"+ours.Stdout, "\n{") - 1
		if i < -1 {
			return fmt.Errorf("interop: no JSON summary from iwping:\n%s", ours.Stdout)
		}
		var sum struct {
			Card          string `json:"card"`
			CheckedCycles uint64 `json:"checked_cycles"`
		}
		if err := json.Unmarshal([]byte(ours.Stdout[i+1:]), &sum); err != nil {
			return fmt.Errorf("interop: iwping's JSON summary: %w", err)
		}
		if sum.Card != "sim" || sum.CheckedCycles == 0 {
			return fmt.Errorf("interop: the RTL did not run: card %q, %d cycles checked", sum.Card, sum.CheckedCycles)
		}
		return nil
	}
}

// siwRefusesRev1Reply: iwping -s answers at most Rev 1; siw as Initiator
// accepts only a Rev 2 Reply, so rping -c must fail and no FPDU may follow.
func siwRefusesRev1Reply(ctx context.Context, h *Harness, a *Attempt) error {
	res, err := runGuestClient(ctx, h, a, []string{"-rev", "1", "-json", "-timeout", iwpingTimeout}, rpingClient(std))
	if res == nil {
		return err
	}
	cli := res[1]
	if cli.State != "failed" && cli.State != "disconnected" {
		return fmt.Errorf("interop: rping -c should fail on a Rev 1 Reply, it ended %q (%v):\n%s", cli.State, err, cli.Output)
	}
	if res[0].State == "stalled" {
		return fmt.Errorf("interop: iwping -s stalled after siw gave up: %v", err)
	}
	if strings.Contains(cli.Output.Stdout, "ping data") {
		return fmt.Errorf("interop: rping -c exchanged data over a Rev 1 connection:\n%s", cli.Output)
	}
	fmt.Fprintf(a.Log, "siw's rping -c on a Rev 1 Reply: %s", lastLines(cli.Output.Stderr, 2))
	return nil
}

// The librdmacm example pair against iwping -example, both ways.
var (
	iwpingExampleClient = hostClient([]string{"rdma_server", "-p", "PORT"},
		[]string{"-example", "-first-delay", siwFirstDelay, "-timeout", iwpingTimeout},
		verifyExample(func(s, _ Output) Output { return s }, "rdma_server: end 0"))
	iwpingExampleServer = guestClient([]string{"-example", "-timeout", iwpingTimeout},
		[]string{"rdma_client", "-s", HostAddr, "-p", "PORT"},
		verifyExample(func(_, c Output) Output { return c }, "rdma_client: end 0"))
	// The same on the all-RTL sim card, against the CRC-requiring siw.
	iwpingSimExampleClient = hostClient([]string{"rdma_server", "-p", "PORT"},
		append([]string{"-example", "-crc", "-first-delay", siwFirstDelay, "-timeout", iwpingTimeout}, simCard...),
		verifyRTL(false, verifyExample(func(s, _ Output) Output { return s }, "rdma_server: end 0")))
	iwpingSimExampleServer = guestClient(append([]string{"-example", "-crc", "-timeout", iwpingTimeout}, simCard...),
		[]string{"rdma_client", "-s", HostAddr, "-p", "PORT"},
		verifyRTL(true, verifyExample(func(_, c Output) Output { return c }, "rdma_client: end 0")))
)

// iwpingScenarios are the openiwarp-against-siw scenarios (model card).
func iwpingScenarios() []*Scenario {
	stock := map[string]string{GuestA: SiwModule}
	crc := map[string]string{GuestA: SiwCRCModule}
	ops := rpingOps(pingCount)
	// Each 65535-octet Read Response and Write is many FPDUs (MULPDU < MSS).
	bigOps := map[rdmap.Opcode]int{rdmap.OpSend: 4 * big.count, rdmap.OpReadRequest: big.count,
		rdmap.OpReadResponse: big.count * (big.size/1460 + 1), rdmap.OpWrite: big.count * (big.size/1460 + 1)}
	return []*Scenario{
		{Name: "iwping-client-siw-server", Roles: "iwping -c (host) → rping -s (siw guest)", MPA: "Rev 2", Card: "model",
			Guests: stock, Expect: Expect{Rev: 2, MinOps: ops}, Run: iwpingClientToSiw(false, std), Note: firstDelayNote},
		{Name: "siw-client-iwping-server", Roles: "rping -c (siw guest) → iwping -s (host)", MPA: "Rev 2", Card: "model",
			Guests: stock, Expect: Expect{Rev: 2, MinOps: ops}, Run: siwClientToIwping(false, std)},
		{Name: "iwping-client-siw-server-crc", Roles: "iwping -c -crc (host) → rping -s (CRC-requiring siw)", CRC: true, MPA: "Rev 2", Card: "model",
			Guests: crc, Expect: Expect{Rev: 2, CRC: true, MinOps: ops}, Run: iwpingClientToSiw(true, std), Note: firstDelayNote},
		{Name: "siw-client-iwping-server-crc", Roles: "rping -c (CRC-requiring siw) → iwping -s -crc (host)", CRC: true, MPA: "Rev 2", Card: "model",
			Guests: crc, Expect: Expect{Rev: 2, CRC: true, MinOps: ops}, Run: siwClientToIwping(true, std)},
		{Name: "iwping-crc-client-stock-siw-server", Roles: "iwping -c -crc (host) → rping -s (stock siw: answers C=1)", CRC: true, MPA: "Rev 2", Card: "model",
			Guests: stock, Expect: Expect{Rev: 2, CRC: true, MinOps: ops}, Run: iwpingClientToSiw(true, std), Note: firstDelayNote},
		{Name: "stock-siw-client-iwping-crc-server", Roles: "rping -c (stock siw, C=0) → iwping -s -crc (host, answers C=1)", CRC: true, MPA: "Rev 2", Card: "model",
			Guests: stock, Expect: Expect{Rev: 2, CRC: true, MinOps: ops}, Run: siwClientToIwping(true, std)},
		{Name: "iwping-client-siw-server-64k-crc", Roles: "iwping -c -crc -S 65535 (host) → rping -s (CRC-requiring siw)", CRC: true, MPA: "Rev 2", Card: "model",
			Guests: crc, Expect: Expect{Rev: 2, CRC: true, MinOps: bigOps}, Run: iwpingClientToSiw(true, big), Note: firstDelayNote},
		{Name: "siw-client-iwping-server-64k-crc", Roles: "rping -c -S 65535 (CRC-requiring siw) → iwping -s -crc (host)", CRC: true, MPA: "Rev 2", Card: "model",
			Guests: crc, Expect: Expect{Rev: 2, CRC: true, MinOps: bigOps}, Run: siwClientToIwping(true, big)},
		{Name: "iwping-markers-refused", Roles: "iwping -c -markers (host) → rping -s (siw guest): refused", MPA: "Rev 2", Card: "model",
			Guests: stock, Expect: Expect{Rev: 2, Markers: true, Reject: true}, Run: iwpingMarkersRefused},
		{Name: "iwping-example-client", Roles: "iwping -c -example (host) → rdma_server (siw guest)", MPA: "Rev 2", Card: "model",
			Guests: stock, Expect: Expect{Rev: 2, MinOps: map[rdmap.Opcode]int{rdmap.OpSend: 2}}, Run: iwpingExampleClient, Note: firstDelayNote},
		{Name: "iwping-example-server", Roles: "rdma_client (siw guest) → iwping -s -example (host)", MPA: "Rev 2", Card: "model",
			Guests: stock, Expect: Expect{Rev: 2, MinOps: map[rdmap.Opcode]int{rdmap.OpSend: 2}}, Run: iwpingExampleServer},
		{Name: "siw-client-iwping-rev1-server-refused", Roles: "rping -c (siw guest) → iwping -s -rev 1 (host): siw refuses the Rev 1 Reply", MPA: "Rev 2 → 1", Card: "model",
			Guests: stock, Expect: Expect{Rev: 2, ReplyRev: 1, NoFPDUs: true}, Run: siwRefusesRev1Reply},
	}
}

// RTLScenarios are iwping on the all-RTL sim card (the one driver over the
// Verilated iwcard, every DMA write checked against the card model)
// against the CRC-requiring siw, both roles: rping's loop of Sends, RDMA
// Reads both ways (the card's responder answers siw's) and RDMA Writes,
// and librdmacm's rdma_server/rdma_client pair; every byte moved by the
// RTL (iwping built with cgo).
func RTLScenarios() []*Scenario {
	crc := map[string]string{GuestA: SiwCRCModule, GuestB: SiwCRCModule}
	ops := rpingOps(pingCount)
	return []*Scenario{
		{Name: "iwping-sim-client-siw-server-crc", Roles: "iwping -c -crc -card sim (host, RTL in the loop) → rping -s (CRC-requiring siw)", CRC: true, MPA: "Rev 2", Card: "sim",
			Guests: crc, Expect: Expect{Rev: 2, CRC: true, MinOps: ops}, Run: iwpingSimClientToSiw, Note: firstDelayNote},
		{Name: "siw-client-iwping-sim-server-crc", Roles: "rping -c (CRC-requiring siw) → iwping -s -crc -card sim (host, RTL in the loop)", CRC: true, MPA: "Rev 2", Card: "sim",
			Guests: crc, Expect: Expect{Rev: 2, CRC: true, MinOps: ops}, Run: siwClientToIwpingSim},
		{Name: "iwping-sim-example-client-crc", Roles: "iwping -c -example -crc -card sim (host, RTL in the loop) → rdma_server (CRC-requiring siw)", CRC: true, MPA: "Rev 2", Card: "sim",
			Guests: crc, Expect: Expect{Rev: 2, CRC: true, MinOps: map[rdmap.Opcode]int{rdmap.OpSend: 2}}, Run: iwpingSimExampleClient, Note: firstDelayNote},
		{Name: "iwping-sim-example-server-crc", Roles: "rdma_client (CRC-requiring siw) → iwping -s -example -crc -card sim (host, RTL in the loop)", CRC: true, MPA: "Rev 2", Card: "sim",
			Guests: crc, Expect: Expect{Rev: 2, CRC: true, MinOps: map[rdmap.Opcode]int{rdmap.OpSend: 2}}, Run: iwpingSimExampleServer},
	}
}
