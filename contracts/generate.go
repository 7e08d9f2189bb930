package contracts

// The published schema, schema/supervaizer-v2.schema.json, is written from
// Schema() by TestPublishedSchema, which fails while the committed file differs;
// the encoding of each typed document's example, testdata/documents/<type>.want.json,
// by TestDocumentExamples. Regenerate them after changing a declaration or
// adding a document to the registry with `go generate ./contracts`.
//go:generate env SUPERVAIZER_UPDATE_GOLDEN=1 go test -run ^(TestPublishedSchema|TestDocumentExamples)$ .
