package xlsx

import (
	"archive/zip"
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/internal/tools/xlsxtest"
)

// build makes a real XLSX file with the spreadsheet library (xlsxtest.Build).
func build(t testing.TB, rows [][]any) []byte {
	t.Helper()
	data, err := xlsxtest.Build(rows)
	require.NoError(t, err)
	return data
}

var roomy = Limits{MaxUnzippedBytes: 1 << 20, MaxRows: 100}

func TestRead(t *testing.T) {
	day := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	data := build(t, [][]any{
		{"email", "age", "vip", "since"},
		{"ada@example.com", 36, true, day},
		{},
		{"bob@example.com", 2.5},
	})
	rows, err := Read(data, roomy)
	require.NoError(t, err)
	require.Len(t, rows, 4)
	assert.Equal(t, []string{"email", "age", "vip", "since"}, rows[0])
	assert.Equal(t, []string{"ada@example.com", "36", "1"}, rows[1][:3])
	d, ok := Date(rows[1][3])
	require.True(t, ok, "a date cell is its serial number: %q", rows[1][3])
	assert.Equal(t, "2026-12-06", d)
	assert.Empty(t, rows[2], "an empty row between two rows")
	assert.Equal(t, []string{"bob@example.com", "2.5"}, rows[3], "no trailing empty cells")
}

func TestReadRefuses(t *testing.T) {
	var bomb bytes.Buffer
	zw := zip.NewWriter(&bomb)
	w, err := zw.Create("xl/worksheets/sheet1.xml")
	require.NoError(t, err)
	_, err = w.Write(make([]byte, 8<<20)) // 8 MiB of zeros: a few KiB once deflated
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.Less(t, bomb.Len(), 64<<10)

	// A part that inflates beyond the size its header declares.
	var liar bytes.Buffer
	zw = zip.NewWriter(&liar)
	hdr := &zip.FileHeader{Name: "xl/worksheets/sheet1.xml", Method: zip.Store, UncompressedSize64: 10, CompressedSize64: 2 << 20}
	rw, err := zw.CreateRaw(hdr)
	require.NoError(t, err)
	_, err = rw.Write(make([]byte, 2<<20))
	require.NoError(t, err)
	require.NoError(t, zw.Close())

	for _, tc := range []struct {
		name string
		data []byte
		lim  Limits
		want error
	}{
		{"a zip bomb", bomb.Bytes(), roomy, ErrTooLarge},
		{"a part larger than its header says", liar.Bytes(), Limits{MaxUnzippedBytes: 1 << 20, MaxRows: 100}, ErrMalformed},
		{"more rows than the limit", build(t, [][]any{{"a"}, {1}, {2}, {3}}), Limits{MaxUnzippedBytes: 1 << 20, MaxRows: 3}, ErrTooManyRows},
		{"a CSV file", []byte("email\nada@example.com\n"), roomy, ErrMalformed},
		{"an empty file", nil, roomy, ErrMalformed},
		{"a zip that is no workbook", zipOf(t, "hello.txt", "hi"), roomy, ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(tc.data, tc.lim)
			require.ErrorIs(t, err, tc.want)
		})
	}
	_, err = Read(build(t, [][]any{{"a"}}), Limits{})
	require.Error(t, err, "limits must be positive")
}

func zipOf(t *testing.T, name, content string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.Create(name)
	require.NoError(t, err)
	_, err = w.Write([]byte(content))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return b.Bytes()
}

func TestDate(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
		ok        bool
	}{
		{"46362", "2026-12-06", true},
		{"46362.5", "2026-12-06", true},
		{"2026-12-06", "", false},
		{"0", "", false},
		{"", "", false},
	} {
		got, ok := Date(tc.raw)
		assert.Equal(t, tc.ok, ok, tc.raw)
		assert.Equal(t, tc.want, got, tc.raw)
	}
}

// FuzzRead: no input makes Read panic or exceed its limits.
func FuzzRead(f *testing.F) {
	f.Add(build(f, [][]any{{"email", "age"}, {"ada@example.com", 36}}))
	f.Add([]byte("PK\x03\x04"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := Read(data, Limits{MaxUnzippedBytes: 1 << 20, MaxRows: 50})
		if err == nil {
			assert.LessOrEqual(t, len(rows), 50)
		}
	})
}
