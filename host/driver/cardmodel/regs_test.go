package cardmodel

import (
	"errors"
	"testing"

	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	pr "github.com/openiwarp/openiwarp/host/driver/regs"
)

func TestNewConfig(t *testing.T) {
	if _, err := New(Config{Width: 64}); err == nil {
		t.Fatal("New without a Host succeeded")
	}
	if _, err := New(Config{Width: 96, Host: newTestHost()}); err == nil {
		t.Fatal("New with a 96-bit data path succeeded")
	}
	c, err := New(Config{Width: 512, Host: newTestHost()})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := c.Read32(cs.CapsDatapath); v&0xff != 64 {
		t.Fatalf("WIDTH_BYTES %d, want 64", v&0xff)
	}
}

func TestRegisterReads(t *testing.T) {
	c, _ := New(Config{Host: newTestHost()})
	for _, tc := range []struct {
		off  uint32
		want uint32
	}{
		{cs.ID, cs.VendorID | cs.DeviceID<<16},
		{cs.Version, cs.InterfaceVersion},
		{cs.CapsDatapath, 8 | cs.MaxSGE<<8 | cs.MaxWQEBBs<<16 | cs.MaxRd<<24},
		{cs.CapsObjects, 10 | 10<<8 | 12<<16 | 16<<24},
		{cs.CapsInline, cs.MaxInline | cs.PushInline<<16},
		{cs.CapsRing, cs.MinRingLog | cs.MaxRingLog<<8},
		{cs.Ctrl, 0},
		{cs.Status, 1},
		{cs.DMAFaultInfo, 0},
		{cs.QPCmd, 0},
		{cs.CQDBBase + 5*cs.CQDBStride, 0},
		{cs.QPDBBase + 7*cs.QPDBStride + cs.QPDBPush, 0},
	} {
		v, err := c.Read32(tc.off)
		if err != nil || v != tc.want {
			t.Errorf("Read32(%#x) = %#x, %v; want %#x", tc.off, v, err, tc.want)
		}
	}
}

func TestRegisterReadBack(t *testing.T) {
	c, _ := New(Config{Host: newTestHost()})
	for _, off := range []uint32{cs.Scratch, cs.EQBaseLo, cs.EQBaseHi, cs.QpstatBaseLo, cs.QpstatBaseHi, cs.CQBaseLo, cs.CQBaseHi,
		cs.QPPD, cs.QPSQBaseLo, cs.QPSQBaseHi, cs.QPRQBaseLo, cs.QPRQBaseHi, cs.QPTXSBaseLo, cs.QPTXSBaseHi, cs.QPRXSBaseLo, cs.QPRXSBaseHi,
		cs.QPSizes, cs.QPCqs, cs.QPMPA, cs.QPRD,
		cs.PlacementWindow + pr.StagCtrl, cs.PlacementWindow + pr.StagPd, cs.PlacementWindow + pr.StagBaseHi, cs.PlacementWindow + pr.PblAddrHi} {
		v := 0xA5000000 | off
		if err := c.Write32(off, v); err != nil {
			t.Fatalf("Write32(%#x): %v", off, err)
		}
		if got, err := c.Read32(off); err != nil || got != v {
			t.Errorf("register %#x reads %#x, %v after writing %#x", off, got, err, v)
		}
	}
	c.Write32(cs.Scratch, 1)
	c.Write32(cs.Ctrl, 1)
	c.Write32(cs.Reset, 0)
	if v, _ := c.Read32(cs.Ctrl); v != 0 {
		t.Fatal("RESET left CTRL.ENABLE set")
	}
	if v, _ := c.Read32(cs.Scratch); v != 0 {
		t.Fatal("RESET left SCRATCH")
	}
}

