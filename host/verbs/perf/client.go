package perf

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/host/verbs"
)

// Client runs tests against a perf server.
type Client struct {
	Device string          // card ("model", "sim", ...)
	Conn   verbs.ConnParam // MPA options; PrivateData is set by Run
	// Progress, if not nil, is called about every 200 ms with the
	// operations completed so far.
	Progress func(done, total int)
}

// Run connects to the server at addr, runs spec, disconnects, and returns
// the measurement.
func (c *Client) Run(ctx context.Context, addr string, spec Spec) (Result, error) {
	res := Result{Spec: spec, Device: c.Device}
	if err := spec.Check(); err != nil {
		return res, err
	}
	dev, err := verbs.Open(c.Device)
	if err != nil {
		return res, err
	}
	defer dev.Close()
	return c.runOn(ctx, dev, addr, spec, c.Progress)
}

// RunQPs runs spec on qps connections of one device at once (bandwidth
// only) and returns their sum: bytes over the longest elapsed time, and
// the sum of the peaks.
func (c *Client) RunQPs(ctx context.Context, addr string, spec Spec, qps int) (Result, error) {
	res := Result{Spec: spec, Device: c.Device, QPs: qps}
	if err := spec.Check(); err != nil {
		return res, err
	}
	if qps < 1 || qps > 1024 || qps > 1 && spec.Mode != BW {
		return res, fmt.Errorf("%w: %d QPs (1 to 1024, and more than one only for bandwidth)", ErrSpec, qps)
	}
	dev, err := verbs.Open(c.Device)
	if err != nil {
		return res, err
	}
	defer dev.Close()
	var mu sync.Mutex
	done := make([]int, qps)
	results := make([]Result, qps)
	errs := make([]error, qps)
	var wg sync.WaitGroup
	for i := range qps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var progress func(int, int)
			if c.Progress != nil {
				progress = func(d, total int) {
					mu.Lock()
					defer mu.Unlock()
					done[i] = d
					sum := 0
					for _, v := range done {
						sum += v
					}
					c.Progress(sum, total*qps)
				}
			}
			results[i], errs[i] = c.runOn(ctx, dev, addr, spec, progress)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	res = results[0]
	res.QPs = qps
	if qps == 1 {
		res.marks = nil
		return res, nil
	}
	runs := make([][]mark, qps)
	start := results[0].marks[0].t
	end := start
	for i, r := range results {
		runs[i] = r.marks
		if t := r.marks[0].t; t.Before(start) {
			start = t
		}
		if t := r.marks[len(r.marks)-1].t; t.After(end) {
			end = t
		}
	}
	res.Elapsed = end.Sub(start) // from the first start to the last completion
	total := float64(qps) * float64(spec.Iters)
	res.AvgMBps = total * float64(spec.Size) / res.Elapsed.Seconds() / 1e6
	res.MsgRate = total / res.Elapsed.Seconds() / 1e6
	res.PeakMBps = peak(merge(runs), float64(spec.Size), qps*spec.Iters, res.Elapsed)
	res.marks = nil
	return res, nil
}

// runOn runs one connection of spec on dev.
func (c *Client) runOn(ctx context.Context, dev *verbs.Context, addr string, spec Spec, progress func(int, int)) (Result, error) {
	res := Result{Spec: spec, Device: c.Device, QPs: 1}
	e, err := newEndpoint(dev, spec)
	if err != nil {
		return res, err
	}
	defer e.close()
	if spec.Test == Write && spec.Mode == Lat {
		spec.Addr, spec.RKey = e.mr.Addr(), uint32(e.mr.RKey())
	}
	switch {
	case spec.Test == Send && spec.Mode == BW:
		for i := range e.r {
			err = e.recvCtl(uint64(i))
		}
	case spec.Test == Send && spec.Mode == Lat:
		err = e.recvData(0)
	case spec.Test == Write && spec.Mode == Lat:
		err = e.recvCtl(0)
	}
	if err != nil {
		return res, err
	}
	cp := c.Conn
	cp.PrivateData = spec.marshal()
	if err := verbs.Dial(ctx, addr, e.qp, cp); err != nil {
		return res, err
	}
	var rep reply
	if err := json.Unmarshal(e.qp.Params().PeerPD, &rep); err != nil {
		return res, fmt.Errorf("perf: the server's reply is not a perf reply: %w", err)
	}
	res.MULPDU = e.qp.MULPDU()
	res.MPA = describe(e.qp.Params())
	res.Local, res.Remote = e.qp.LocalAddr().String(), e.qp.RemoteAddr().String()
	r := runner{progressFn: progress, e: e, spec: spec, rep: rep, ctx: ctx}
	start := time.Now()
	r.last = start
	r.marks = append(r.marks, mark{start, 0})
	if spec.Mode == BW {
		err = r.bw()
	} else {
		err = r.lat()
	}
	if err != nil {
		return res, err
	}
	res.Elapsed = r.end.Sub(start)
	if spec.Mode == BW {
		bytes := float64(spec.Size) * float64(spec.Iters)
		res.AvgMBps = bytes / res.Elapsed.Seconds() / 1e6
		res.MsgRate = float64(spec.Iters) / res.Elapsed.Seconds() / 1e6
		res.PeakMBps = r.peak(float64(spec.Size), res.Elapsed)
		res.marks = r.marks
	} else {
		res.Lat = summarise(r.samples, spec.Test != Read)
	}
	// "done", the server's acknowledgement, then disconnect.
	if err := e.recvCtl(uint64(e.r)); err != nil {
		return res, err
	}
	if err := e.sendCtl(0); err != nil {
		return res, err
	}
	if _, err := e.waitRecv(ctx); err != nil {
		return res, err
	}
	return res, e.qp.Disconnect()
}

