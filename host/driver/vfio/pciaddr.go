package vfio

import (
	"fmt"
	"strconv"
	"strings"
)

// Address is a PCI device address: domain, bus, device (slot) and function,
// written 0000:03:00.0 as in lspci -D and /sys/bus/pci/devices.
type Address struct {
	Domain   uint32 // 16 bits on most hosts; Intel VMD domains go past 0xffff
	Bus      uint8
	Device   uint8 // 0-31
	Function uint8 // 0-7
}

// ParseAddress parses "DDDD:BB:SS.F" or the short "BB:SS.F" (domain 0).
func ParseAddress(s string) (Address, error) {
	bad := func(why string) (Address, error) {
		return Address{}, newErr("parse", "", ErrBadAddress, fmt.Sprintf("%q: %s (want DDDD:BB:SS.F, e.g. 0000:03:00.0)", s, why), nil)
	}
	parts := strings.Split(s, ":")
	var a Address
	switch len(parts) {
	case 3:
		if parts[0] == "" || len(parts[0]) > 8 {
			return bad("domain must be 1 to 8 hex digits")
		}
		d, err := strconv.ParseUint(parts[0], 16, 32)
		if err != nil {
			return bad("domain is not hex")
		}
		a.Domain = uint32(d)
		parts = parts[1:]
	case 2:
	default:
		return bad("wrong number of ':' separators")
	}
	if len(parts[0]) == 0 || len(parts[0]) > 2 {
		return bad("bus must be 1 or 2 hex digits")
	}
	bus, err := strconv.ParseUint(parts[0], 16, 8)
	if err != nil {
		return bad("bus is not hex")
	}
	slot, fn, ok := strings.Cut(parts[1], ".")
	if !ok {
		return bad("missing '.' before the function")
	}
	if len(slot) == 0 || len(slot) > 2 {
		return bad("device must be 1 or 2 hex digits")
	}
	dev, err := strconv.ParseUint(slot, 16, 8)
	if err != nil || dev > 31 {
		return bad("device must be hex 00-1f")
	}
	if len(fn) != 1 || fn[0] < '0' || fn[0] > '7' {
		return bad("function must be 0-7")
	}
	a.Bus, a.Device, a.Function = uint8(bus), uint8(dev), fn[0]-'0'
	return a, nil
}

// String formats the address the way sysfs names the device.
func (a Address) String() string {
	return fmt.Sprintf("%04x:%02x:%02x.%d", a.Domain, a.Bus, a.Device, a.Function)
}
