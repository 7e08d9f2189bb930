// Package xlsx reads the first worksheet of an XLSX workbook as rows of text
// cells, within bounds, for resource imports.
//
// A workbook is a zip archive: its declared uncompressed size is checked
// against the limit before anything is unzipped (archive/zip refuses an entry
// that inflates beyond its declared size), so a zip bomb is refused without
// being inflated, and every part is kept in memory (never in temporary
// files). Rows are read one at a time and the reading stops past the row
// limit.
//
// The reader is this package's own, on archive/zip and encoding/xml: it reads
// what an import needs (the workbook's sheet list and relationships, the
// shared strings, the cells of the first worksheet) as
// github.com/xuri/excelize/v2 reads them, which the tests hold it to
// (internal/tools/xlsxtest, which only tests import). Linking that library into
// every program that imports the SDK cost 2.5 MB of binary and 1.3 MB of
// memory kept live from its initialization.
package xlsx

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Errors of [Read], matched with errors.Is.
var (
	ErrTooLarge    = errors.New("xlsx: the workbook unzips to more than the limit")
	ErrTooManyRows = errors.New("xlsx: the worksheet has more rows than the limit")
	// ErrTooManyCells: the rows would hold more cells than Limits.MaxCells.
	ErrTooManyCells = errors.New("xlsx: the worksheet holds more cells than the limit")
	ErrMalformed    = errors.New("xlsx: not a readable XLSX workbook")
)

// Limits bound a workbook. MaxUnzippedBytes and MaxRows must be positive.
type Limits struct {
	MaxUnzippedBytes int64 // total uncompressed size of the archive's parts
	MaxRows          int   // rows of the first worksheet, header included
	// MaxCells bounds the cells Read returns in all, the empty ones before
	// a cell of a row included (a cell at column XFD is the 16,384th of its
	// row, written in a few bytes); zero means MaxRows × DefaultCellsPerRow.
	MaxCells int
}

// DefaultCellsPerRow is the cells per row of the default Limits.MaxCells.
const DefaultCellsPerRow = 256

// maxSheetRows is the number of rows of a worksheet (1,048,576): a row
// number above it is malformed.
const maxSheetRows = 1 << 20

// maxSheetCols is the number of columns of a worksheet (XFD, 16,384).
const maxSheetCols = 1 << 14

// Read returns the rows of the workbook's first worksheet (in the order of
// the workbook's sheet list), each as its cells' raw values: text as
// written, numbers as stored (no display format applied), booleans as 1 or
// 0, dates as their serial number (see [Date]). Trailing empty cells of a row
// are absent; an empty row between two rows is an empty slice. Errors wrap
// ErrTooLarge, ErrTooManyRows, ErrTooManyCells or ErrMalformed and never
// quote a cell.
func Read(data []byte, lim Limits) ([][]string, error) {
	if lim.MaxUnzippedBytes <= 0 || lim.MaxRows <= 0 {
		return nil, fmt.Errorf("xlsx: invalid limits %+v", lim)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("%w: not a zip archive", ErrMalformed)
	}
	var total uint64
	parts := make(map[string]*zip.File, len(zr.File))
	for _, f := range zr.File {
		total += f.UncompressedSize64
		if total > uint64(lim.MaxUnzippedBytes) {
			return nil, fmt.Errorf("%w of %d bytes", ErrTooLarge, lim.MaxUnzippedBytes)
		}
		if _, dup := parts[f.Name]; !dup {
			parts[f.Name] = f
		}
	}
	wb := workbook{parts: parts}
	sheet, err := wb.firstSheet()
	if err != nil {
		return nil, err
	}
	sst, err := wb.sharedStrings()
	if err != nil {
		return nil, err
	}
	rc, _, err := wb.open(sheet)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	maxCells := lim.MaxCells
	if maxCells <= 0 {
		maxCells = lim.MaxRows * DefaultCellsPerRow
	}
	return readSheet(rc, sst, lim.MaxRows, maxCells)
}

