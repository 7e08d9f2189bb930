package xlsx

import (
	"archive/zip"
	"bytes"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/internal/tools/xlsxtest"
)

// requireAsLibrary reads data with Read and with the spreadsheet library
// (xlsxtest.Read) and requires the same rows.
func requireAsLibrary(t testing.TB, data []byte, msgAndArgs ...any) {
	t.Helper()
	want, err := xlsxtest.Read(data, roomy.MaxUnzippedBytes)
	require.NoError(t, err, msgAndArgs...)
	got, err := Read(data, roomy)
	require.NoError(t, err, msgAndArgs...)
	require.Equal(t, len(want), len(got), msgAndArgs...)
	for i := range want {
		if len(want[i]) == 0 {
			require.Empty(t, got[i], msgAndArgs...)
			continue
		}
		require.Equal(t, want[i], got[i], msgAndArgs...)
	}
}

// handMade is a workbook whose parts are written by hand: the worksheet's
// sheetData, the shared strings' items, and the way its parts point to each
// other.
type handMade struct {
	sheetData   string // inside <sheetData>
	sharedItems string // inside <sst>; no sharedStrings part when empty
	strict      bool   // the strict (ISO) namespaces
	absolute    bool   // the workbook points to its worksheet by an absolute target
	sheetPath   string // default xl/worksheets/sheet1.xml
	otherFirst  bool   // a second sheet, listed after, is the first in the archive
}

