// Package xlsxtest makes and reads XLSX workbooks with
// github.com/xuri/excelize/v2, for tests: the real workbooks the tests of
// imports upload, and the library's reading of them, which the reader of
// package xlsx is held to. Only tests import it, so that the library is
// linked into no program (its initialization alone keeps 1.3 MB live).
package xlsxtest

import (
	"bytes"
	"errors"
	"time"

	"github.com/xuri/excelize/v2"
)

// Build writes rows, from A1 of a sheet named Sheet1, as an XLSX workbook.
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
	return bytesOf(f)
}

// BuildCells writes the cells given by reference ("A1", "XFD40") to a sheet
// named Sheet1, as an XLSX workbook.
func BuildCells(cells map[string]any) ([]byte, error) {
	f := excelize.NewFile()
	defer f.Close()
	for ref, v := range cells {
		if err := f.SetCellValue("Sheet1", ref, v); err != nil {
			return nil, err
		}
	}
	return bytesOf(f)
}

// bytesOf returns the XLSX file of workbook f.
func bytesOf(f *excelize.File) ([]byte, error) {
	buf, err := f.WriteToBuffer()
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Read returns the library's reading of the first worksheet of data (in the
// order of the workbook's sheet list): each row's raw cell values, as
// package xlsx documents them.
func Read(data []byte, maxUnzipped int64) ([][]string, error) {
	wb, err := excelize.OpenReader(bytes.NewReader(data), excelize.Options{
		UnzipSizeLimit: maxUnzipped, UnzipXMLSizeLimit: maxUnzipped, RawCellValue: true,
	})
	if err != nil {
		return nil, err
	}
	defer wb.Close()
	sheets := wb.GetSheetList()
	if len(sheets) == 0 {
		return nil, errors.New("xlsxtest: the workbook has no worksheet")
	}
	rows, err := wb.Rows(sheets[0])
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		cells, err := rows.Columns(excelize.Options{RawCellValue: true})
		if err != nil {
			return nil, err
		}
		out = append(out, cells)
	}
	return out, rows.Error()
}

// Date returns the library's date (YYYY-MM-DD) of a serial number in the
// 1900 date system, and whether it has one.
func Date(serial float64) (string, bool) {
	t, err := excelize.ExcelDateToTime(serial, false)
	if err != nil {
		return "", false
	}
	return t.Format(time.DateOnly), true
}
