package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
)

func runFmt(_ context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "fmt", "fmt [flags] [PATH...]\n\nRewrites .hcl and .hclvars files in canonical style. PATH may be files or\ndirectories (default \".\"). With -check, changes nothing and exits 1 when a\nfile needs formatting; exits 2 on a syntax error.")
	check := fs.Bool("check", false, "only report files that need formatting; exit 1 if any")
	recursive := fs.Bool("recursive", false, "also format files in sub-directories")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		pos = []string{"."}
	}
	var files []string
	for _, p := range pos {
		found, err := hclFiles(p, *recursive)
		if err != nil {
			fmt.Fprintln(c.stderr, "gatepipe fmt:", err)
			return exitConfigError
		}
		files = append(files, found...)
	}
	parsed := map[string]*hcl.File{}
	var diags hcl.Diagnostics
	changed := 0
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			fmt.Fprintln(c.stderr, "gatepipe fmt:", err)
			return exitConfigError
		}
		f, d := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
		parsed[name] = f
		if d.HasErrors() {
			diags = append(diags, d...)
			continue
		}
		out := hclwrite.Format(src)
		if bytes.Equal(out, src) {
			continue
		}
		changed++
		fmt.Fprintln(c.stdout, name)
		if !*check {
			if err := os.WriteFile(name, out, 0o666); err != nil {
				fmt.Fprintln(c.stderr, "gatepipe fmt:", err)
				return exitRunFailure
			}
		}
	}
	if diags.HasErrors() {
		newDiagView("console", c.stderr, parsed).Diagnostics(diags)
		return exitConfigError
	}
	if *check && changed > 0 {
		return exitRunFailure
	}
	return exitOK
}

func hclFiles(p string, recursive bool) ([]string, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{p}, nil
	}
	var out []string
	err = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != p && (!recursive || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".hcl") || strings.HasSuffix(path, ".hclvars") {
			out = append(out, path)
		}
		return nil
	})
	return out, err
}