type mark struct {
	t    time.Time
	done int
}

type runner struct {
	progressFn func(done, total int)
	e          *endpoint
	spec       Spec
	rep        reply
	ctx        context.Context
	marks      []mark
	samples    []time.Duration
	last       time.Time
	end        time.Time
}

func (r *runner) progress(done int) {
	if r.progressFn == nil {
		return
	}
	if now := time.Now(); now.Sub(r.last) > 200*time.Millisecond {
		r.last = now
		r.progressFn(done, r.spec.Iters)
	}
}

// bw keeps TxDepth operations in flight until Iters have completed.
func (r *runner) bw() error {
	s, e := r.spec, r.e
	sig := max(1, s.TxDepth/4) // signal every sig-th WR, as perftest's cq_mod
	posted, done, credits := 0, 0, 0
	var batch []verbs.SendWR
	target := func() int {
		if s.Test == Send {
			return credits // the server has received them
		}
		return done
	}
	for target() < s.Iters {
		batch = batch[:0]
		for posted < s.Iters && posted-done < s.TxDepth && (s.Test != Send || posted-credits < e.r) {
			wr := verbs.SendWR{ID: uint64(posted), Signaled: (posted+1)%sig == 0 || posted == s.Iters-1,
				RemoteAddr: r.rep.Addr, RKey: verbs.STag(r.rep.RKey)}
			if s.Test == Read { // a Read's sink is never inline
				wr.SGL = e.data
			} else {
				wr = e.payload(wr, s.Inline)
			}
			switch s.Test {
			case Write:
				wr.Opcode = verbs.WRRDMAWrite
			case Read:
				wr.Opcode = verbs.WRRDMARead
			default:
				wr.Opcode = verbs.WRSend
			}
			batch = append(batch, wr)
			posted++
		}
		if len(batch) > 0 {
			if err := e.qp.PostSend(batch...); err != nil {
				return err
			}
		}
		wc, err := e.wait(r.ctx)
		if err != nil {
			return err
		}
		if wc.Opcode == verbs.WCRecv {
			slot := int(wc.ID) % (e.r + 1)
			credits = int(binary.LittleEndian.Uint32(e.ctl.Bytes()[4*slot:]))
			if err := e.recvCtl(wc.ID + uint64(e.r)); err != nil {
				return err
			}
		} else {
			done = int(wc.ID) + 1
		}
		r.marks = append(r.marks, mark{time.Now(), target()})
		r.progress(target())
	}
	r.end = time.Now()
	return nil
}

// peak is the best bandwidth over any stretch of the run that covers at
// least a twentieth of its operations and of its time.
func (r *runner) peak(size float64, elapsed time.Duration) float64 {
	return peak(r.marks, size, r.spec.Iters, elapsed)
}

func peak(marks []mark, size float64, iters int, elapsed time.Duration) float64 {
	span, minDT := max(1, iters/20), elapsed.Seconds()/20
	best := 0.0
	j := 0
	for i := range marks {
		for j < len(marks) && (marks[j].done-marks[i].done < span || marks[j].t.Sub(marks[i].t).Seconds() < minDT) {
			j++
		}
		if j == len(marks) {
			break
		}
		dt := marks[j].t.Sub(marks[i].t).Seconds()
		best = max(best, float64(marks[j].done-marks[i].done)*size/dt/1e6)
	}
	return max(best, size*float64(iters)/elapsed.Seconds()/1e6)
}

// merge joins the progress marks of runs that went on at once into one
// timeline of their total progress.
func merge(runs [][]mark) []mark {
	type ev struct {
		mark
		run int
	}
	var evs []ev
	for i, ms := range runs {
		for _, m := range ms {
			evs = append(evs, ev{m, i})
		}
	}
	sort.SliceStable(evs, func(a, b int) bool { return evs[a].t.Before(evs[b].t) })
	last := make([]int, len(runs))
	total := 0
	out := make([]mark, 0, len(evs))
	for _, e := range evs {
		total += e.done - last[e.run]
		last[e.run] = e.done
		out = append(out, mark{e.t, total})
	}
	return out
}

// lat runs one operation at a time and records each one's time.
func (r *runner) lat() error {
	s, e := r.spec, r.e
	r.samples = make([]time.Duration, 0, s.Iters)
	for i := range s.Iters {
		t0 := time.Now()
		if err := e.qp.PostSend(e.latWRs(s, uint64(i), r.rep.Addr, verbs.STag(r.rep.RKey))...); err != nil {
			return err
		}
		var err error
		if s.Test == Read {
			_, err = e.wait(r.ctx)
		} else {
			_, err = e.waitRecv(r.ctx)
			if err == nil && s.Test == Send {
				err = e.recvData(uint64(i + 1))
			} else if err == nil {
				err = e.recvCtl(uint64(i + 1))
			}
		}
		if err != nil {
			return err
		}
		r.samples = append(r.samples, time.Since(t0))
		r.progress(i + 1)
	}
	r.end = time.Now()
	return nil
}

// describe says which MPA options a connection runs with.
func describe(p mpa.Params) string {
	onOff := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	return fmt.Sprintf("Rev %d, CRC %s, markers tx %s rx %s", p.Rev, onOff(p.CRC), onOff(p.TxMarkers), onOff(p.RxMarkers))
}
