package reqindex

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func write(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "requirements.txt")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	return p
}

func TestLoad(t *testing.T) {
	ids, err := Load(write(t, "# header\n\nR01 [M] one\nR02 [S] two\n  R10 [M] indented\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"R01", "R02", "R10"}, ids)

	for _, tc := range []struct{ name, text, want string }{
		{"duplicate", "1 a\n2 b\n1 c\n", "1 on lines 1 and 3"},
		{"empty", "# only a comment\n\n", "lists no requirement"},
	} {
		_, err := Load(write(t, tc.text))
		assert.ErrorIs(t, err, ErrList, tc.name)
		assert.ErrorContains(t, err, tc.want, tc.name)
	}
	_, err = Load(filepath.Join(t.TempDir(), "nope.txt"))
	assert.ErrorIs(t, err, ErrList)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestGaps(t *testing.T) {
	list := []string{"1", "2", "3"}
	assert.Empty(t, Gaps(list, []string{"3", "1", "2"}))
	assert.Equal(t, []string{
		"entry 9 is not a requirement of the digest",
		"requirement 1 has more than one entry",
		"requirement 2 has no entry (no test and no reason)",
	}, Gaps(list, []string{"1", "3", "1", "9"}))
}

func TestFuncs(t *testing.T) {
	names, err := Funcs(".")
	require.NoError(t, err)
	assert.True(t, names["TestFuncs"])
	assert.True(t, names["write"])
	_, err = Funcs(t.TempDir())
	assert.ErrorContains(t, err, "no _test.go files")
}