// workbook is an archive's parts, by name.
type workbook struct {
	parts map[string]*zip.File
}

// open returns a reader of the part named name; ok is false when there is
// none.
func (w workbook) open(name string) (io.ReadCloser, bool, error) {
	f, ok := w.parts[name]
	if !ok {
		return nil, false, nil
	}
	rc, err := f.Open()
	if err != nil {
		return nil, true, fmt.Errorf("%w: %s", ErrMalformed, reason(err))
	}
	return rc, true, nil
}

// relationship is one <Relationship> of a relationships part.
type relationship struct {
	ID     string `xml:"Id,attr"`
	Type   string `xml:"Type,attr"`
	Target string `xml:"Target,attr"`
}

// relationships reads the relationships part named name (none when the part
// is absent).
func (w workbook) relationships(name string) ([]relationship, error) {
	var rels struct {
		Relationships []relationship `xml:"Relationship"`
	}
	if err := w.decode(name, &rels); err != nil {
		return nil, err
	}
	return rels.Relationships, nil
}

// decode decodes the XML part named name into v; an absent part leaves v as
// it is.
func (w workbook) decode(name string, v any) error {
	rc, ok, err := w.open(name)
	if !ok || err != nil {
		return err
	}
	defer rc.Close()
	if err := xml.NewDecoder(rc).Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %s", ErrMalformed, reason(err))
	}
	return nil
}

// workbookPath returns the path of the workbook part: the target of the
// package's officeDocument relationship (transitional or strict), else
// xl/workbook.xml.
func (w workbook) workbookPath() (string, error) {
	rels, err := w.relationships("_rels/.rels")
	if err != nil {
		return "", err
	}
	for _, r := range rels {
		if r.Type == "http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" ||
			r.Type == "http://purl.oclc.org/ooxml/officeDocument/relationships/officeDocument" {
			return strings.TrimPrefix(r.Target, "/"), nil
		}
	}
	return "xl/workbook.xml", nil
}

// firstSheet returns the name of the part of the first sheet of the
// workbook's sheet list.
func (w workbook) firstSheet() (string, error) {
	wbPath, err := w.workbookPath()
	if err != nil {
		return "", err
	}
	var book struct {
		Sheets []struct {
			Attrs []xml.Attr `xml:",any,attr"`
		} `xml:"sheets>sheet"`
	}
	if _, ok := w.parts[wbPath]; !ok {
		return "", fmt.Errorf("%w: no workbook part", ErrMalformed)
	}
	if err := w.decode(wbPath, &book); err != nil {
		return "", err
	}
	if len(book.Sheets) == 0 {
		return "", fmt.Errorf("%w: the workbook has no worksheet", ErrMalformed)
	}
	var id string
	for _, a := range book.Sheets[0].Attrs {
		if a.Name.Local == "id" && a.Name.Space != "" { // r:id
			id = a.Value
		}
	}
	dir := path.Dir(wbPath)
	relsPath := path.Join(dir, "_rels", path.Base(wbPath)+".rels")
	rels, err := w.relationships(relsPath)
	if err != nil {
		return "", err
	}
	for _, r := range rels {
		if r.ID != id {
			continue
		}
		target := strings.TrimPrefix(path.Clean(dir+"/"+r.Target), "/")
		if strings.HasPrefix(r.Target, "/") {
			target = strings.TrimPrefix(path.Clean(r.Target), "/")
		}
		if _, ok := w.parts[target]; ok {
			return target, nil
		}
	}
	return "", fmt.Errorf("%w: the first worksheet's part is missing", ErrMalformed)
}

// stringItem is an <si> of the shared strings, or a cell's <is>: its text
// and the text of its rich-text runs (phonetic runs are not text).
type stringItem struct {
	T *struct {
		Val string `xml:",chardata"`
	} `xml:"t"`
	R []struct {
		T *struct {
			Val string `xml:",chardata"`
		} `xml:"t"`
	} `xml:"r"`
}

