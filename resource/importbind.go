package resource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/supervaize/supervaizer-go/a2ui"
	"github.com/supervaize/supervaizer-go/contracts"
)

// importFile is an uploaded import, whatever the transport.
type importFile struct {
	format string         // "csv" or what the caller named
	data   []byte         // the file bytes
	fields map[string]any // contextual field values
}

// importOutcome is the effect and job state of an applied import.
type importOutcome struct {
	effect   contracts.Effect
	jobState *contracts.JobState
}

// checkImportDocument validates the ResourceImport document of resource id
// and returns a copy the SDK keeps.
func checkImportDocument(id string, doc *a2ui.ResourceImport) (*contracts.ResourceImportDocument, error) {
	if doc == nil {
		return nil, errors.New("an Import handler is set without ImportDocument (the ResourceImport document whose columns rows are checked against)")
	}
	if err := doc.Validate(); err != nil {
		return nil, fmt.Errorf("ImportDocument: %w", err)
	}
	if doc.Resource != id {
		return nil, fmt.Errorf("ImportDocument is for resource %q, not %q", doc.Resource, id)
	}
	c := contracts.ResourceImportDocument(*doc)
	if len(c.Columns) == 0 {
		return nil, errors.New("ImportDocument declares no columns: an import checks its rows against them")
	}
	c.Columns = slices.Clone(c.Columns)
	c.Fields = slices.Clone(c.Fields)
	c.AcceptedFormats = slices.Clone(c.AcceptedFormats)
	if c.AcceptedFormats == nil {
		c.AcceptedFormats = contracts.DefaultImportFormats() // as the document is written
	}
	return &c, nil
}

// importFunc returns the type-erased import of resource b: format, size and
// contextual-field checks, the CSV or XLSX checks, decoding into T, then f,
// all or nothing unless b.partial.
func importFunc[T any](b *Binding, f func(context.Context, Context, ImportBatch[T]) (ImportReport[T], error)) func(context.Context, Context, importFile) (*importOutcome, error) {
	return func(ctx context.Context, rc Context, file importFile) (*importOutcome, error) {
		format, oe := checkFormat(file.format, b.importDoc)
		if oe != nil {
			return nil, oe
		}
		if int64(len(file.data)) > b.limits.MaxBytes {
			return nil, tooLarge(fmt.Sprintf("the file is larger than %d bytes", b.limits.MaxBytes))
		}
		if fes := a2ui.ValidateValues(b.importFields, file.fields); len(fes) > 0 {
			errs := make([]contracts.ResultError, len(fes))
			for i, fe := range fes {
				errs[i] = contracts.ResultError{Code: fe.Code, Message: fe.Message, Field: "fields." + fe.Field}
			}
			return nil, &opError{Status: http.StatusUnprocessableEntity, Detail: "Invalid import fields", Errs: errs}
		}
		var parsed *parsed
		if format == contracts.ImportFormatXLSX {
			parsed, oe = parseXLSX(b.importDoc.Columns, file.data, b.limits)
		} else {
			parsed, oe = parseCSV(b.importDoc.Columns, file.data, b.limits.MaxRows)
		}
		if oe != nil {
			return nil, oe
		}
		batch := ImportBatch[T]{Fields: file.fields, Items: make([]T, 0, len(parsed.Rows)), Rows: make([]int, 0, len(parsed.Rows))}
		rowErrs := parsed.Errs
		for i, row := range parsed.Rows {
			// A row passes the resource's declared field rules exactly as a
			// created item does: an import is no way around them.
			if fes := a2ui.ValidateValues(b.fields, row); len(fes) > 0 {
				for _, fe := range fes {
					rowErrs = append(rowErrs, ImportRowError{Row: parsed.Nums[i], Column: fe.Field, Code: fe.Code, Message: fe.Message})
				}
				continue
			}
			item, err := decodeRow[T](row)
			if err != nil {
				rowErrs = append(rowErrs, ImportRowError{Row: parsed.Nums[i], Code: ImportCodeType, Message: "cannot be decoded into the item type"})
				continue
			}
			batch.Items = append(batch.Items, item)
			batch.Rows = append(batch.Rows, parsed.Nums[i])
		}
		slices.SortStableFunc(rowErrs, func(x, y ImportRowError) int { return x.Row - y.Row })
		if len(rowErrs) > 0 && !b.partial {
			return nil, rejected(rowErrs, parsed.More)
		}
		if len(rowErrs) > 0 {
			batch.Errors = rowErrs
		}
		rep, err := f(ctx, rc, batch)
		if err != nil {
			return nil, err
		}
		items, err := itemsToObjects(rep.Items)
		if err != nil {
			return nil, err
		}
		count := rep.Count
		if count == 0 {
			count = len(rep.Items)
		}
		all := append(slices.Clip(batch.Errors), rep.Errors...)
		return &importOutcome{jobState: rep.JobState, effect: contracts.Effect{
			Type: effectResourceImported, Resource: b.def.ID, JobID: rep.JobID, Count: &count,
			Items: items, Errors: rowErrorObjects(all, parsed.More), Gaps: rep.Gaps, Summary: rep.Summary, Case: rep.Case,
		}}, nil
	}
}

// decodeRow decodes a checked row into T through its JSON form.
func decodeRow[T any](row map[string]any) (T, error) {
	var item T
	raw, err := json.Marshal(row)
	if err != nil {
		return item, err
	}
	err = json.Unmarshal(raw, &item)
	return item, err
}