func TestRegisterMisuse(t *testing.T) {
	c, _ := New(Config{Host: newTestHost()})
	for _, tc := range []struct {
		name  string
		write bool
		off   uint32
		want  error
	}{
		{"misaligned read", false, 2, ErrMisaligned},
		{"misaligned write", true, cs.Scratch + 1, ErrMisaligned},
		{"past BAR0", false, 1 << cs.AddrBits, ErrOutOfRange},
		{"hole", true, 0x001C, ErrOutOfRange},
		{"hole read", false, 0x0300, ErrOutOfRange},
		{"placement hole", true, cs.PlacementWindow + 0x34, ErrOutOfRange},
		{"CQ doorbell hole", true, cs.CQDBBase + 4, ErrOutOfRange},
		{"QP doorbell hole", true, cs.QPDBBase + 0x20, ErrOutOfRange},
		{"past the QP doorbells", true, cs.QPDBBase + cs.MaxQP*cs.QPDBStride, ErrOutOfRange},
		{"read-only ID", true, cs.ID, ErrReadOnly},
		{"read-only STATUS", true, cs.Status, ErrReadOnly},
		{"QP 0", true, cs.QPCmd, ErrRefused},
		{"CQ destroy of nothing", true, cs.CQCmd, ErrRefused},
	} {
		var err error
		if tc.name == "CQ destroy of nothing" {
			err = c.Write32(cs.CQCmd, uint32(cs.CQOpDestroy))
		} else if tc.name == "QP 0" {
			err = c.Write32(cs.QPCmd, uint32(cs.QPOpCreate))
		} else if tc.write {
			err = c.Write32(tc.off, 1)
		} else {
			_, err = c.Read32(tc.off)
		}
		var re *RegError
		if !errors.Is(err, tc.want) || !errors.As(err, &re) || re.Off != tc.off {
			t.Errorf("%s: %v, want %v at %#x", tc.name, err, tc.want, tc.off)
		}
	}
}

