package pipelines

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/gatepipe/gatepipe/internal/readset"
	"github.com/gatepipe/gatepipe/internal/safefile"
	"github.com/gatepipe/gatepipe/pipelines/addrs"
	"github.com/gatepipe/gatepipe/sources"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// StdlibPrefix starts every module source that names an embedded module.
const StdlibPrefix = "stdlib/"

// maxModuleDepth bounds module nesting so a module that includes itself
// is reported instead of recursing forever.
const maxModuleDepth = 16

// Loader parses configuration files and remembers their sources so that
// diagnostics can show snippets. A Loader is not safe for concurrent use.
type Loader struct {
	parser *hclparse.Parser
	stdlib fs.FS
	kinds  map[string]bool
	reads  *readset.Set
}

// NewLoader returns a loader that accepts node blocks of the given kinds
// and resolves "stdlib/..." module sources in stdlib (which may be nil).
func NewLoader(stdlib fs.FS, kinds []string) *Loader {
	k := make(map[string]bool, len(kinds))
	for _, name := range kinds {
		k[name] = true
	}
	return &Loader{parser: hclparse.NewParser(), stdlib: stdlib, kinds: k}
}

// RecordReads makes the loader stamp every local file and directory it
// reads into s (embedded stdlib files belong to the binary and are not
// recorded).
func (l *Loader) RecordReads(s *readset.Set) { l.reads = s }

// Files returns every file parsed so far, for rendering diagnostics.
func (l *Loader) Files() map[string]*hcl.File { return l.parser.Files() }

// Stdlib returns the embedded module file system the loader resolves
// "stdlib/..." sources in.
func (l *Loader) Stdlib() fs.FS { return l.stdlib }

// LoadConfig loads the root module at p (a directory of *.hcl files or one
// file) and every module it calls.
func (l *Loader) LoadConfig(p string) (*Module, hcl.Diagnostics) {
	root, diags := l.loadPipeline(p)
	if root == nil {
		return nil, diags
	}
	mod := &Module{Path: addrs.RootModule, Pipeline: root}
	diags = append(diags, l.loadChildren(mod, 0)...)
	return mod, diags
}

func (l *Loader) loadChildren(parent *Module, depth int) hcl.Diagnostics {
	var diags hcl.Diagnostics
	parent.Children = map[string]*Module{}
	for _, name := range sortedKeys(parent.Pipeline.ModuleCalls) {
		call := parent.Pipeline.ModuleCalls[name]
		if call.Source == "" {
			continue
		}
		if depth >= maxModuleDepth {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Module nesting too deep",
				Detail:   fmt.Sprintf("Modules are nested more than %d levels deep here; a module probably includes itself.", maxModuleDepth),
				Subject:  call.SourceRange.Ptr(),
			})
			continue
		}
		dir, err := l.resolveSource(parent.Pipeline.Dir, call.Source)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid module source",
				Detail:   err.Error(),
				Subject:  call.SourceRange.Ptr(),
			})
			continue
		}
		p, pDiags := l.loadPipeline(dir)
		for _, d := range pDiags {
			if d.Subject == nil {
				d.Subject = call.SourceRange.Ptr()
				d.Detail = fmt.Sprintf("Module %q (source %q): %s", name, call.Source, d.Detail)
			}
		}
		diags = append(diags, pDiags...)
		if p == nil {
			continue
		}
		if p.Settings != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Settings block in a module",
				Detail:   "Only the root pipeline may have a gatepipe {} settings block; remove it from the module.",
				Subject:  p.Settings.DeclRange.Ptr(),
			})
		}
		child := &Module{Path: parent.Path.Child(name), Pipeline: p, Call: call}
		parent.Children[name] = child
		diags = append(diags, l.loadChildren(child, depth+1)...)
	}
	return diags
}

