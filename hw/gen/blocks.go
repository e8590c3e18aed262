package gen

// Blocks returns every module the project ships, in a stable order: what
// cmd/iwgen writes to hw/rtl.
func Blocks() ([]*Module, error) {
	var mods []*Module
	for _, w := range CRC32CWidths {
		m, err := CRC32C(w)
		if err != nil {
			return nil, err
		}
		mods = append(mods, m)
	}
	for _, w := range MPATxWidths {
		m, err := MPATx(w)
		if err != nil {
			return nil, err
		}
		mods = append(mods, m)
	}
	for _, w := range MPARxWidths {
		m, err := MPARx(w)
		if err != nil {
			return nil, err
		}
		mods = append(mods, m)
	}
	for _, w := range DDPTxWidths {
		m, err := DDPTx(w)
		if err != nil {
			return nil, err
		}
		mods = append(mods, m)
	}
	for _, w := range PlacementWidths {
		m, err := Placement(PlacementDefault(w))
		if err != nil {
			return nil, err
		}
		mods = append(mods, m)
	}
	seen := map[string]bool{}
	for _, m := range mods {
		seen[m.Name] = true
	}
	for _, cfg := range []SelftestConfig{SelftestHX8K, SelftestTxHX8K} {
		top, subs, err := SelftestModules(cfg)
		if err != nil {
			return nil, err
		}
		for _, m := range append(subs, top) {
			if !seen[m.Name] {
				seen[m.Name] = true
				mods = append(mods, m)
			}
		}
	}
	for _, w := range CardRegsWidths {
		m, err := CardRegs(w)
		if err != nil {
			return nil, err
		}
		mods = append(mods, m)
	}
	for _, w := range DMARdWidths {
		m, err := DMARd(DMARdDefault(w))
		if err != nil {
			return nil, err
		}
		mods = append(mods, m)
	}
	for _, w := range DMAWrWidths {
		m, err := DMAWr(DMAWrDefault(w))
		if err != nil {
			return nil, err
		}
		mods = append(mods, m)
	}
	for _, w := range CardTxWidths {
		for _, build := range []func(int) (*Module, error){CardTx, CardTxBench} {
			m, err := build(w)
			if err != nil {
				return nil, err
			}
			mods = append(mods, m)
		}
	}
	for _, w := range CardRxWidths {
		for _, build := range []func(int) (*Module, error){CardRx, PlaceAXI, CardRxBench} {
			m, err := build(w)
			if err != nil {
				return nil, err
			}
			mods = append(mods, m)
		}
	}
	for _, w := range CardCQWidths {
		m, err := CardCQ(CardCQDefault(w))
		if err != nil {
			return nil, err
		}
		for _, in := range m.Instances {
			if !seen[in.Of.Name] {
				seen[in.Of.Name] = true
				mods = append(mods, in.Of)
			}
		}
		mods = append(mods, m)
	}
	for _, w := range AXIMuxWidths {
		rd, err := AXIRdMux(AXIMuxDefault(w))
		if err != nil {
			return nil, err
		}
		wr, err := AXIWrMux(AXIMuxDefault(w))
		if err != nil {
			return nil, err
		}
		mods = append(mods, rd, wr)
	}
	for _, w := range AXIRemapWidths {
		rd, err := AXIRdRemap(AXIRemapBoard(w))
		if err != nil {
			return nil, err
		}
		wr, err := AXIWrRemap(AXIRemapBoard(w))
		if err != nil {
			return nil, err
		}
		mods = append(mods, rd, wr)
	}
	cmd, err := CardCmd()
	if err != nil {
		return nil, err
	}
	mods = append(mods, cmd)
	for _, w := range CardTopWidths {
		st, err := CardStat(w)
		if err != nil {
			return nil, err
		}
		mods = append(mods, st)
		m, err := CardTop(w)
		if err != nil {
			return nil, err
		}
		mods = append(mods, m)
	}
	return mods, nil
}
