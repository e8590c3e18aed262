package gen

import (
	"errors"
	"fmt"
)

// Validate checks that m is well formed: names, widths, every wire and output
// driven exactly once, every register driven once, instance connections that
// match the instantiated module's ports. The emitters call it first.
func (m *Module) Validate() error {
	errs := append([]error(nil), m.errs...)
	fail := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w %s: %s", ErrInvalid, m.Name, fmt.Sprintf(format, a...)))
	}
	own := map[*Signal]bool{}
	for _, s := range m.Ports {
		own[s] = true
	}
	for _, s := range m.Signals {
		own[s] = true
	}
	for _, s := range m.Params {
		own[s] = true
	}
	check := func(what string, e Expr, w int) {
		if err := exprErr(e); err != nil {
			fail("%s: %v", what, err)
			return
		}
		if w > 0 && e.Width() != w {
			fail("%s: expression of width %d where %d is needed", what, e.Width(), w)
		}
		visitSignals(e, func(s *Signal) {
			if !own[s] {
				fail("%s reads %q, which belongs to another module", what, s.Name)
			}
		})
	}
	drivers := map[*Signal]int{}
	for _, a := range m.Assigns {
		drivers[a.Dst]++
		check("assign to "+a.Dst.Name, a.Src, a.Dst.W)
	}
	for _, r := range m.Registers {
		drivers[r.Q]++
		check("register "+r.Q.Name, r.D, r.Q.W)
		if r.En != nil {
			check("enable of "+r.Q.Name, r.En, 1)
		}
		if r.Reset != nil && (r.Reset.Sign() < 0 || r.Reset.BitLen() > r.Q.W) {
			fail("reset value of %s does not fit in %d bits", r.Q.Name, r.Q.W)
		}
	}
	for _, mem := range m.Memories {
		drivers[mem.RdData]++
		aw := addrWidth(mem.Depth)
		if mem.Depth < 2 || mem.W < 1 {
			fail("memory %s of %d words of %d bits", mem.Name, mem.Depth, mem.W)
			continue
		}
		check("write enable of "+mem.Name, mem.WrEn, 1)
		check("write address of "+mem.Name, mem.WrAddr, aw)
		check("write data of "+mem.Name, mem.WrData, mem.W)
		check("read address of "+mem.Name, mem.RdAddr, aw)
		if mem.RdEn != nil {
			check("read enable of "+mem.Name, mem.RdEn, 1)
		}
	}
	for _, in := range m.Instances {
		if err := in.Of.Validate(); err != nil {
			fail("instance %s: %v", in.Name, err)
			continue
		}
		seen := map[string]bool{}
		for _, c := range in.Conns {
			p := in.Of.Port(c.Port)
			if p == nil {
				fail("instance %s: module %s has no port %q", in.Name, in.Of.Name, c.Port)
				continue
			}
			seen[c.Port] = true
			what := fmt.Sprintf("instance %s port %s", in.Name, c.Port)
			check(what, c.Expr, p.W)
			if p.Dir == Out {
				s, ok := c.Expr.(*Signal)
				if !ok || s.Kind != KindWire {
					fail("%s: an output must connect to a whole wire", what)
					continue
				}
				drivers[s]++
			}
		}
		for _, p := range in.Of.Ports {
			if !seen[p.Name] {
				fail("instance %s: port %s not connected", in.Name, p.Name)
			}
		}
	}
	for _, s := range append(append([]*Signal(nil), m.Ports...), m.Signals...) {
		need := s.Kind != KindPort || s.Dir == Out
		switch n := drivers[s]; {
		case need && n == 0:
			fail("%s %q is never driven", kindName(s), s.Name)
		case n > 1:
			fail("%s %q has %d drivers", kindName(s), s.Name, n)
		}
	}
	return errors.Join(errs...)
}

func kindName(s *Signal) string {
	switch s.Kind {
	case KindPort:
		return "port"
	case KindReg:
		return "register"
	case KindMem:
		return "memory read data"
	}
	return "wire"
}

// addrWidth is the number of address bits for depth words.
func addrWidth(depth int) int {
	w := 1
	for 1<<w < depth {
		w++
	}
	return w
}