func (l *Loader) resolveSource(fromDir, source string) (string, error) {
	switch {
	case strings.HasPrefix(source, StdlibPrefix):
		if l.stdlib == nil {
			return "", fmt.Errorf("no stdlib is embedded in this build, so %q cannot be found", source)
		}
		clean := path.Clean(source)
		if _, err := fs.Stat(l.stdlib, strings.TrimPrefix(clean, StdlibPrefix)); err != nil {
			hint := ""
			if s := NameSuggestion(strings.TrimPrefix(clean, StdlibPrefix), stdlibModules(l.stdlib)); s != "" {
				hint = fmt.Sprintf(" Did you mean %q?", StdlibPrefix+s)
			}
			return "", fmt.Errorf("stdlib has no module %q.%s", source, hint)
		}
		return clean, nil
	case strings.HasPrefix(source, "./"), strings.HasPrefix(source, "../"):
		if strings.HasPrefix(fromDir, StdlibPrefix) {
			return path.Join(fromDir, source), nil
		}
		return filepath.Join(fromDir, source), nil
	case filepath.IsAbs(source):
		return source, nil
	}
	return "", fmt.Errorf("module source %q must start with \"stdlib/\", \"./\" or \"../\", or be an absolute path", source)
}

func stdlibModules(fsys fs.FS) []string {
	var mods []string
	_ = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && p != "." {
			mods = append(mods, p)
		}
		return nil
	})
	return mods
}

// loadPipeline parses one module. It returns nil only when nothing could
// be read at all.
func (l *Loader) loadPipeline(p string) (*Pipeline, hcl.Diagnostics) {
	files, dir, err := l.listFiles(p)
	if err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read configuration", Detail: err.Error()}}
	}
	if len(files) == 0 {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "No configuration files",
			Detail:   fmt.Sprintf("%s contains no .hcl files.", p),
		}}
	}
	pl := newPipeline(dir)
	var diags hcl.Diagnostics
	for _, f := range files {
		src, err := l.readFile(f)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read file", Detail: err.Error()})
			continue
		}
		if d := prescan(src, f); d.HasErrors() {
			// Register the source so the diagnostic can show a snippet.
			l.parser.Files()[f] = &hcl.File{Bytes: src}
			diags = append(diags, d...)
			continue
		}
		file, pDiags := l.parser.ParseHCL(src, f)
		diags = append(diags, pDiags...)
		if file == nil {
			continue
		}
		diags = append(diags, duplicateKeys(file.Body)...)
		diags = append(diags, l.decodeFile(pl, file.Body)...)
	}
	return pl, diags
}

func (l *Loader) listFiles(p string) (files []string, dir string, err error) {
	if strings.HasPrefix(p, StdlibPrefix) {
		rel := strings.TrimPrefix(p, StdlibPrefix)
		if strings.HasSuffix(rel, ".hcl") {
			return []string{p}, path.Dir(p), nil
		}
		entries, err := fs.ReadDir(l.stdlib, rel)
		if err != nil {
			return nil, "", err
		}
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".hcl") {
				files = append(files, path.Join(p, e.Name()))
			}
		}
		return files, p, nil
	}
	l.reads.Add(p)
	info, err := os.Stat(p)
	if err != nil {
		return nil, "", err
	}
	if !info.IsDir() {
		return []string{p}, filepath.Dir(p), nil
	}
	matches, err := filepath.Glob(filepath.Join(p, "*.hcl"))
	if err != nil {
		return nil, "", err
	}
	sort.Strings(matches)
	// The lock file beside the pipeline is not configuration.
	matches = slices.DeleteFunc(matches, func(m string) bool {
		return filepath.Base(m) == sources.LockFileName || filepath.Base(m) == sources.SmokeLockFileName
	})
	return matches, p, nil
}

func (l *Loader) readFile(name string) ([]byte, error) {
	if strings.HasPrefix(name, StdlibPrefix) {
		return fs.ReadFile(l.stdlib, strings.TrimPrefix(name, StdlibPrefix))
	}
	l.reads.Add(name)
	return safefile.ReadFile(name, safefile.MaxConfigBytes)
}