func (h handMade) bytes(t testing.TB) []byte {
	t.Helper()
	main, rel := "http://schemas.openxmlformats.org/spreadsheetml/2006/main", "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
	if h.strict {
		main, rel = "http://purl.oclc.org/ooxml/spreadsheetml/main", "http://purl.oclc.org/ooxml/officeDocument/relationships"
	}
	sheetPath := h.sheetPath
	if sheetPath == "" {
		sheetPath = "xl/worksheets/sheet1.xml"
	}
	target := strings.TrimPrefix(sheetPath, "xl/")
	if h.absolute {
		target = "/" + sheetPath
	}
	parts := [][2]string{
		{"[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
			`<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>` +
			`<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>` +
			`<Override PartName="/` + sheetPath + `" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>` +
			`<Override PartName="/xl/worksheets/other.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>` +
			`<Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>`},
		{"_rels/.rels", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="` + rel + `/officeDocument" Target="xl/workbook.xml"/></Relationships>`},
		{"xl/workbook.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><workbook xmlns="` + main + `" xmlns:r="` + rel + `">` +
			`<sheets><sheet name="Contacts" sheetId="1" r:id="rId7"/><sheet name="Other" sheetId="2" r:id="rId8"/></sheets></workbook>`},
		{"xl/_rels/workbook.xml.rels", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId8" Type="` + rel + `/worksheet" Target="worksheets/other.xml"/>` +
			`<Relationship Id="rId7" Type="` + rel + `/worksheet" Target="` + target + `"/>` +
			`<Relationship Id="rId9" Type="` + rel + `/sharedStrings" Target="sharedStrings.xml"/></Relationships>`},
		{sheetPath, `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet xmlns="` + main + `" xmlns:r="` + rel + `"><sheetData>` + h.sheetData + `</sheetData></worksheet>`},
		{"xl/worksheets/other.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet xmlns="` + main + `"><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>not the first sheet</t></is></c></row></sheetData></worksheet>`},
	}
	if h.otherFirst {
		parts[4], parts[5] = parts[5], parts[4]
	}
	if h.sharedItems != "" {
		parts = append(parts, [2]string{"xl/sharedStrings.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><sst xmlns="` + main + `">` + h.sharedItems + `</sst>`})
	}
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, p := range parts {
		w, err := zw.Create(p[0])
		require.NoError(t, err)
		_, err = w.Write([]byte(p[1]))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return b.Bytes()
}

// TestReadAsLibraryHandMade holds Read to the library on workbooks written
// the ways spreadsheet programs write them.
func TestReadAsLibraryHandMade(t *testing.T) {
	sst := `<si><t>email</t></si><si><t xml:space="preserve"> padded </t></si>` +
		`<si><r><rPr><b/></rPr><t>rich</t></r><r><t xml:space="preserve"> text</t></r></si>` +
		`<si><t>東京</t><rPh sb="0" eb="2"><t>トウキョウ</t></rPh><phoneticPr fontId="1"/></si>` +
		`<si><t>line_x000D__x000A_break, an _x005F_x0041_ escape, a _x0041_ and _xD800_ and _x12_</t></si>` +
		`<si><t/></si><si><r><t>only</t></r><r><t>runs</t></r></si>`
	tests := []struct {
		name string
		h    handMade
	}{
		{"shared strings, rich text, phonetic runs, escapes", handMade{sheetData: `<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c><c r="C1" t="s"><v>2</v></c></row>` +
			`<row r="2"><c r="A2" t="s"><v>3</v></c><c r="B2" t="s"><v> 4 </v></c><c r="C2" t="s"><v>6</v></c><c r="D2" t="s"><v>5</v></c></row>`, sharedItems: sst}},
		{"numbers, booleans, errors, dates, formula strings", handMade{sheetData: `<row r="1" spans="1:7"><c r="A1"><v>36</v></c><c r="B1" t="n"><v>2.5E-3</v></c>` +
			`<c r="C1" t="b"><v>1</v></c><c r="D1" t="b"><v>0</v></c><c r="E1" t="e"><v>#N/A</v></c><c r="F1" s="3"><v>46362</v></c>` +
			`<c r="G1" t="d"><v>2026-12-06T00:00:00Z</v></c><c r="H1" t="str"><f>A1&amp;"x"</f><v>36x</v></c></row>`}},
		{"inline strings", handMade{sheetData: `<row r="1"><c r="A1" t="inlineStr"><is><t>inline</t></is></c><c r="B1" t="inlineStr"><is><r><t>in</t></r><r><t>line_x0041_</t></r></is></c><c r="C1" t="inlineStr"><v>v only</v></c></row>`}},
		{"gaps: cells, rows, styled empty cells", handMade{sheetData: `<row r="2"><c r="C2" t="inlineStr"><is><t>c2</t></is></c><c r="E2" s="1"/><c r="F2" s="1"><v></v></c></row>` +
			`<row r="3"/><row r="5" ht="20" customHeight="1"><c r="A5"><v>1</v></c><c r="B5" s="2"/><c r="D5"><v>4</v></c></row>`, sharedItems: sst}},
		{"a formula without a value", handMade{sheetData: `<row r="1"><c r="A1"><v>1</v></c><c r="C1"><f>A1*2</f></c></row>`}},
		{"cells and rows without references", handMade{sheetData: `<row><c><v>1</v></c><c t="inlineStr"><is><t>b</t></is></c><c/><c><v>4</v></c></row><row><c r="B2"><v>2</v></c><c><v>3</v></c></row>`}},
		{"lower-case and wide columns", handMade{sheetData: `<row r="1"><c r="A1"><v>1</v></c><c r="aa1"><v>27</v></c><c r="XFD1"><v>16384</v></c></row>`}},
		{"a shared string index out of range", handMade{sheetData: `<row r="1"><c r="A1" t="s"><v>99</v></c><c r="B1"><v>2</v></c></row>`, sharedItems: `<si><t>x</t></si>`}},
		{"empty sheet", handMade{}},
		{"strict namespaces", handMade{sheetData: `<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1"><v>7</v></c></row>`, sharedItems: sst, strict: true}},
		{"an absolute target", handMade{sheetData: `<row r="1"><c r="A1"><v>7</v></c></row>`, absolute: true}},
		{"another part name, listed second in the archive", handMade{sheetData: `<row r="1"><c r="A1"><v>7</v></c></row>`, sheetPath: "xl/worksheets/data.xml", otherFirst: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireAsLibrary(t, tt.h.bytes(t))
		})
	}
}

// TestReadAsLibraryBuilt holds Read to the library on workbooks the library
// writes, with every kind of value it writes.
func TestReadAsLibraryBuilt(t *testing.T) {
	day := time.Date(2026, 12, 6, 15, 4, 5, 0, time.UTC)
	requireAsLibrary(t, build(t, [][]any{
		{"email", "age", "vip", "since", "ratio", "note"},
		{"ada@example.com", 36, true, day, 0.125, "a\tb\r\nc"},
		{},
		{nil, "", "x", nil},
		{"_x0041_ as typed", "東京 タワー", "emoji 😀", "\x01control", "  spaced  ", int64(math.MaxInt64)},
		{-1.5e-10, uint8(7), float32(1.1), false, time.Duration(90) * time.Minute},
	}))
}

// FuzzReadAsLibrary holds Read to the library on workbooks the library
// writes from arbitrary cell texts and numbers.
func FuzzReadAsLibrary(f *testing.F) {
	f.Add("email", "ada@example.com", 36.5, int64(3), true)
	f.Add("_x005F_x0041_", "", 0.0, int64(0), false)
	f.Add("a\x00b", "東京", 1e300, int64(-7), true)
	f.Fuzz(func(t *testing.T, a, b string, x float64, n int64, flag bool) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return
		}
		rows := [][]any{{a, b}, {x, n, flag}, {}, {b, nil, a}}
		if int(n%5) > 0 {
			rows = append(rows, make([]any, n%5), []any{a})
		}
		data, err := xlsxtest.Build(rows)
		if err != nil {
			return // the library refuses some texts (too long)
		}
		requireAsLibrary(t, data, "%q %q %v %d %v", a, b, x, n, flag)
	})
}

// TestDateAsLibrary holds Date to the library's conversion of serial
// numbers, around Excel's 1900-02-29 and midnight included.
func TestDateAsLibrary(t *testing.T) {
	var serials []float64
	for s := 1.0; s < 70; s += 0.25 {
		serials = append(serials, s)
	}
	for s := 1.0; s < 80000; s += 37.13 {
		serials = append(serials, s)
	}
	for _, whole := range []float64{1, 59, 60, 61, 62, 46362, 2958464} {
		for _, frac := range []float64{0, 0.5, 0.9999, 0.99999999, 0.999999999, 0.9999999999, 0.99999999999999} {
			serials = append(serials, whole+frac)
		}
	}
	serials = append(serials, 2958465, 2958465.5)
	for _, s := range serials {
		want, wok := xlsxtest.Date(s)
		got, ok := Date(strconv.FormatFloat(s, 'g', -1, 64))
		require.Equal(t, wok, ok, "%v", s)
		require.Equal(t, want, got, "%v", s)
	}
	// After 9999-12-31 (the library gives years past 9999) and before
	// 1900-01-01: no date.
	for _, raw := range []string{"2958466", "1e300", "NaN", "Inf", "-1", "0.5", "x"} {
		_, ok := Date(raw)
		assert.False(t, ok, raw)
	}
}

func TestColumn(t *testing.T) {
	for ref, want := range map[string]int{"A1": 1, "Z9": 26, "AA10": 27, "az3": 52, "XFD1048576": 16384,
		"XFE1": 0, "A": 0, "1": 0, "": 0, "A1B": 0, "$A$1": 0, "AAAAAAAAAAAAAAAAAA1": 0} {
		assert.Equal(t, want, column(ref), ref)
	}
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		"plain": "plain", "_x000D__x000A_": "\r\n", "_x005F_x0041_": "_x0041_", "_x0041_": "A", "_xd800_": "",
		"_x12_": "_x12_", "_x00G1_": "_x00G1_", "_x+041_": "_x+041_", "a_x0042_c_x": "aBc_x", "__x0041__": "_A_",
	} {
		assert.Equal(t, want, unescape(in), "%q", in)
	}
}

// TestReadRefusesMalformed: what no spreadsheet program writes is refused
// as malformed, without quoting the file.
func TestReadRefusesMalformed(t *testing.T) {
	for name, h := range map[string]handMade{
		"rows out of order":        {sheetData: `<row r="2"><c r="A2"><v>1</v></c></row><row r="1"><c r="A1"><v>1</v></c></row>`},
		"a row number that is not": {sheetData: `<row r="x"><c r="A1"><v>1</v></c></row>`},
		"a row beyond the sheet":   {sheetData: `<row r="1048577"><c r="A1"><v>1</v></c></row>`},
		"a cell reference too far": {sheetData: `<row r="1"><c r="XFE1"><v>1</v></c></row>`},
		"not well-formed XML":      {sheetData: `<row r="1"><c r="A1"><v>secret-cell</c></row>`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Read(h.bytes(t), roomy)
			require.ErrorIs(t, err, ErrMalformed)
			assert.NotContains(t, err.Error(), "secret-cell")
		})
	}
	_, err := Read(handMade{sheetData: `<row r="101"><c r="A101"><v>1</v></c></row>`}.bytes(t), roomy)
	require.ErrorIs(t, err, ErrTooManyRows, "a row number past the limit, before any empty row is made")
}

