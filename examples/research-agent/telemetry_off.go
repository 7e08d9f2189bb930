//go:build minimal

package main

import (
	"context"
	"fmt"
	"log/slog"
)

// startTelemetry of the minimal build (go build -tags minimal, make run):
// no OpenTelemetry is compiled in, so a run that asks for telemetry stops
// and says which build has it.
func startTelemetry(context.Context, *telemetry, string, bool, bool, *slog.Logger) error {
	return fmt.Errorf("%s and %s need OpenTelemetry, which this build (-tags minimal, as make run builds) leaves out: "+
		"build without -tags minimal", envMetricsAddr, envOTLPEndpoint)
}