// String returns the item's text, its escaped characters (_xHHHH_) decoded.
func (s *stringItem) String() string {
	var b strings.Builder
	if s.T != nil {
		b.WriteString(s.T.Val)
	}
	for _, r := range s.R {
		if r.T != nil {
			b.WriteString(r.T.Val)
		}
	}
	return unescape(b.String())
}

// sharedStrings reads xl/sharedStrings.xml (none when absent).
func (w workbook) sharedStrings() ([]string, error) {
	var sst struct {
		SI []stringItem `xml:"si"`
	}
	if err := w.decode("xl/sharedStrings.xml", &sst); err != nil {
		return nil, err
	}
	out := make([]string, len(sst.SI))
	for i := range sst.SI {
		out[i] = sst.SI[i].String()
	}
	return out, nil
}

// unescape decodes the _xHHHH_ escapes of an OOXML string: _x005F_ is an
// underscore, any other the character of that UTF-16 code unit (none for a
// surrogate).
func unescape(s string) string {
	if !strings.Contains(s, "_x") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if i+7 <= len(s) && s[i] == '_' && s[i+1] == 'x' && s[i+6] == '_' {
			if v, err := strconv.ParseUint(s[i+2:i+6], 16, 16); err == nil { // four hexadecimal digits: no sign, no underscore in base 16
				if v == 0x5F {
					b.WriteByte('_')
				} else if r := rune(v); utf8.ValidRune(r) {
					b.WriteRune(r)
				}
				i += 7
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// cell is a <c> of a worksheet row.
type cell struct {
	R  string      `xml:"r,attr"`
	T  string      `xml:"t,attr"`
	V  string      `xml:"v"`
	F  *struct{}   `xml:"f"`
	IS *stringItem `xml:"is"`
}

// value returns the cell's raw value (sst: the shared strings).
func (c *cell) value(sst []string) string {
	switch c.T {
	case "s":
		if c.V == "" {
			return ""
		}
		i, _ := strconv.Atoi(strings.TrimSpace(c.V)) // as the library reads it: not a number is 0
		if i < 0 || i >= len(sst) {
			return ""
		}
		return sst[i]
	case "inlineStr":
		if c.IS != nil {
			return c.IS.String()
		}
	}
	return c.V // n, b (1 or 0), e, d, str: as stored
}

// readSheet reads the rows of a worksheet part from r: a row is its cells from the
// first column to its last non-empty one (or formula), the gaps empty; the
// rows missing between two rows are empty.
func readSheet(r io.Reader, sst []string, maxRows, maxCells int) ([][]string, error) {
	d := xml.NewDecoder(r)
	var out [][]string
	inData, row := false, 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s", ErrMalformed, reason(err))
		}
		switch el := tok.(type) {
		case xml.StartElement:
			switch {
			case el.Name.Local == "sheetData":
				inData = true
			case inData && el.Name.Local == "row":
				n := row + 1
				for _, a := range el.Attr {
					if a.Name.Local == "r" && a.Name.Space == "" {
						if n, err = strconv.Atoi(a.Value); err != nil || n <= row || n > maxSheetRows {
							return nil, fmt.Errorf("%w: row %d: a row number is not readable or out of order", ErrMalformed, len(out)+1)
						}
					}
				}
				if n > maxRows {
					return nil, fmt.Errorf("%w of %d", ErrTooManyRows, maxRows)
				}
				for len(out) < n-1 {
					out = append(out, []string{})
				}
				cells, err := readRow(d, el, sst, n, maxCells)
				if err != nil {
					return nil, err
				}
				maxCells -= len(cells)
				out, row = append(out, cells), n
			}
		case xml.EndElement:
			if el.Name.Local == "sheetData" {
				return out, nil
			}
		}
	}
}

// readRow reads the cells of the row start opened (row number n), at most
// maxCells of them.
func readRow(d *xml.Decoder, start xml.StartElement, sst []string, n, maxCells int) ([]string, error) {
	cells := []string{}
	col := 0
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: row %d: %s", ErrMalformed, n, reason(err))
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if el.Name.Local != "c" {
				if err := d.Skip(); err != nil {
					return nil, fmt.Errorf("%w: row %d: %s", ErrMalformed, n, reason(err))
				}
				continue
			}
			var c cell
			if err := d.DecodeElement(&c, &el); err != nil {
				return nil, fmt.Errorf("%w: row %d: %s", ErrMalformed, n, reason(err))
			}
			col++
			if c.R != "" {
				if col = column(c.R); col == 0 {
					return nil, fmt.Errorf("%w: row %d: a cell reference is not readable", ErrMalformed, n)
				}
			}
			if v := c.value(sst); v != "" || c.F != nil {
				if max(col, len(cells)+1) > maxCells {
					return nil, fmt.Errorf("%w: row %d", ErrTooManyCells, n)
				}
				for len(cells) < col-1 {
					cells = append(cells, "")
				}
				cells = append(cells, v)
			}
		case xml.EndElement:
			if el.Name == start.Name {
				return cells, nil
			}
		}
	}
}

