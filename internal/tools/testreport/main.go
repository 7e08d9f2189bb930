// Command testreport reads the output of go test -json on its standard input
// and prints a short report: one line per package, the output of every test
// that failed, and the tests that did not run (skipped), each with its reason.
// It exits with status 1 when a test or a package failed, or when the input
// holds no test event at all. make test pipes every module's tests through it.
//
// With -summary FILE it also appends the list of the tests that did not run to
// FILE, so that make test can end with every module's list.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

func main() {
	// A flag set of its own: nothing is registered on the process-wide
	// flag.CommandLine.
	fs := flag.NewFlagSet("testreport", flag.ExitOnError)
	summary := fs.String("summary", "", "append the list of the tests that did not run to this file")
	_ = fs.Parse(os.Args[1:]) // ExitOnError: a bad flag exits with status 2
	var out strings.Builder
	ok, err := report(os.Stdin, io.MultiWriter(os.Stdout, &out))
	if err == nil && *summary != "" {
		err = appendSkipped(*summary, out.String())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

// event is one line of go test -json (see go doc test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output and build-fail events name the package here
	Test       string
	Elapsed    float64
	Output     string
}

// key names a test, or a package when Test is empty.
type key struct{ pkg, test string }

// report reads go test -json from r and writes the report to w. ok is false
// when something failed.
func report(r io.Reader, w io.Writer) (ok bool, err error) {
	var (
		output  = map[key][]string{} // output lines, kept until the test ends
		failed  []key
		skipped []key
		reasons = map[key]string{}
		events  int
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// Not an event: the go command's own messages (a build error
			// before any package ran, for example).
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		events++
		if e.Package == "" {
			e.Package = e.ImportPath
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "output", "build-output":
			output[k] = append(output[k], e.Output)
		case "fail", "build-fail":
			failed = append(failed, k)
			if e.Test == "" && e.Action == "fail" {
				fmt.Fprintf(w, "FAIL\t%s\t%.3fs\n", e.Package, e.Elapsed)
			}
		case "skip":
			if e.Test == "" {
				fmt.Fprintf(w, "?   \t%s\t[no test files]\n", e.Package)
			} else {
				skipped = append(skipped, k)
				reasons[k] = skipReason(output[k])
			}
			delete(output, k)
		case "pass":
			if e.Test == "" {
				fmt.Fprintf(w, "ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
			}
			delete(output, k)
		}
	}
	if err := sc.Err(); err != nil {
		return false, err
	}
	for _, k := range failed {
		name := k.pkg
		if k.test != "" {
			name += " " + k.test
		}
		fmt.Fprintf(w, "\n--- FAIL: %s\n%s", name, strings.Join(output[k], ""))
	}
	if len(skipped) > 0 {
		fmt.Fprint(w, "\n"+skippedHeader)
		for _, k := range skipped {
			// A parent whose subtests were all skipped says nothing of its own.
			if reasons[k] == "" && slices.ContainsFunc(skipped, func(o key) bool {
				return o.pkg == k.pkg && strings.HasPrefix(o.test, k.test+"/")
			}) {
				continue
			}
			fmt.Fprintf(w, "  %s %s: %s\n", k.pkg, k.test, reasons[k])
		}
	}
	if events == 0 {
		fmt.Fprintln(w, "testreport: no test event in the input")
		return false, nil
	}
	return len(failed) == 0, nil
}

// skipReason extracts the message of t.Skip from a skipped test's output.
func skipReason(lines []string) string {
	var msg []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		// t.Skip output starts with "file.go:NN: ".
		if i := strings.Index(t, ".go:"); i >= 0 {
			if j := strings.Index(t[i+4:], ": "); j >= 0 {
				t = t[i+4+j+2:]
			}
		}
		msg = append(msg, t)
	}
	return strings.Join(msg, " ")
}

// skippedHeader starts the list of the tests that did not run in a report.
const skippedHeader = "These tests did not run (skipped):\n"

// appendSkipped appends the list of the tests that did not run, if report
// has one, to the file path.
func appendSkipped(path, report string) error {
	i := strings.Index(report, skippedHeader)
	if i < 0 {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	rest := report[i+len(skippedHeader):]
	if j := strings.Index(rest, "\n\n"); j >= 0 {
		rest = rest[:j+1]
	}
	_, err = f.WriteString(rest)
	return errors.Join(err, f.Close())
}
