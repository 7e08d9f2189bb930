package resource

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/supervaize/supervaizer-go/contracts"
	"github.com/supervaize/supervaizer-go/internal/xlsx"
)

// Imports (resource.<id>.import and POST …/data/<name>/import/) are
// described at ImportBatch.

// Defaults of [ImportLimits].
const (
	DefaultImportMaxBytes = 5 << 20 // 5 MiB
	DefaultImportMaxRows  = 10_000
	// DefaultImportMaxUnzippedBytes bounds the unzipped size of an XLSX file:
	// a spreadsheet's XML is commonly 5 to 20 times its zipped size.
	DefaultImportMaxUnzippedBytes = 64 << 20 // 64 MiB
)

// maxReportedRowErrors bounds the row errors listed in one answer; the rest
// are counted in a final too_many_errors entry.
const maxReportedRowErrors = 1000

// Codes of an [ImportRowError].
const (
	ImportCodeRequired      = "required"         // an empty cell in a required column
	ImportCodeType          = "type"             // a cell that is not of the column type
	ImportCodeFieldCount    = "field_count"      // a row with more or fewer cells than the header
	ImportCodeMissingColumn = "missing_column"   // a required column absent from the header (row 0)
	ImportCodeDuplicate     = "duplicate_column" // a column named twice in the header (row 0)
	ImportCodeMalformed     = "malformed_csv"    // the CSV cannot be parsed from this row on
	ImportCodeMalformedXLSX = "malformed_xlsx"   // the XLSX file is not a readable workbook (row 0)
	ImportCodeEncoding      = "encoding"         // the file is not UTF-8 (row 0)
	ImportCodeEmpty         = "empty_file"       // no header row (row 0)
	ImportCodeTooManyErrors = "too_many_errors"  // more row errors than are listed (row 0)
)

// ImportLimits bounds an uploaded import file. A zero field takes its
// default. On POST /a2a the content also travels inside the JSON-RPC body,
// bounded by supervaizer.WithMaxBodyBytes (base64 content is a third larger than the
// file).
type ImportLimits struct {
	MaxBytes int64 // largest file, in bytes; default DefaultImportMaxBytes
	MaxRows  int   // most data rows; default DefaultImportMaxRows
	// MaxUnzippedBytes bounds what an XLSX file (a zip archive) unzips to;
	// default DefaultImportMaxUnzippedBytes.
	MaxUnzippedBytes int64
}

// Resolved fills the defaults; negative limits are a setup error.
func (l ImportLimits) resolved() (ImportLimits, error) {
	if l.MaxBytes < 0 || l.MaxRows < 0 || l.MaxUnzippedBytes < 0 {
		return l, fmt.Errorf("ImportLimits must not be negative (MaxBytes %d, MaxRows %d, MaxUnzippedBytes %d)", l.MaxBytes, l.MaxRows, l.MaxUnzippedBytes)
	}
	if l.MaxUnzippedBytes == 0 {
		l.MaxUnzippedBytes = DefaultImportMaxUnzippedBytes
	}
	if l.MaxBytes == 0 {
		l.MaxBytes = DefaultImportMaxBytes
	}
	if l.MaxRows == 0 {
		l.MaxRows = DefaultImportMaxRows
	}
	return l, nil
}

