package contracts

// The published schema, schema/supervaizer-v2.schema.json, is written from
// Schema() by TestPublishedSchema, which fails while the committed file differs.
// Regenerate it after changing a declaration with `go generate ./contracts`.
//go:generate env SUPERVAIZER_UPDATE_GOLDEN=1 go test -run TestPublishedSchema .
