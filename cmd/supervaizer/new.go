package main

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"text/template"
	"unicode"
)

// sdkModule is the SDK's module path.
const sdkModule = "github.com/supervaize/supervaizer-go"

// Versions a new agent's go.mod starts from: the SDK's own go directive and
// testify requirement (TestNewVersionsFollowTheSDK keeps them equal).
const (
	goVersion      = "1.26.0"
	testifyVersion = "v1.12.1"
)

//go:embed template/*.tmpl
var templates embed.FS

// newFiles maps each template to the file it writes in the new folder.
var newFiles = []struct{ template, file string }{
	{"main.go.tmpl", "main.go"},
	{"main_test.go.tmpl", "main_test.go"},
	{"Makefile.tmpl", "Makefile"},
	{"README.md.tmpl", "README.md"},
	{"gitignore.tmpl", ".gitignore"},
}

// agentName matches the base name of a new agent's folder.
var agentName = regexp.MustCompile(`^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$`)

// newData is what the templates see.
type newData struct {
	Base        string // the folder's base name: my-agent
	Module      string // the module path
	DisplayName string // My Agent
	Slug        string // my-agent, the slug the SDK derives from DisplayName
	SDKVersion  string // the required SDK version
	Replace     string // the replace directive's target, "" for none
}

// runNew writes a new agent module in the folder NAME.
func runNew(args []string, stdout, stderr io.Writer) error {
	fset := newFlagSet("new", "NAME", stderr)
	replace := fset.String("replace", "", "the folder of an SDK checkout: go.mod replaces "+sdkModule+" with it (for an unpublished SDK)")
	module := fset.String("module", "", "the module path (default: the folder's base name)")
	sdkVersion := fset.String("sdk-version", "", "the SDK version to require (default: this command's own version)")
	force := fset.Bool("force", false, "write into a folder that is not empty (files of the same name are replaced)")
	noTidy := fset.Bool("no-tidy", false, "do not run go mod tidy (then go.sum is missing until you run it)")
	if err := parse(fset, args, 1); err != nil {
		return err
	}
	dir := fset.Arg(0)
	base := filepath.Base(filepath.Clean(dir))
	if !agentName.MatchString(base) {
		return fmt.Errorf("%w: %q: the folder's name must be lower-case letters and digits, words joined by - or _ (e.g. my-agent)", errUsage, base)
	}
	d := newData{Base: base, Module: *module, DisplayName: displayName(base), Slug: strings.ReplaceAll(base, "_", "-")}
	if d.Module == "" {
		d.Module = base
	}
	if *replace != "" {
		abs, err := filepath.Abs(*replace)
		if err != nil {
			return err
		}
		if b, err := os.ReadFile(filepath.Join(abs, "go.mod")); err != nil || !bytes.HasPrefix(b, []byte("module "+sdkModule+"\n")) {
			return fmt.Errorf("-replace %s: not the SDK's folder (its go.mod must declare module %s)", *replace, sdkModule)
		}
		d.Replace = abs
	}
	d.SDKVersion = sdkRequirement(*sdkVersion, d.Replace != "")
	if d.SDKVersion == "" {
		return fmt.Errorf("this supervaizer was built from a source tree and knows no published SDK version: pass -replace DIR (an SDK checkout) or -sdk-version vX.Y.Z")
	}
	if err := checkEmpty(dir, *force); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := map[string][]byte{"go.mod": goMod(d)}
	for _, f := range newFiles {
		b, err := render(f.template, d)
		if err != nil {
			return err
		}
		files[f.file] = b
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "wrote the agent %q (slug %s) in %s\n", d.DisplayName, d.Slug, dir)
	if !*noTidy {
		cmd := exec.Command("go", "mod", "tidy")
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, stderr, stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go mod tidy in %s: %w (the files are written; fix the cause, then run go mod tidy there)", dir, err)
		}
		fmt.Fprintln(stdout, "ran go mod tidy: go.sum lists the modules it needs")
	}
	fmt.Fprintf(stdout, "next: cd %s && make test && make run\n", dir)
	return nil
}

// displayName turns a folder name into the agent's name: my-agent -> My Agent.
func displayName(base string) string {
	words := strings.FieldsFunc(base, func(r rune) bool { return r == '-' || r == '_' })
	for i, w := range words {
		words[i] = string(unicode.ToUpper(rune(w[0]))) + w[1:]
	}
	return strings.Join(words, " ")
}

// sdkRequirement returns the SDK version go.mod requires: the flag, else
// this command's own module version when it was installed from a published
// version, else (with a replace directive) the placeholder version go uses
// for replaced modules; "" when none applies.
func sdkRequirement(flagValue string, replaced bool) string {
	if flagValue != "" {
		return flagValue
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Path == sdkModule && strings.HasPrefix(bi.Main.Version, "v") {
		return bi.Main.Version
	}
	if replaced {
		return "v0.0.0-00010101000000-000000000000"
	}
	return ""
}

// checkEmpty refuses a folder that exists and is not empty, unless force.
func checkEmpty(dir string, force bool) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case len(entries) > 0 && !force:
		return fmt.Errorf("%s is not empty: new writes only into a new or empty folder (-force writes anyway, replacing files of the same name)", dir)
	}
	return nil
}

// goMod returns the new module's go.mod; go mod tidy completes it.
func goMod(d newData) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "module %s\n\ngo %s\n\nrequire (\n\t%s %s\n\tgithub.com/stretchr/testify %s\n)\n", d.Module, goVersion, sdkModule, d.SDKVersion, testifyVersion)
	if d.Replace != "" {
		fmt.Fprintf(&b, "\n// The SDK from a local checkout (supervaizer new -replace): remove this line\n// to build against a published version.\nreplace %s => %s\n", sdkModule, quoteModPath(d.Replace))
	}
	return []byte(b.String())
}

// quoteModPath quotes a path for go.mod when it holds a space or a quote.
func quoteModPath(p string) string {
	if strings.ContainsAny(p, " \t\"'`") {
		return fmt.Sprintf("%q", p)
	}
	return p
}

// render executes the template name with d.
func render(name string, d newData) ([]byte, error) {
	t, err := template.ParseFS(templates, "template/"+name)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