// ImportRowError is one problem of an imported file. Row is the 1-based data
// row (header excluded), 0 for the file as a whole; Column is the column id,
// when one is concerned. Message never quotes the cell.
type ImportRowError struct {
	Row     int    `json:"row"`
	Column  string `json:"column,omitempty"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error returns "row N, column C: message".
func (e ImportRowError) Error() string {
	s := "row " + strconv.Itoa(e.Row)
	if e.Column != "" {
		s += ", column " + e.Column
	}
	return s + ": " + e.Message
}

// ImportBatch is the checked content of an import, handed to Handlers.Import.
//
// An import reads a CSV or XLSX file and checks it against the columns of
// the resource's ResourceImport document before any author code sees a row.
// A format the document's accepted_formats does not list is answered with
// [contracts.ErrorUnsupportedImportFormat] (HTTP 415). On POST /a2a the
// input is
//
//	{"format"?: "csv"|"xlsx", "content": string, "encoding"?: "text"|"base64", "fields"?: object}
//
// where content is the file itself (encoding "text", the default) or its
// base64 (standard alphabet, padding optional; an XLSX file is binary, so
// base64) and fields holds the values of the document's contextual fields; on
// the REST route the body is the file (Content-Type text/csv, or
// application/vnd.openxmlformats-officedocument.spreadsheetml.sheet for
// XLSX) and the fields are query parameters.
//
// An XLSX file is read from its first worksheet, its first row the header,
// with the same checks as a CSV file: the upload within MaxBytes, what it
// unzips to within MaxUnzippedBytes (checked before anything is inflated, so
// a zip bomb is refused with [contracts.ErrorImportTooLarge]), at most
// MaxRows data rows, and at most 256 cells a row on average (MaxRows + 1
// rows × 256 cells in all, the empty cells before a row's last one
// included: a cell at column XFD, written in a few bytes, makes its row hold
// 16,384; past that, [contracts.ErrorImportTooLarge]). Cells are read as stored, not as displayed: numbers
// unrounded, booleans as 1/0, and a date cell in a date column as
// YYYY-MM-DD. A row may end before the header does (empty trailing cells).
//
// Every row that passes the column checks is then checked against the
// resource's declared fields exactly as create checks one item (required,
// types, lengths, pattern, bounds, options); a failed rule is a row error
// whose column is the field and whose code is the rule (for example
// "max_length" or "pattern"). A rule no row may bypass is thus declared once,
// on the resource.
//
// The file: UTF-8 text (a leading byte-order mark is ignored), CSV as
// encoding/csv reads it, a header row first. A header cell names a column by
// its id or, ignoring case, by its id or label; other header cells are
// ignored. Cells are trimmed; an empty cell is an absent value; records whose
// cells are all empty are skipped. Cell types: string (the default, and any
// type the SDK does not check), integer (base 10, 64-bit), number (decimal,
// finite), boolean (true/false, yes/no, 1/0, any case), date (YYYY-MM-DD).
// Sizes are bounded by [ImportLimits].
//
// Row numbers are 1-based data rows: row 1 is the first record after the
// header, and every record counts, including the skipped all-empty ones (for
// a spreadsheet export, data row n is sheet row n+1). An empty line is not a
// record (encoding/csv skips it), so it is not counted. Row 0 is the file as
// a whole (header, encoding, size).
//
// By default an import is all or nothing: any row error answers a status
// "error" result (HTTP 422) with [contracts.ErrorImportRejected] then one entry per row
// error (code, "row N, column C: message", field = column, row), and Import
// is not called. With Handlers.PartialImport, Import receives the rows that
// passed and the others' errors in Errors. File errors (encoding, header,
// missing required column, malformed CSV, size) always refuse the whole file.
type ImportBatch[T any] struct {
	Items  []T            // the rows that passed the checks, decoded, in file order
	Rows   []int          // Rows[i] is the data row number of Items[i]
	Fields map[string]any // the values of the document's contextual fields, checked
	// Errors lists the rows left out; set only with Handlers.PartialImport.
	Errors []ImportRowError
}

// ImportReport is what Handlers.Import returns; it becomes the
// resource.imported effect.
type ImportReport[T any] struct {
	Items   []T              // the items created or updated, echoed to Studio
	Count   int              // items imported; 0 means len(Items)
	Errors  []ImportRowError // rows the agent refused on business rules
	Gaps    []map[string]any // what the import could not fill (agent vocabulary)
	Summary map[string]any   // free-form summary Studio shows
	JobID   string           // the job the import changed, if any
	Case    map[string]any   // the case the import created or changed, if any
	// JobState is returned as the result's top-level job_state when the import
	// changed an existing job; Studio treats it like a job.sync result.
	JobState *contracts.JobState
}

// checkFormat returns the import's format, "csv" when none is given, or
// refuses one the document does not accept (HTTP 415).
func checkFormat(format string, doc *contracts.ResourceImportDocument) (string, *opError) {
	f := strings.ToLower(strings.TrimSpace(format))
	if f == "" {
		f = contracts.ImportFormatCSV
	}
	if !slices.Contains(doc.AcceptedFormats, f) {
		return "", unsupportedFormat(fmt.Sprintf("unsupported import format: this import accepts %s",
			strings.Join(doc.AcceptedFormats, " or ")))
	}
	return f, nil
}

// unsupportedFormat refuses a file of a format the import does not accept
// (HTTP 415).
func unsupportedFormat(msg string) *opError {
	return &opError{Status: http.StatusUnsupportedMediaType, Detail: msg,
		Errs: []contracts.ResultError{{Code: contracts.ErrorUnsupportedImportFormat, Message: msg}}}
}

// tooLarge refuses a file over the size limit (HTTP 413).
func tooLarge(msg string) *opError {
	return &opError{Status: http.StatusRequestEntityTooLarge, Detail: "Import file too large: " + msg,
		Errs: []contracts.ResultError{{Code: contracts.ErrorImportTooLarge, Message: msg}}}
}

// rejected is the all-or-nothing refusal: one import_rejected entry,
// then each row error (code, "row N: message", field = column, row).
func rejected(rowErrs []ImportRowError, more int) *opError {
	n := len(rowErrs) + more
	detail := fmt.Sprintf("Import rejected: %d row error(s), nothing was applied", n)
	errs := []contracts.ResultError{{Code: contracts.ErrorImportRejected, Message: detail}}
	for _, e := range rowErrs {
		errs = append(errs, rowResultError(e))
	}
	if more > 0 {
		errs = append(errs, rowResultError(tooManyErrors(more)))
	}
	return &opError{Status: http.StatusUnprocessableEntity, Detail: detail, Errs: errs}
}

func tooManyErrors(more int) ImportRowError {
	return ImportRowError{Code: ImportCodeTooManyErrors, Message: fmt.Sprintf("%d more row error(s) not listed", more)}
}

func rowResultError(e ImportRowError) contracts.ResultError {
	return contracts.ResultError{Code: e.Code, Message: e.Error(), Field: e.Column,
		Extra: contracts.Extra{"row": json.RawMessage(strconv.Itoa(e.Row))}}
}

// rowErrorObjects returns the row errors as the objects of an effect's errors.
func rowErrorObjects(errs []ImportRowError, more int) []map[string]any {
	if more > 0 {
		errs = append(slices.Clip(errs), tooManyErrors(more))
	}
	out := make([]map[string]any, len(errs))
	for i, e := range errs {
		m := map[string]any{"row": e.Row, "code": e.Code, "message": e.Message}
		if e.Column != "" {
			m["column"] = e.Column
		}
		out[i] = m
	}
	return out
}

// parsed is a CSV file checked against the columns.
type parsed struct {
	Rows []map[string]any // the rows that passed, keyed by column id
	Nums []int            // their data row numbers
	Errs []ImportRowError // row errors, at most maxReportedRowErrors
	More int              // row errors beyond those listed
}

func (p *parsed) add(e ImportRowError) {
	if len(p.Errs) < maxReportedRowErrors {
		p.Errs = append(p.Errs, e)
	} else {
		p.More++
	}
}

// fileError is a refusal of the whole file (row 0 or a malformed row),
// whatever the partial-import setting.
func fileError(errs ...ImportRowError) *opError { return rejected(errs, 0) }

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// parseCSV checks data against columns: header, then every row. File
// problems (encoding, header, missing required columns, malformed CSV, too
// many rows) are an *opError; row problems are listed in the result.
func parseCSV(columns []contracts.ImportColumn, data []byte, maxRows int) (*parsed, *opError) {
	if !utf8.Valid(data) {
		return nil, fileError(ImportRowError{Code: ImportCodeEncoding, Message: "the file is not UTF-8 text"})
	}
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, utf8BOM)))
	r.FieldsPerRecord = -1 // checked per row, to report the row instead of stopping
	r.ReuseRecord = true
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, fileError(ImportRowError{Code: ImportCodeEmpty, Message: "the file has no header row"})
	}
	if err != nil {
		return nil, fileError(ImportRowError{Code: ImportCodeMalformed, Message: "the header row is not valid CSV: " + csvReason(err)})
	}
	return checkRecords(columns, header, maxRows, false, nil, func(n int) ([]string, *opError) {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		if err != nil {
			return nil, fileError(ImportRowError{Row: n, Code: ImportCodeMalformed, Message: "not valid CSV: " + csvReason(err)})
		}
		return rec, nil
	})
}

// parseXLSX checks the first worksheet of an XLSX file against columns, as
// parseCSV a CSV file; the workbook is bounded by lim before it is read.
func parseXLSX(columns []contracts.ImportColumn, data []byte, lim ImportLimits) (*parsed, *opError) {
	maxCells := (lim.MaxRows + 1) * xlsx.DefaultCellsPerRow
	rows, err := xlsx.Read(data, xlsx.Limits{MaxUnzippedBytes: lim.MaxUnzippedBytes, MaxRows: lim.MaxRows + 1, MaxCells: maxCells})
	switch {
	case errors.Is(err, xlsx.ErrTooLarge):
		return nil, tooLarge(fmt.Sprintf("the XLSX file unzips to more than %d bytes", lim.MaxUnzippedBytes))
	case errors.Is(err, xlsx.ErrTooManyCells):
		// A cell far right makes its row hold every empty cell before it.
		return nil, tooLarge(fmt.Sprintf("the XLSX file's first worksheet holds more than %d cells (%d a row on average, the empty ones before a row's last cell included)",
			maxCells, xlsx.DefaultCellsPerRow))
	case errors.Is(err, xlsx.ErrTooManyRows):
		return nil, tooLarge(fmt.Sprintf("the file has more than %d data rows", lim.MaxRows))
	case err != nil:
		return nil, fileError(ImportRowError{Code: ImportCodeMalformedXLSX, Message: "not a readable XLSX file"})
	case len(rows) == 0:
		return nil, fileError(ImportRowError{Code: ImportCodeEmpty, Message: "the file has no header row"})
	}
	for _, row := range rows {
		for _, cell := range row {
			if !utf8.ValidString(cell) {
				return nil, fileError(ImportRowError{Code: ImportCodeEncoding, Message: "the file holds text that is not UTF-8"})
			}
		}
	}
	return checkRecords(columns, rows[0], lim.MaxRows, true, xlsx.Date, func(n int) ([]string, *opError) {
		if n >= len(rows) {
			return nil, nil
		}
		return append([]string{}, rows[n]...), nil // an empty row is no end
	})
}

// checkRecords checks the records next returns (data row n, nil at the end)
// against columns, header first. ragged (XLSX) lets a row end before the
// header, its missing cells empty; date, when set, converts a date column's
// cell that is a spreadsheet serial number.
func checkRecords(columns []contracts.ImportColumn, header []string, maxRows int, ragged bool,
	date func(string) (string, bool), next func(n int) ([]string, *opError)) (*parsed, *opError) {
	pos, oe := mapHeader(columns, header)
	if oe != nil {
		return nil, oe
	}
	width := len(header)
	p := &parsed{}
	for n := 1; ; n++ {
		rec, oe := next(n)
		if oe != nil {
			return nil, oe
		}
		if rec == nil {
			break
		}
		if n > maxRows {
			return nil, tooLarge(fmt.Sprintf("the file has more than %d data rows", maxRows))
		}
		if blankRecord(rec) {
			continue
		}
		if !ragged && len(rec) != width {
			p.add(ImportRowError{Row: n, Code: ImportCodeFieldCount, Message: fmt.Sprintf("has %d cells, the header has %d", len(rec), width)})
			continue
		}
		row, ok := make(map[string]any, len(columns)), true
		for i, col := range columns {
			at := pos[i]
			if at < 0 {
				continue
			}
			cell := ""
			if at < len(rec) {
				cell = strings.TrimSpace(rec[at])
			}
			if cell == "" {
				if col.Required {
					p.add(ImportRowError{Row: n, Column: col.ID, Code: ImportCodeRequired, Message: "is required"})
					ok = false
				}
				continue
			}
			if date != nil && col.Type == contracts.FieldDate {
				if d, isSerial := date(cell); isSerial {
					cell = d
				}
			}
			v, msg := convertCell(col.Type, cell)
			if msg != "" {
				p.add(ImportRowError{Row: n, Column: col.ID, Code: ImportCodeType, Message: msg})
				ok = false
				continue
			}
			row[col.ID] = v
		}
		if ok {
			p.Rows = append(p.Rows, row)
			p.Nums = append(p.Nums, n)
		}
	}
	return p, nil
}

// mapHeader returns, for each column, the index of its header cell (-1 when
// absent). A cell names a column by exact id, else by id or label ignoring
// case. Missing required columns and columns named twice refuse the file.
func mapHeader(columns []contracts.ImportColumn, header []string) ([]int, *opError) {
	pos := make([]int, len(columns))
	for i := range pos {
		pos[i] = -1
	}
	var errs []ImportRowError
	for h, cell := range header {
		cell = strings.TrimSpace(cell)
		if cell == "" {
			continue
		}
		i := slices.IndexFunc(columns, func(c contracts.ImportColumn) bool { return c.ID == cell })
		if i < 0 {
			i = slices.IndexFunc(columns, func(c contracts.ImportColumn) bool {
				return strings.EqualFold(c.ID, cell) || (c.Label != "" && strings.EqualFold(strings.TrimSpace(c.Label), cell))
			})
		}
		if i < 0 {
			continue // a column the document does not declare: ignored
		}
		if pos[i] >= 0 {
			errs = append(errs, ImportRowError{Column: columns[i].ID, Code: ImportCodeDuplicate, Message: "the header names this column twice"})
			continue
		}
		pos[i] = h
	}
	for i, c := range columns {
		if c.Required && pos[i] < 0 {
			errs = append(errs, ImportRowError{Column: c.ID, Code: ImportCodeMissingColumn, Message: "required column missing from the header"})
		}
	}
	if len(errs) > 0 {
		return nil, fileError(errs...)
	}
	return pos, nil
}

func blankRecord(rec []string) bool {
	for _, c := range rec {
		if strings.TrimSpace(c) != "" {
			return false
		}
	}
	return true
}

// csvReason is the parse failure without its position (rows are numbered
// by the caller) and without any cell content.
func csvReason(err error) string {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return "unreadable"
}

// convertCell converts a trimmed, non-empty cell to the column type. It
// returns the value, or a message when the cell is not of the type.
func convertCell(typ, s string) (any, string) {
	switch typ {
	case contracts.FieldInteger:
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, "must be an integer"
		}
		return v, ""
	case contracts.FieldNumber:
		if !decimalNumber(s) {
			return nil, "must be a number"
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(v, 0) {
			return nil, "must be a finite number"
		}
		return v, ""
	case contracts.FieldBoolean:
		switch strings.ToLower(s) {
		case "true", "yes", "1":
			return true, ""
		case "false", "no", "0":
			return false, ""
		}
		return nil, "must be true or false"
	case contracts.FieldDate:
		if _, err := time.Parse(time.DateOnly, s); err != nil || len(s) != len(time.DateOnly) {
			return nil, "must be a date (YYYY-MM-DD)"
		}
		return s, ""
	}
	return s, ""
}

// decimalNumber reports whether s is [+-]digits[.digits][e[+-]digits] with at
// least one digit before the exponent: no hexadecimal, no Inf or NaN, no
// digit separators, which strconv.ParseFloat would accept.
func decimalNumber(s string) bool {
	i, n := 0, len(s)
	if i < n && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for ; i < n && s[i] >= '0' && s[i] <= '9'; i++ {
		digits++
	}
	if i < n && s[i] == '.' {
		for i++; i < n && s[i] >= '0' && s[i] <= '9'; i++ {
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i < n && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < n && (s[i] == '+' || s[i] == '-') {
			i++
		}
		exp := 0
		for ; i < n && s[i] >= '0' && s[i] <= '9'; i++ {
			exp++
		}
		if exp == 0 {
			return false
		}
	}
	return i == n
}

// opError is a refusal of a resource or dataset call, with its HTTP status
// on the DataResource routes and the errors of its status "error" result.
type opError struct {
	Status int
	Detail string
	Errs   []contracts.ResultError
}

func (e *opError) Error() string { return e.Detail }

// result is the status "error" result of the refusal.
func (e *opError) result() *contracts.ActionResult {
	return &contracts.ActionResult{Status: contracts.StatusError, Effects: []contracts.Effect{}, Errors: slices.Clone(e.Errs)}
}

// body is the JSON body of the refusal on the DataResource routes.
func (e *opError) body() map[string]any {
	return map[string]any{"detail": e.Detail, "errors": e.Errs}
}
