package vfio

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/openiwarp/openiwarp/host/driver"
)

func TestCardRegistered(t *testing.T) {
	assert.Contains(t, driver.Kinds(), "vfio")
	_, err := driver.Open("vfio")
	assert.ErrorIs(t, err, driver.ErrInvalid, "no address")
	assert.Contains(t, err.Error(), "vfio:0000:03:00.0")
	_, err = driver.Open("vfio:0000:03:00")
	assert.ErrorIs(t, err, ErrBadAddress)
}

func TestCardErr(t *testing.T) {
	err := cardErr(newErr("access", "0000:00:01.0", ErrOutOfRange, "", nil))
	assert.ErrorIs(t, err, driver.ErrInvalid)
	assert.ErrorIs(t, err, ErrOutOfRange)
	err = cardErr(newErr("access", "0000:00:01.0", ErrClosed, "", nil))
	assert.ErrorIs(t, err, driver.ErrClosed)
	assert.ErrorIs(t, cardErr(ErrMemlock), ErrMemlock)
	assert.NoError(t, cardErr(nil))
}
