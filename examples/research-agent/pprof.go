//go:build pprof

package main

import (
	"fmt"
	"os"

	"github.com/supervaize/supervaizer-go/internal/tools/pprofserve"
)

// A pprof build (go build -tags pprof) serves net/http/pprof on the
// loopback address RESEARCH_AGENT_PPROF_ADDR names, on a listener of its
// own, and writes "pprof: serving profiles on http://HOST:PORT/debug/pprof/"
// to standard error: the load check profiles the agent under load with it
// (go run ./internal/tools/loadcheck -profile DIR). It is a development
// build: without the tag none of this is compiled, and nothing here touches
// the agent's own server.

// envPprofAddr is the host:port the profiles are served on (port 0: a free
// one, which the line above names); its host must be a loopback IP address.
// Unset: nothing is served.
const envPprofAddr = "RESEARCH_AGENT_PPROF_ADDR"

func init() {
	addr := os.Getenv(envPprofAddr)
	if addr == "" {
		return
	}
	if err := pprofserve.Serve(addr, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "research-agent: %s=%q: %v\n", envPprofAddr, addr, err)
		os.Exit(2)
	}
}
