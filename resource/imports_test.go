package resource

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/contracts"
)

// impColumns are the columns of the parser tests.
var impColumns = []contracts.ImportColumn{
	{ID: "email", Label: "E-mail", Required: true},
	{ID: "age", Type: contracts.FieldInteger},
	{ID: "score", Type: contracts.FieldNumber},
	{ID: "active", Type: contracts.FieldBoolean},
	{ID: "born", Type: contracts.FieldDate},
}

func TestParseImportCSV(t *testing.T) {
	tests := []struct {
		name     string
		csv      string
		maxRows  int
		wantRows []map[string]any
		wantNums []int
		wantErrs []ImportRowError // row errors (file accepted)
		wantFile []string         // error codes of a refused file, after import_rejected
		wantHTTP int              // status of a refused file
	}{
		{name: "typed cells", csv: "email,age,score,active,born\n a@x , 42 ,-1.5e3,YES,2026-01-31\n",
			wantRows: []map[string]any{{"email": "a@x", "age": int64(42), "score": -1500.0, "active": true, "born": "2026-01-31"}},
			wantNums: []int{1}},
		{name: "header by label, case-insensitive, extra columns ignored, BOM", csv: "\ufeffe-MAIL,notes\na@x,whatever\n",
			wantRows: []map[string]any{{"email": "a@x"}}, wantNums: []int{1}},
		{name: "empty optional cells are absent", csv: "email,age\na@x,\n",
			wantRows: []map[string]any{{"email": "a@x"}}, wantNums: []int{1}},
		{name: "blank rows skipped but numbered; quoted newlines", csv: "email\n,\n\"a\nb@x\"\nc@x\n",
			wantRows: []map[string]any{{"email": "a\nb@x"}, {"email": "c@x"}}, wantNums: []int{2, 3}},
		{name: "CRLF", csv: "email,age\r\na@x,1\r\n", wantRows: []map[string]any{{"email": "a@x", "age": int64(1)}}, wantNums: []int{1}},
		{name: "row errors", csv: "email,age,score,active,born\na@x,1.0,x,maybe,2026-02-30\n,7,,,\nb@x,9223372036854775808,Inf,0,26-01-01\nc@x\n",
			wantErrs: []ImportRowError{
				{Row: 1, Column: "age", Code: "type", Message: "must be an integer"},
				{Row: 1, Column: "score", Code: "type", Message: "must be a number"},
				{Row: 1, Column: "active", Code: "type", Message: "must be true or false"},
				{Row: 1, Column: "born", Code: "type", Message: "must be a date (YYYY-MM-DD)"},
				{Row: 2, Column: "email", Code: "required", Message: "is required"},
				{Row: 3, Column: "age", Code: "type", Message: "must be an integer"},
				{Row: 3, Column: "score", Code: "type", Message: "must be a number"},
				{Row: 3, Column: "born", Code: "type", Message: "must be a date (YYYY-MM-DD)"},
				{Row: 4, Code: "field_count", Message: "has 1 cells, the header has 5"},
			}},
		{name: "number out of range", csv: "email,score\na@x,1e400\n",
			wantErrs: []ImportRowError{{Row: 1, Column: "score", Code: "type", Message: "must be a finite number"}}},
		{name: "missing required column", csv: "age\n1\n", wantFile: []string{"missing_column"}, wantHTTP: 422},
		{name: "duplicate column", csv: "email,E-mail\na,b\n", wantFile: []string{"duplicate_column"}, wantHTTP: 422},
		{name: "empty file", csv: "", wantFile: []string{"empty_file"}, wantHTTP: 422},
		{name: "only a BOM", csv: "\ufeff", wantFile: []string{"empty_file"}, wantHTTP: 422},
		{name: "not UTF-8", csv: "email\n\xc3\x28\n", wantFile: []string{"encoding"}, wantHTTP: 422},
		{name: "malformed header", csv: "\"email\n", wantFile: []string{"malformed_csv"}, wantHTTP: 422},
		{name: "malformed row", csv: "email\na@x\nb\"c\n", wantFile: []string{"malformed_csv"}, wantHTTP: 422},
		{name: "too many rows", csv: "email\na\nb\nc\n", maxRows: 2, wantHTTP: http.StatusRequestEntityTooLarge},
		{name: "exactly the row limit", csv: "email\na\nb\n", maxRows: 2,
			wantRows: []map[string]any{{"email": "a"}, {"email": "b"}}, wantNums: []int{1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			maxRows := tt.maxRows
			if maxRows == 0 {
				maxRows = DefaultImportMaxRows
			}
			p, oe := parseCSV(impColumns, []byte(tt.csv), maxRows)
			if tt.wantHTTP != 0 {
				require.NotNil(t, oe)
				assert.Equal(t, tt.wantHTTP, oe.Status)
				if tt.wantFile != nil {
					codes := []string{}
					for _, e := range oe.Errs[1:] {
						codes = append(codes, e.Code)
					}
					assert.Equal(t, contracts.ErrorImportRejected, oe.Errs[0].Code)
					assert.Equal(t, tt.wantFile, codes)
				}
				return
			}
			require.Nil(t, oe)
			assert.Equal(t, tt.wantRows, p.Rows)
			assert.Equal(t, tt.wantNums, p.Nums)
			assert.Equal(t, tt.wantErrs, p.Errs)
		})
	}
}

func TestImportRowErrorsAreCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("email,age\n")
	n := maxReportedRowErrors + 250
	for range n {
		b.WriteString(",1\n") // no e-mail: one error per row
	}
	p, oe := parseCSV(impColumns[:2], []byte(b.String()), n)
	require.Nil(t, oe)
	assert.Len(t, p.Errs, maxReportedRowErrors)
	assert.Equal(t, 250, p.More)
	rejected := rejected(p.Errs, p.More)
	last := rejected.Errs[len(rejected.Errs)-1]
	assert.Equal(t, ImportCodeTooManyErrors, last.Code)
	assert.Contains(t, rejected.Detail, fmt.Sprint(n))
	assert.Len(t, rowErrorObjects(p.Errs, p.More), maxReportedRowErrors+1)
}

func TestDecimalNumber(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "-1": true, "+2.5": true, "1.": true, ".5": true, "1e3": true, "1E-3": true, "-0.0e+0": true,
		"": false, "+": false, ".": false, "e3": false, "1e": false, "1e+": false, "0x10": false, "Inf": false,
		"NaN": false, "1_000": false, "1,5": false, "1.2.3": false, " 1": false,
	} {
		assert.Equal(t, want, decimalNumber(s), "%q", s)
	}
}

func TestImportFormats(t *testing.T) {
	csvOnly := &contracts.ResourceImportDocument{AcceptedFormats: []string{"csv"}}
	both := &contracts.ResourceImportDocument{AcceptedFormats: []string{"csv", "xlsx"}}
	xlsxOnly := &contracts.ResourceImportDocument{AcceptedFormats: []string{"xlsx"}}
	for _, tc := range []struct {
		format string
		doc    *contracts.ResourceImportDocument
		want   string // "" when refused (HTTP 415)
	}{
		{"", csvOnly, "csv"},
		{" CSV ", csvOnly, "csv"},
		{"xlsx", csvOnly, ""},
		{"xlsx", both, "xlsx"},
		{"XLSX", xlsxOnly, "xlsx"},
		{"", xlsxOnly, ""},
		{"json", both, ""},
	} {
		got, oe := checkFormat(tc.format, tc.doc)
		if tc.want == "" {
			require.NotNil(t, oe, "%q with %v", tc.format, tc.doc.AcceptedFormats)
			assert.Equal(t, http.StatusUnsupportedMediaType, oe.Status)
			assert.Contains(t, oe.Detail, "this import accepts "+strings.Join(tc.doc.AcceptedFormats, " or "))
			continue
		}
		require.Nil(t, oe, "%q with %v", tc.format, tc.doc.AcceptedFormats)
		assert.Equal(t, tc.want, got)
	}
}

func FuzzParseImportCSV(f *testing.F) {
	for _, s := range []string{
		"email,age,score,active,born\na@x,1,2.5,true,2026-01-01\n",
		"\ufeffE-mail\n\"a\nb\",x\n", "email\n\"unterminated\n", "email,email\n", "age\n1\n", "",
		"email,age\n,\n\n,1\nx,y,z\n", "email\r\na\r\n", "\xff\xfe",
	} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, maxRows uint8) {
		p, oe := parseCSV(impColumns, data, int(maxRows)+1)
		if oe != nil {
			require.NotEmpty(t, oe.Errs)
			require.True(t, oe.Status == http.StatusUnprocessableEntity || oe.Status == http.StatusRequestEntityTooLarge)
			return
		}
		require.True(t, utf8.Valid(data))
		require.Len(t, p.Nums, len(p.Rows))
		last := 0
		for i, row := range p.Rows {
			require.Greater(t, p.Nums[i], last, "row numbers increase")
			last = p.Nums[i]
			require.LessOrEqual(t, p.Nums[i], int(maxRows)+1)
			require.Contains(t, row, "email", "a required column is present in every accepted row")
		}
		for _, e := range p.Errs {
			require.GreaterOrEqual(t, e.Row, 1)
			require.NotEmpty(t, e.Code)
		}
	})
}

func BenchmarkParseImportCSV(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("email,age,score,active,born\n")
	for i := range 1000 {
		fmt.Fprintf(&sb, "user%d@example.com,%d,%d.5,true,2026-01-%02d\n", i, i, i, i%28+1)
	}
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		p, oe := parseCSV(impColumns, data, DefaultImportMaxRows)
		if oe != nil || len(p.Rows) != 1000 {
			b.Fatal("unexpected parse result")
		}
	}
}
