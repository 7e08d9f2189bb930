package a2a_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/a2a"
)

var update = flag.Bool("update", false, "rewrite golden files")

// A2A schema files, read from <repo root>/../shared/schemas/a2a (never copied
// into the repository).
const (
	schema026 = "a2a-0.2.6.schema.json"
	schema030 = "a2a-0.3.0.schema.json"
)

var schemaFiles = []string{schema026, schema030}

// loadCardSchemas compiles #/definitions/AgentCard of both A2A schema files once.
var loadCardSchemas = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, "..", "shared", "schemas", "a2a")
	out := make(map[string]*jsonschema.Schema, len(schemaFiles))
	for _, name := range schemaFiles {
		path := filepath.Join(dir, name)
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("A2A JSON Schema %s is required by the tests (expected at ../shared/schemas/a2a beside the repository root): %w", path, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("decode %s: %w", path, err)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource(path, doc); err != nil {
			return nil, fmt.Errorf("add %s: %w", path, err)
		}
		sch, err := c.Compile(path + "#/definitions/AgentCard")
		if err != nil {
			return nil, fmt.Errorf("compile %s#/definitions/AgentCard: %w", path, err)
		}
		out[name] = sch
	}
	return out, nil
})

// cardSchemas returns the compiled AgentCard schemas by file name; a missing
// schema file fails the test.
func cardSchemas(tb testing.TB) map[string]*jsonschema.Schema {
	tb.Helper()
	schemas, err := loadCardSchemas()
	require.NoError(tb, err)
	return schemas
}

// repoRoot walks up from the working directory to the directory holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// validate validates the JSON document b against sch, decoding numbers as json.Number.
func validate(sch *jsonschema.Schema, b []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	return sch.Validate(inst)
}

// golden compares got with the golden file at path, or rewrites it under -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		var out bytes.Buffer
		require.NoError(t, json.Indent(&out, got, "", "  "))
		out.WriteByte('\n')
		require.NoError(t, os.WriteFile(path, out.Bytes(), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden file missing; run go test -update")
	assert.JSONEq(t, string(want), string(got))
}

// researchInput is the card input of the research-agent example: a small
// registration and three actions (labelled and described; labelled only;
// a help action with neither).
func researchInput(tb testing.TB) a2a.CardInput {
	tb.Helper()
	reg, err := os.ReadFile(filepath.Join("testdata", "registration.json"))
	require.NoError(tb, err)
	return a2a.CardInput{
		Name:         "Research Agent",
		Description:  "Turns a question into a sourced brief.",
		Version:      "1.0.0",
		Slug:         "research-agent",
		BaseURL:      "https://research.example.com/",
		Registration: reg,
		Actions: []a2a.ActionInfo{
			{ID: "job.start", Label: "Start research", Description: "Starts a research job from a question.", Scope: "job", Mutating: true},
			{ID: "resource.contacts.list", Label: "List contacts", Scope: "workspace"},
			{ID: "setup.goal.suggest", Scope: "mission", Kind: a2a.KindHelp},
		},
		CustomMethods: []string{"summarize"},
	}
}

// mustCard builds a card or fails the test.
func mustCard(tb testing.TB, in a2a.CardInput) (*a2a.AgentCard, []byte) {
	tb.Helper()
	card, err := a2a.NewAgentCard(in)
	require.NoError(tb, err)
	b, err := json.Marshal(card)
	require.NoError(tb, err)
	return card, b
}