// TestReadBoundsCells: a cell far right makes its row hold every empty cell
// before it, in a few bytes of XML; the cells held in all are bounded.
func TestReadBoundsCells(t *testing.T) {
	var far strings.Builder
	for r := 1; r <= 40; r++ {
		fmt.Fprintf(&far, `<row r="%d"><c r="XFD%d"><v>1</v></c></row>`, r, r)
	}
	data := handMade{sheetData: far.String()}.bytes(t)
	_, err := Read(data, Limits{MaxUnzippedBytes: 1 << 20, MaxRows: 100}) // 100 × 256 cells
	require.ErrorIs(t, err, ErrTooManyCells)
	rows, err := Read(data, Limits{MaxUnzippedBytes: 1 << 20, MaxRows: 100, MaxCells: 40 << 14})
	require.NoError(t, err)
	require.Len(t, rows, 40)
	assert.Len(t, rows[39], 1<<14)
	_, err = Read(data, Limits{MaxUnzippedBytes: 1 << 20, MaxRows: 100, MaxCells: 40<<14 - 1})
	require.ErrorIs(t, err, ErrTooManyCells, "one cell short")
	rows, err = Read(build(t, [][]any{{"a", "b"}, {1, 2}}), Limits{MaxUnzippedBytes: 1 << 20, MaxRows: 2, MaxCells: 4})
	require.NoError(t, err, "exactly at the limit")
	assert.Len(t, rows, 2)
}

