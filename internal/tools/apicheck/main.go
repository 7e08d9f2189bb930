// Command apicheck fails when the exported API of the SDK module changed
// incompatibly since the recorded baseline and CHANGELOG.md does not record
// the change (make apicheck runs it; make apibaseline records the baseline).
//
// It runs golang.org/x/exp/cmd/apidiff (a pinned version, through go run, so
// it is in no go.mod) in module mode against the baseline, which apidiff
// wrote with -m -w: every package of the module but internal ones. apidiff
// names each incompatible change by its symbol: R or (*Server).Start in the
// root package, ./contracts.Validate or ./contracts.Model.New in another one;
// a pointer receiver's (*T) is read as T.
//
// The rule: each symbol reported must appear in the Unreleased section of
// CHANGELOG.md, under its "### Breaking" heading, in backquotes, as apidiff
// names it or by a prefix of it ending before a dot: `Server` records every
// change to Server's fields and methods, `./contracts` every change in
// package contracts.
//
//	go run ./internal/tools/apicheck [-record] [-apidiff version] [-baseline api/supervaizer-go.apidiff] [-changelog CHANGELOG.md]
//
// With -record it writes the baseline instead (make apibaseline, at release
// time, once CHANGELOG.md has its release section).
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
)

// apidiffVersion is the version of golang.org/x/exp/cmd/apidiff run.
const apidiffVersion = "v0.0.0-20261113113407-e3970619a1a4"

func main() {
	// A flag set of its own: the command's flags never reach the global
	// flag.CommandLine that a test binary linking this package would share.
	fs := flag.NewFlagSet("apicheck", flag.ExitOnError)
	version := fs.String("apidiff", apidiffVersion, "version of golang.org/x/exp/cmd/apidiff")
	baseline := fs.String("baseline", "api/supervaizer-go.apidiff", "export data apidiff -m -w wrote")
	changelog := fs.String("changelog", "CHANGELOG.md", "the changelog whose Unreleased section records breaking changes")
	record := fs.Bool("record", false, "write the baseline from the module in the working directory")
	_ = fs.Parse(os.Args[1:]) // ExitOnError: a bad flag exits with status 2
	do := func() error { return run(*version, *baseline, *changelog, os.Stdout) }
	if *record {
		do = func() error { return recordBaseline(*version, *baseline) }
	}
	if err := do(); err != nil {
		fmt.Fprintln(os.Stderr, "apicheck:", err)
		os.Exit(1)
	}
}

// module returns the path of the module in the working directory.
func module() (string, error) {
	out, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		return "", fmt.Errorf("go list -m: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// apidiff runs apidiff with args and returns its standard output.
func apidiff(version string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", append([]string{"run", "golang.org/x/exp/cmd/apidiff@" + version}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("apidiff %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// recordBaseline writes the export data of the module's packages, internal
// ones left out, to baseline.
func recordBaseline(version, baseline string) error {
	mod, err := module()
	if err != nil {
		return err
	}
	_, err = apidiff(version, "-m", "-w", baseline, mod)
	return err
}

// run compares the module in the working directory with the baseline and
// checks every incompatible change against the changelog.
func run(version, baseline, changelog string, w io.Writer) error {
	mod, err := module()
	if err != nil {
		return err
	}
	if _, err := os.Stat(baseline); err != nil {
		return fmt.Errorf("no API baseline (record it with make apibaseline): %w", err)
	}
	out, err := apidiff(version, "-m", "-incompatible", baseline, mod)
	if err != nil {
		return err
	}
	log, err := os.ReadFile(changelog)
	if err != nil {
		return err
	}
	changes := incompatible(out)
	missing := unrecorded(changes, breakingSymbols(log))
	fmt.Fprintf(w, "apicheck: %d incompatible changes since %s, %d not recorded in %s\n", len(changes), baseline, len(missing), changelog)
	if len(missing) == 0 {
		return nil
	}
	for _, c := range missing {
		fmt.Fprintln(w, "  "+c)
	}
	return errors.New(`record each change above under "### Breaking" in the Unreleased section of ` + changelog +
		" (its symbol in backquotes, as apidiff names it), or restore the API")
}

// incompatible returns apidiff's change lines ("- Symbol: what changed").
func incompatible(out []byte) []string {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if l, ok := strings.CutPrefix(sc.Text(), "- "); ok {
			lines = append(lines, l)
		}
	}
	return lines
}

var backquoted = regexp.MustCompile("`([^`]+)`")

// breakingSymbols returns what the Breaking part of the Unreleased section
// quotes.
func breakingSymbols(changelog []byte) map[string]bool {
	syms := map[string]bool{}
	section, breaking := false, false
	for line := range strings.SplitSeq(string(changelog), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			section = strings.HasPrefix(line, "## [Unreleased]")
			breaking = false
			continue
		case strings.HasPrefix(line, "### "):
			breaking = section && strings.TrimSpace(line) == "### Breaking"
			continue
		}
		if breaking {
			for _, m := range backquoted.FindAllStringSubmatch(line, -1) {
				syms[m[1]] = true
			}
		}
	}
	return syms
}

// unrecorded returns the changes whose symbol, or no prefix of it ending
// before a dot, is recorded.
func unrecorded(changes []string, recorded map[string]bool) []string {
	var missing []string
	for _, c := range changes {
		sym, _, _ := strings.Cut(c, ": ")
		if !covered(receiver.Replace(sym), recorded) {
			missing = append(missing, c)
		}
	}
	return missing
}

// receiver writes a method of a pointer receiver as apidiff names a field or
// a method of a value receiver: (*Server).Start is Server.Start.
var receiver = strings.NewReplacer("(*", "", ")", "")

func covered(sym string, recorded map[string]bool) bool {
	for {
		if recorded[sym] {
			return true
		}
		i := strings.LastIndexByte(sym, '.')
		if i <= 0 || sym[:i] == "." {
			return false
		}
		sym = sym[:i]
	}
}
