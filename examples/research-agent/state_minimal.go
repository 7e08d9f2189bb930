//go:build minimal

package main

import (
	"fmt"
	"log/slog"

	"github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/store"
)

// openDatabase of the minimal build (go build -tags minimal, make run): the
// PostgreSQL driver is not compiled in, so a run given a database stops and
// says which build has it.
func openDatabase(config, *slog.Logger) (store.Store, supervaizer.Option, func() error, error) {
	return nil, nil, nil, fmt.Errorf("%s needs the PostgreSQL store, which this build (-tags minimal, as make run builds) leaves out: "+
		"build without -tags minimal", supervaizer.EnvDatabaseURL)
}