// TestCommandsRefused: a bad context is refused with a reason and
// creates nothing.
func TestCommandsRefused(t *testing.T) {
	h := newTestHost()
	d := newDev(t, h)
	c := d.cq(1, 4)
	good := func() {
		d.w(cs.QPNum, 5)
		d.w(cs.QPSizes, 4|4<<8|12<<16|12<<24)
		for i := uint32(0); i < 8; i++ {
			d.w(cs.QPSQBaseLo+4*i, 0)
		}
		d.w(cs.QPCqs, c.n|c.n<<16)
		d.w(cs.QPMPA, 1024)
		d.w(cs.QPRD, 1|1<<8)
	}
	// CMD_STATUS counts every command and says why the last was refused.
	seq := func() uint16 {
		v, err := d.c.Read32(cs.CmdStatus)
		if err != nil {
			t.Fatal(err)
		}
		return uint16(v)
	}
	last := seq()
	status := func(name string, want cs.CmdWhy) {
		t.Helper()
		v, _ := d.c.Read32(cs.CmdStatus)
		if uint16(v) != last+1 {
			t.Errorf("%s: CMD_STATUS.SEQ %d, want %d", name, uint16(v), last+1)
		}
		last = uint16(v)
		why := cs.CmdWhy(v >> cs.CmdStatusWhyShift & cs.CmdStatusWhyMask)
		if why != want || v>>cs.CmdStatusRefusedShift&1 != b2u(want != cs.CmdWhyOk) {
			t.Errorf("%s: CMD_STATUS %#x (WHY %v), want WHY %v", name, v, why, want)
		}
	}
	for _, tc := range []struct {
		name string
		bad  func()
		why  cs.CmdWhy
	}{
		{"SQ too deep", func() { d.w(cs.QPSizes, 17|4<<8|12<<16|12<<24) }, cs.CmdWhyBadSize},
		{"ring too small", func() { d.w(cs.QPSizes, 4|4<<8|11<<16|12<<24) }, cs.CmdWhyBadSize},
		{"ring too large", func() { d.w(cs.QPSizes, 4|4<<8|12<<16|25<<24) }, cs.CmdWhyBadSize},
		{"misaligned SQ", func() { d.w(cs.QPSQBaseLo, 64) }, cs.CmdWhyBadAlign},
		{"misaligned RXS", func() { d.w(cs.QPRXSBaseLo, 2048) }, cs.CmdWhyBadAlign},
		{"no such CQ", func() { d.w(cs.QPCqs, c.n|7<<16) }, cs.CmdWhyNoCQ},
		{"MULPDU too small", func() { d.w(cs.QPMPA, 100) }, cs.CmdWhyBadMulpdu},
		{"MULPDU too large", func() { d.w(cs.QPMPA, 65000) }, cs.CmdWhyBadMulpdu},
		{"MULPDU above half the TX ring", func() { d.w(cs.QPMPA, 2049) }, cs.CmdWhyBadMulpdu},
		{"ORD 0", func() { d.w(cs.QPRD, 1<<8) }, cs.CmdWhyBadRD},
		{"IRD 17", func() { d.w(cs.QPRD, 1|17<<8) }, cs.CmdWhyBadRD},
		{"QP 0", func() { d.w(cs.QPNum, 0) }, cs.CmdWhyBadNumber},
	} {
		good()
		tc.bad()
		if err := d.c.Write32(cs.QPCmd, uint32(cs.QPOpCreate)); !errors.Is(err, ErrRefused) {
			t.Errorf("%s: CREATE gave %v", tc.name, err)
		}
		status(tc.name, tc.why)
		if d.c.qps[5] != nil {
			t.Fatalf("%s: the QP was created", tc.name)
		}
	}
	good()
	d.w(cs.QPCmd, uint32(cs.QPOpCreate))
	status("CREATE", cs.CmdWhyOk)
	if err := d.c.Write32(cs.QPCmd, uint32(cs.QPOpCreate)); !errors.Is(err, ErrRefused) {
		t.Errorf("CREATE of an existing QP: %v", err)
	}
	status("CREATE of an existing QP", cs.CmdWhyExists)
	if err := d.c.Write32(cs.QPCmd, uint32(cs.QPOpDestroy)); !errors.Is(err, ErrRefused) {
		t.Errorf("DESTROY of a running QP: %v", err)
	}
	status("DESTROY of a running QP", cs.CmdWhyBadState)
	if err := d.c.Write32(cs.QPCmd, 9); !errors.Is(err, ErrRefused) {
		t.Errorf("QP_CMD 9: %v", err)
	}
	status("QP_CMD 9", cs.CmdWhyBadOp)
	if err := d.c.Write32(cs.CQCmd, uint32(cs.CQOpDestroy)); !errors.Is(err, ErrRefused) {
		t.Errorf("DESTROY of a CQ in use: %v", err)
	}
	status("DESTROY of a CQ in use", cs.CmdWhyCQBusy)
	d.w(cs.QPCmd, uint32(cs.QPOpError))
	d.c.Run()
	// CLOSE and ERROR of a QP in error are taken without effect: the
	// card may have put it there on its own before the driver's command.
	for _, op := range []cs.QPOp{cs.QPOpClose, cs.QPOpError} {
		if err := d.c.Write32(cs.QPCmd, uint32(op)); err != nil {
			t.Errorf("%v of a QP in ERROR: %v", op, err)
		}
		if st := d.c.qps[5].state; st != cs.QPStateError {
			t.Errorf("%v of a QP in ERROR left it %v", op, st)
		}
	}
	d.w(cs.QPCmd, uint32(cs.QPOpDestroy))
	d.w(cs.CQCmd, uint32(cs.CQOpDestroy))
	d.w(cs.CQNum, 3)
	d.w(cs.CQBaseLo, 32)
	d.w(cs.CQCfg, 4)
	if err := d.c.Write32(cs.CQCmd, uint32(cs.CQOpCreate)); !errors.Is(err, ErrRefused) {
		t.Errorf("CREATE of a misaligned CQ: %v", err)
	}
	if err := d.c.Write32(cs.EQCfg, 17|1<<31); !errors.Is(err, ErrRefused) {
		t.Errorf("EQ of 2^17 entries: %v", err)
	}
	v, _ := d.c.Read32(cs.CmdStatus)
	if cs.CmdWhy(v>>cs.CmdStatusWhyShift) != cs.CmdWhyBadSize {
		t.Errorf("EQ of 2^17 entries: CMD_STATUS %#x", v)
	}
	d.w(cs.Reset, 1)
	if v, _ := d.c.Read32(cs.CmdStatus); v != 0 {
		t.Errorf("CMD_STATUS after RESET: %#x", v)
	}
	if err := d.c.Write32(cs.CmdStatus, 1); !errors.Is(err, ErrReadOnly) {
		t.Errorf("a write to CMD_STATUS: %v", err)
	}
}
