package supervaizer_test

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/tools/xlsxtest"
)

// xlsxFile is a real XLSX workbook made by the reader's library.
func xlsxFile(tb testing.TB, rows [][]any) []byte {
	tb.Helper()
	data, err := xlsxtest.Build(rows)
	require.NoError(tb, err)
	return data
}

// xlsxCellsFarRight is a workbook whose 160 data rows each hold one cell at
// column XFD: each row holds the 16,383 empty cells before it, more cells in
// all than an import reads (DefaultImportMaxRows × 256).
func xlsxCellsFarRight(tb testing.TB) []byte {
	tb.Helper()
	cells := map[string]any{"A1": "email"}
	for r := 2; r <= 161; r++ {
		cells[fmt.Sprintf("XFD%d", r)] = "far"
	}
	data, err := xlsxtest.BuildCells(cells)
	require.NoError(tb, err)
	return data
}

// zipBomb is a small zip archive whose one part unzips to n zero bytes.
func zipBomb(tb testing.TB, n int64) []byte {
	tb.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.Create("xl/worksheets/sheet1.xml")
	require.NoError(tb, err)
	zero := make([]byte, 1<<20)
	for left := n; left > 0; left -= int64(len(zero)) {
		_, err := w.Write(zero[:min(left, int64(len(zero)))])
		require.NoError(tb, err)
	}
	require.NoError(tb, zw.Close())
	return b.Bytes()
}

// TestResourceImportXLSX: a document whose accepted_formats lists xlsx takes
// a real workbook, on POST /a2a (base64) and on the REST route (its
// Content-Type), with the CSV checks: the header by id or label, an empty row
// counted and skipped, cells trimmed, a row shorter than the header, numbers
// as integers.
func TestResourceImportXLSX(t *testing.T) {
	f := newResFixture(t)
	file := xlsxFile(t, [][]any{
		{"E-mail", "Name", "age", "ignored"},
		{"ann@a.test", " Ann ", 31, "x"},
		{},
		{"bob@a.test", "Bob, Jr."},
	})
	res := f.invoke(t, resAlpha, "resource.contacts.import", map[string]any{"format": "xlsx",
		"content": base64.StdEncoding.EncodeToString(file), "encoding": "base64", "fields": map[string]any{"source": "fair"}})
	require.Equal(t, contracts.StatusOK, res.Status, res.Errors)
	assert.Equal(t, 2, *res.Effects[0].Count)
	f.contacts.mu.Lock()
	batch := f.contacts.batches[0]
	f.contacts.mu.Unlock()
	assert.Equal(t, []int{1, 3}, batch.Rows, "sheet row n+1 is data row n; the empty row counts")
	assert.Equal(t, []resContact{{Email: "ann@a.test", Name: "Ann", Age: 31}, {Email: "bob@a.test", Name: "Bob, Jr."}}, batch.Items)
	assert.Equal(t, map[string]any{"source": "fair"}, batch.Fields)

	w := f.do(t, resCall{method: http.MethodPost, path: resPath("contacts", "import/?source=fair"), body: string(file),
		contentType: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", ws: resBeta,
		scopes: []string{"resource.contacts.import"}})
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	body := decodeBody(t, w)
	assert.EqualValues(t, 2, body["count"])
	assert.Equal(t, []string{"ann@a.test", "bob@a.test"}, emails(anyItems(body["items"])))

	// The same row checks as CSV: a type error is a row error.
	bad := xlsxFile(t, [][]any{{"email", "age"}, {"a@x.test", "old"}})
	res = f.invoke(t, resAlpha, "resource.contacts.import", map[string]any{"format": "xlsx",
		"content": base64.StdEncoding.EncodeToString(bad), "encoding": "base64"})
	assert.Equal(t, []string{"import_rejected", "type"}, errorCodes(res))
}
