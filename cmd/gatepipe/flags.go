package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/gatepipe/gatepipe/pipelines"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// newFlagSet returns a flag set whose --help prints usage and the flags.
func newFlagSet(c *cli, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: gatepipe %s\n", strings.TrimSpace(usage))
		flags := 0
		fs.VisitAll(func(*flag.Flag) { flags++ })
		if flags > 0 {
			fmt.Fprintln(w, "\nFlags (one or two dashes):")
			fs.PrintDefaults()
		}
	}
	return fs
}

// isHelp reports whether arg asks for help, in any of the spellings the
// flag package accepts, or as a word.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "--h", "-help", "--help", "help":
		return true
	}
	return false
}

// parseInterleaved parses flags that may come before or after positional
// arguments, as in "gatepipe apply x.hcl -var a=b".
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// parseArgs parses and maps --help to exit 0 and bad flags to exit 2.
// ok is false when the caller must return code.
func parseArgs(fs *flag.FlagSet, args []string) (pos []string, code int, ok bool) {
	pos, err := parseInterleaved(fs, args)
	if err == flag.ErrHelp {
		return nil, exitOK, false
	}
	if err != nil {
		return nil, exitConfigError, false
	}
	return pos, 0, true
}

// configFlags are the flags of every verb that loads a pipeline.
type configFlags struct {
	vars     stringList
	varFiles stringList
	cacheDir string
	logFmt   string
	logLevel string
}

func (f *configFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.vars, "var", "set a variable: -var name=value (repeatable)")
	fs.Var(&f.varFiles, "var-file", "read variables from an .hclvars file (repeatable)")
	fs.StringVar(&f.cacheDir, "cache-dir", "", "cache directory (default: $GATEPIPE_CACHE_DIR, the gatepipe block's cache_dir, or $XDG_CACHE_HOME/gatepipe)")
	fs.StringVar(&f.logFmt, "log-format", "console", "log output: console (human, live progress) or json")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
}

// check refuses -log-format and -log-level values that would otherwise
// be silently replaced by the defaults.
func (f *configFlags) check() error {
	switch f.logFmt {
	case "console", "json":
	default:
		return fmt.Errorf("-log-format %q: want console or json", f.logFmt)
	}
	switch f.logLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("-log-level %q: want debug, info, warn or error", f.logLevel)
	}
	return nil
}

// varValues collects -var-file and -var values; later ones win.
func (f *configFlags) varValues(l *pipelines.Loader) (map[string]pipelines.VarValue, error) {
	vals := map[string]pipelines.VarValue{}
	for _, file := range f.varFiles {
		m, diags := l.LoadVarFile(file)
		if diags.HasErrors() {
			return nil, diags
		}
		for k, v := range m {
			vals[k] = v
		}
	}
	for _, arg := range f.vars {
		name, v, err := pipelines.ParseVarFlag(arg)
		if err != nil {
			return nil, err
		}
		vals[name] = v
	}
	return vals, nil
}

func pathArg(pos []string, w io.Writer) (string, bool) {
	switch len(pos) {
	case 0:
		return ".", true
	case 1:
		return pos[0], true
	}
	fmt.Fprintf(w, "gatepipe: expected one PATH, got %d: %s\n", len(pos), strings.Join(pos, " "))
	return "", false
}

func didYouMean(given string, names []string) string { return pipelines.DidYouMean(given, names) }

// subcommandHelp prints a command group's usage when no subcommand is
// given (exit code 2) or help is asked for (0); done reports that it did.
func (c *cli) subcommandHelp(args []string, usage string) (code int, done bool) {
	if len(args) > 0 && !isHelp(args[0]) {
		return 0, false
	}
	fmt.Fprintf(c.stderr, "Usage: gatepipe %s\n", usage)
	if len(args) == 0 {
		return exitConfigError, true
	}
	return exitOK, true
}
