//go:build !telemetry

package main

import (
	"context"
	"fmt"
	"log/slog"
)

// startTelemetry of the build without the telemetry tag (go build, make run
// when no telemetry is configured): the OpenTelemetry exporters, and the gRPC
// and protobuf packages they bring, are not compiled in, so a run that asks
// for telemetry stops and says which build has it.
func startTelemetry(context.Context, *telemetry, string, bool, bool, *slog.Logger) error {
	return fmt.Errorf("%s and %s need the OpenTelemetry exporters, which this build leaves out: "+
		"build with -tags telemetry (make run does when either is set)", envMetricsAddr, envOTLPEndpoint)
}