// column returns the column number (1 for A) of a cell reference such as
// "C12", or 0 when ref is not one (letters, then digits) or names a column
// beyond XFD.
func column(ref string) int {
	letters := len(ref) - len(strings.TrimLeft(ref, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"))
	digits := ref[letters:]
	if letters == 0 || letters > 3 || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0
	}
	col := 0
	for _, c := range ref[:letters] {
		col = col*26 + int(c|0x20-'a') + 1 // lower-case the letter
	}
	if col > maxSheetCols {
		return 0
	}
	return col
}

// reason is a fixed description of a reader failure: the reader's own
// messages may quote the file's content, which never reaches an answer.
func reason(err error) string {
	var se *xml.SyntaxError
	switch {
	case errors.Is(err, zip.ErrFormat), errors.Is(err, zip.ErrChecksum), errors.Is(err, zip.ErrAlgorithm):
		return "the archive is damaged"
	case errors.As(err, &se):
		return "a part is not well-formed XML"
	default:
		return "the workbook is damaged or not a spreadsheet"
	}
}

// Date converts a date cell's raw value (its serial number in the 1900 date
// system, as Read returns it) to YYYY-MM-DD; ok is false when the value is
// not a serial number of a date from 1900-01-01 to 9999-12-31. Serial 60 is
// Excel's 1900-02-29, which did not exist: it gives 1900-02-28, as the
// spreadsheet library does.
func Date(raw string) (date string, ok bool) {
	f, err := strconv.ParseFloat(raw, 64)
	if err != nil || math.IsNaN(f) || f < 1 || f >= 2958466 {
		return "", false
	}
	whole := int(f)
	frac := f - float64(whole)
	var t time.Time
	if whole <= 61 {
		// Before 1900-03-01: the day, and the time of day rounded to the
		// microsecond, which may reach the next day.
		t = time.Date(1899, time.December, 31, 0, 0, 0, 0, time.UTC).AddDate(0, 0, whole)
		if whole >= 60 {
			t = t.AddDate(0, 0, -1)
		}
		if int64(frac*24*60*60*1e9+500) >= 24*60*60*1e9 {
			t = t.AddDate(0, 0, 1)
		}
	} else {
		// The day after 1899-12-30, and the time of day rounded to the second.
		t = time.Date(1899, time.December, 30, 0, 0, 0, 0, time.UTC).AddDate(0, 0, whole).
			Add(time.Duration(float64(24*time.Hour) * (frac + 1e-9)))
		if t.Nanosecond()/1e6 > 500 {
			t = t.Round(time.Second)
		}
	}
	return t.Format(time.DateOnly), true
}
