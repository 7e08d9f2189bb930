// Command supervaizer is the command of agent authors: a new agent in one
// step, development keys and workspace tokens, and a conformance check of any
// running Supervaizer v2 controller.
//
//	go install github.com/supervaize/supervaizer-go/cmd/supervaizer@latest
//
// Usage (flags come before the arguments, as Go's flag package parses them):
//
//	supervaizer new [-replace DIR] [-force] [-no-tidy] NAME
//	supervaizer keygen [-out supervaizer-key.pem]
//	supervaizer token [-key supervaizer-key.pem] [-agent SLUG] [-workspace ID] ...
//	supervaizer check [-api-key KEY] [-key FILE] [-write] [-json] URL
//
// docs/cli.md describes each command and every case check runs.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// usage is printed by help and after a usage error.
const usage = `supervaizer: the command of Supervaizer agent authors

Usage:
  supervaizer new [flags] NAME     a new agent module in the folder NAME
  supervaizer keygen [flags]       an Ed25519 key pair (PEM) to sign development tokens
  supervaizer token [flags]        a workspace token signed with keygen's key
  supervaizer check [flags] URL    a conformance check of a running controller

Flags come before the arguments. "supervaizer <command> -h" lists a command's flags;
docs/cli.md describes them.
`

// errUsage marks a usage error: its message is followed by the usage, and the
// exit status is 2.
var errUsage = errors.New("usage")

// commands maps a command name to its implementation: it parses args (the
// arguments after the name) and writes to stdout; an error is printed to
// stderr.
var commands = map[string]func(args []string, stdout, stderr io.Writer) error{
	"new":    runNew,
	"keygen": runKeygen,
	"token":  runToken,
	"check":  runCheck,
}

// run runs the command named by args[0] and returns the exit status: 0, 1 on
// a failure, 2 on a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		fmt.Fprint(stdout, usage)
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "supervaizer: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	err := cmd(args[1:], stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "supervaizer %s: %v\n", args[0], err)
		return 2
	case errors.Is(err, errChecksFailed):
		return 1
	default:
		fmt.Fprintf(stderr, "supervaizer %s: %v\n", args[0], err)
		return 1
	}
}

// newFlagSet returns a flag set for the command name that writes its errors
// and usage to stderr and returns them instead of exiting.
func newFlagSet(name, args string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: supervaizer %s [flags] %s\n\nFlags:\n", name, args)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args with fs and checks the number of positional arguments.
func parse(fs *flag.FlagSet, args []string, positional int) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() != positional {
		fs.Usage()
		if fs.NArg() > positional && positional > 0 {
			return fmt.Errorf("%w: %d argument(s) expected, got %q (flags come before the arguments)", errUsage, positional, fs.Args())
		}
		return fmt.Errorf("%w: %d argument(s) expected, got %d", errUsage, positional, fs.NArg())
	}
	return nil
}