// TestNoProgramLinksTheLibrary: the spreadsheet library is a test
// dependency only. Of the module's packages, only xlsxtest imports it, and
// only tests import xlsxtest.
func TestNoProgramLinksTheLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "github.com/supervaize/supervaizer-go/...").CombinedOutput()
	require.NoError(t, err, "%s", out)
	const xlsxtestPath = "github.com/supervaize/supervaizer-go/internal/tools/xlsxtest"
	seen := false
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		seen = seen || pkg == "github.com/supervaize/supervaizer-go/internal/xlsx"
		for _, imp := range strings.Fields(imports) {
			if strings.HasPrefix(imp, "github.com/xuri/excelize") {
				assert.Equal(t, xlsxtestPath, pkg, "%s imports the spreadsheet library", pkg)
			}
			assert.NotEqual(t, xlsxtestPath, imp, "%s, not a test, imports xlsxtest", pkg)
		}
	}
	require.True(t, seen, "the list holds the module's packages: %s", out)
	root, err := exec.Command("go", "list", "-deps", "github.com/supervaize/supervaizer-go").CombinedOutput()
	require.NoError(t, err, "%s", root)
	assert.NotContains(t, string(root), "excelize", "the SDK's root package links the spreadsheet library")
	assert.Contains(t, string(root), "github.com/supervaize/supervaizer-go/internal/xlsx\n")
}
