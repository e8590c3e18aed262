package interop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/openiwarp/openiwarp/golden/rdmap"
)

// Scenario is one interoperability check: who talks to whom, how, and what
// the capture must show.
type Scenario struct {
	Name  string
	Roles string // e.g. "iwping -c (host) → rping -s (siw guest)"
	CRC   bool
	MPA   string // e.g. "Rev 2"
	Card  string // openiwarp card ("model", "sim"), or "—" for siw on both ends
	// Guests maps each guest address the scenario uses to the siw build it
	// needs there.
	Guests map[string]string
	Expect Expect
	// Timeout bounds one attempt once its guests are up (default 60 s).
	Timeout time.Duration
	// Note is shown in the matrix (e.g. a workaround the scenario uses).
	Note string
	// Run drives the sides; it must verify the data byte for byte.
	Run func(ctx context.Context, h *Harness, r *Attempt) error
}

// Attempt is one run of a scenario.
type Attempt struct {
	Dir  string
	Port int
	Log  io.Writer

	mu    sync.Mutex
	notes []string
}

// Notef records something the matrix should show about this attempt (a
// tolerated peer defect, for instance).
func (a *Attempt) Notef(format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.notes = append(a.notes, fmt.Sprintf(format, args...))
	fmt.Fprintf(a.Log, "note: %s\n", a.notes[len(a.notes)-1])
}

func (a *Attempt) notesText() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.Join(a.notes, "; ")
}

// Result is a scenario's outcome, as the matrix shows it.
type Result struct {
	Name, Roles, MPA, Card string
	CRC                    bool
	Status                 string // "pass", "FAIL", "not done"
	Detail                 string
	Retries                int
	Decoded                string
	Iwdump                 string // what iwdump said of the capture
	Elapsed                time.Duration
	Dir                    string
}

var portSeq = 7200

// Run runs a scenario with a capture on the bridge, checks the capture with
// tshark, and writes report.txt (plus, on failure, the guests' console logs)
// into Results/<name>. A stall that matches siw's known first-Send race (see
// KnownSiwDefects) is retried once and counted.
func (h *Harness) Run(ctx context.Context, s *Scenario, tag string) Result {
	t0 := time.Now()
	dir := filepath.Join(h.Results, s.Name+tag)
	_ = os.RemoveAll(dir)
	res := Result{Name: s.Name, Roles: s.Roles, MPA: s.MPA, Card: s.Card, CRC: s.CRC, Dir: dir, Detail: s.Note}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		res.Status, res.Detail = "FAIL", err.Error()
		return res
	}
	var err error
	detail, notes := "", ""
	for attempt := 1; attempt <= 2; attempt++ {
		var dec *Decoded
		dec, notes, err = h.attempt(ctx, s, dir)
		if dec != nil {
			res.Decoded, res.Iwdump, detail = dec.Summary(), dec.Iwdump, dec.String()
		}
		if err == nil {
			break
		}
		if attempt == 1 && isFirstSendStall(err, dec) {
			res.Retries++
			fmt.Fprintf(h.Log, "%s: siw first-Send stall (known siw 6.1 race), retrying once: %v\n", s.Name, err)
			_ = os.Rename(filepath.Join(dir, "capture.pcap"), filepath.Join(dir, "capture-attempt1.pcap"))
			continue
		}
		break
	}
	res.Elapsed = time.Since(t0)
	if err != nil {
		res.Status = "FAIL"
		if errors.Is(err, errNotDone) {
			res.Status = "not done"
		}
		res.Detail = strings.TrimSpace(s.Note + " " + err.Error())
		var se *SidesError
		if errors.As(err, &se) {
			for _, r := range se.Results {
				out := fmt.Sprintf("state: %s\nerror: %v\n--- stdout ---\n%s\n--- stderr ---\n%s\n", r.State, r.Err, r.Output.Stdout, r.Output.Stderr)
				_ = os.WriteFile(filepath.Join(dir, "side-"+fileName(r.Name)+".txt"), []byte(out), 0o644)
			}
		}
		for addr := range s.Guests {
			_ = copyFileTo(h.consoleLog(addr), filepath.Join(dir, "console-"+addr+".log"))
		}
	} else {
		res.Status = "pass"
	}
	res.Detail = strings.TrimSpace(res.Detail + " " + notes)
	if res.Retries > 0 {
		res.Detail = strings.TrimSpace(res.Detail + fmt.Sprintf(" (retried %d× after the known siw first-Send stall)", res.Retries))
	}
	report := fmt.Sprintf("scenario: %s\nroles: %s\nCRC: %v  MPA: %s  card: %s\nstatus: %s\nretries: %d\nelapsed: %s\ntshark: %s\niwdump: %s\ndetail: %s\n",
		s.Name, s.Roles, s.CRC, s.MPA, s.Card, res.Status, res.Retries, res.Elapsed.Round(time.Millisecond), detail, res.Iwdump, res.Detail)
	_ = os.WriteFile(filepath.Join(dir, "report.txt"), []byte(report), 0o644)
	return res
}

func (h *Harness) attempt(ctx context.Context, s *Scenario, dir string) (*Decoded, string, error) {
	a := &Attempt{Dir: dir, Log: h.Log}
	dec, err := h.runAttempt(ctx, s, a)
	return dec, a.notesText(), err
}

func (h *Harness) runAttempt(ctx context.Context, s *Scenario, a *Attempt) (*Decoded, error) {
	dir := a.Dir
	// Guests boot (once) under their own bound; the scenario's own
	// deadline starts when they are ready.
	for addr, mod := range s.Guests {
		if _, err := h.UseSiw(ctx, addr, mod); err != nil {
			return nil, err
		}
	}
	timeout := s.Timeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	portSeq++
	a.Port = portSeq
	pcap := filepath.Join(dir, "capture.pcap")
	capt, err := h.Net.Capture(actx, "", pcap, "tcp", "port", fmt.Sprint(a.Port))
	if err != nil {
		return nil, err
	}
	runErr := s.Run(actx, h, a)
	capErr := capt.Stop()
	dctx, dcancel := context.WithTimeout(ctx, 60*time.Second)
	defer dcancel()
	dec, derr := DecodeTshark(dctx, pcap)
	if runErr != nil {
		return dec, runErr
	}
	if capErr != nil {
		return dec, capErr
	}
	if derr != nil {
		return nil, derr
	}
	if err := dec.Check(s.Expect); err != nil {
		return dec, err
	}
	own, err := DecodeIwdump(dctx, pcap)
	if err == nil {
		err = own.Check(s.Expect)
	}
	if err != nil {
		dec.Iwdump = "FAIL"
		return dec, err
	}
	dec.Iwdump = own.Summary()
	return dec, nil
}

// isFirstSendStall recognises siw 6.1's race: the startup completed, the
// initiator's first Send went out, and nothing came back before the
// deadline.
func isFirstSendStall(err error, d *Decoded) bool {
	var se *SidesError
	if !errors.As(err, &se) || !se.Stalled() || d == nil {
		return false
	}
	return d.Requests == 1 && d.Replies == 1 && d.FPDUs == 1 && d.Opcodes[rdmap.OpSend] == 1
}

// fileName turns a side's name into a file name.
func fileName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '_'
	}, s)
}

func copyFileTo(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}
