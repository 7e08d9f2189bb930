//go:build conformance

package cardcheck

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func init() { publishedValidators = loadPublished }

// loadPublished compiles #/definitions/AgentCard of the published schema of
// every version in Versions, read from the folder dir.
func loadPublished(dir string) ([]Validator, error) {
	dir = strings.TrimSpace(dir)
	if dir == "" {
		return nil, fmt.Errorf("cardcheck: %s must name the folder of the published A2A JSON Schemas in a build with the conformance tag (make conformance sets it)", EnvSchemas)
	}
	out := make([]Validator, 0, len(Versions))
	for _, version := range Versions {
		path := filepath.Join(dir, "a2a-"+version+".schema.json")
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("cardcheck: the published A2A %s JSON Schema is required (%s): %w", version, EnvSchemas, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("cardcheck: decode %s: %w", path, err)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource(path, doc); err != nil {
			return nil, fmt.Errorf("cardcheck: add %s: %w", path, err)
		}
		sch, err := c.Compile(path + "#/definitions/AgentCard")
		if err != nil {
			return nil, fmt.Errorf("cardcheck: compile %s#/definitions/AgentCard: %w", path, err)
		}
		out = append(out, Validator{Name: "published A2A " + version + " JSON Schema", Validate: func(card []byte) error {
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(card))
			if err != nil {
				return err
			}
			var verr *jsonschema.ValidationError
			if err := sch.Validate(inst); errors.As(err, &verr) {
				return fmt.Errorf("not a valid AgentCard of the published A2A %s JSON Schema:\n%v", version, verr)
			} else if err != nil {
				return err
			}
			return nil
		}})
	}
	return out, nil
}
