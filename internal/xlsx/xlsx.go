// Package xlsx reads the first worksheet of an XLSX workbook as rows of text
// cells, within bounds, for resource imports. It is the only importer of
// github.com/xuri/excelize/v2 in the module, so that the reader can be
// replaced in one place.
//
// A workbook is a zip archive: its declared uncompressed size is checked
// against the limit before anything is unzipped (archive/zip refuses an entry
// that inflates beyond its declared size), so a zip bomb is refused without
// being inflated, and every part is kept in memory (never in temporary
// files). Rows are read one at a time and the reading stops past the row
// limit.
package xlsx

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/xuri/excelize/v2"
)

// Errors of [Read], matched with errors.Is.
var (
	ErrTooLarge    = errors.New("xlsx: the workbook unzips to more than the limit")
	ErrTooManyRows = errors.New("xlsx: the worksheet has more rows than the limit")
	ErrMalformed   = errors.New("xlsx: not a readable XLSX workbook")
)

// Limits bound a workbook. Both must be positive.
type Limits struct {
	MaxUnzippedBytes int64 // total uncompressed size of the archive's parts
	MaxRows          int   // rows of the first worksheet, header included
}

// Read returns the rows of the workbook's first worksheet (in the order of
// the workbook's sheet list), each as its cells' raw values: text as
// written, numbers as stored (no display format applied), booleans as 1 or
// 0, dates as their serial number (see [Date]). Trailing empty cells of a row
// are absent; an empty row between two rows is an empty slice. Errors wrap
// ErrTooLarge, ErrTooManyRows or ErrMalformed and never quote a cell.
func Read(data []byte, lim Limits) ([][]string, error) {
	if lim.MaxUnzippedBytes <= 0 || lim.MaxRows <= 0 {
		return nil, fmt.Errorf("xlsx: invalid limits %+v", lim)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("%w: not a zip archive", ErrMalformed)
	}
	var total uint64
	for _, f := range zr.File {
		total += f.UncompressedSize64
		if total > uint64(lim.MaxUnzippedBytes) {
			return nil, fmt.Errorf("%w of %d bytes", ErrTooLarge, lim.MaxUnzippedBytes)
		}
	}
	wb, err := excelize.OpenReader(bytes.NewReader(data), excelize.Options{
		UnzipSizeLimit: lim.MaxUnzippedBytes, UnzipXMLSizeLimit: lim.MaxUnzippedBytes, RawCellValue: true,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrMalformed, reason(err))
	}
	defer wb.Close()
	sheets := wb.GetSheetList()
	if len(sheets) == 0 {
		return nil, fmt.Errorf("%w: the workbook has no worksheet", ErrMalformed)
	}
	rows, err := wb.Rows(sheets[0])
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrMalformed, reason(err))
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		if len(out) == lim.MaxRows {
			return nil, fmt.Errorf("%w of %d", ErrTooManyRows, lim.MaxRows)
		}
		cells, err := rows.Columns(excelize.Options{RawCellValue: true})
		if err != nil {
			return nil, fmt.Errorf("%w: row %d: %s", ErrMalformed, len(out)+1, reason(err))
		}
		out = append(out, cells)
	}
	if err := rows.Error(); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrMalformed, reason(err))
	}
	return out, nil
}

// reason is a fixed description of a reader failure: the reader's own
// messages may quote the file's content, which never reaches an answer.
func reason(err error) string {
	var ne *strconv.NumError
	switch {
	case errors.As(err, &ne):
		return "a number is not readable"
	case errors.Is(err, zip.ErrFormat), errors.Is(err, zip.ErrChecksum), errors.Is(err, zip.ErrAlgorithm):
		return "the archive is damaged"
	default:
		return "the workbook is damaged or not a spreadsheet"
	}
}

// Date converts a date cell's raw value (its serial number in the 1900 date
// system, as Read returns it) to YYYY-MM-DD; ok is false when the value is
// not a serial number.
func Date(raw string) (date string, ok bool) {
	f, err := strconv.ParseFloat(raw, 64)
	if err != nil || f < 1 {
		return "", false
	}
	t, err := excelize.ExcelDateToTime(f, false)
	if err != nil {
		return "", false
	}
	return t.Format(time.DateOnly), true
}

// Build writes rows, from A1 of a sheet named Sheet1, as an XLSX workbook:
// the files the tests of imports upload are real workbooks made by the same
// library.
func Build(rows [][]any) ([]byte, error) {
	f := excelize.NewFile()
	defer f.Close()
	for i, row := range rows {
		cell, err := excelize.CoordinatesToCellName(1, i+1)
		if err != nil {
			return nil, err
		}
		if err := f.SetSheetRow("Sheet1", cell, &row); err != nil {
			return nil, err
		}
	}
	buf, err := f.WriteToBuffer()
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
