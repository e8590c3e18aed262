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
	for _, w := range PlacementWidths {
		m, err := Placement(PlacementDefault(w))
		if err != nil {
			return nil, err
		}
		mods = append(mods, m)
	}
	top, subs, err := SelftestModules(SelftestHX8K)
	if err != nil {
		return nil, err
	}
	mods = append(append(mods, subs...), top)
	return mods, nil
}
