package specs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/train"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// userCheckShape is the fake batch's example shape when the encoder
// block names none (input_shape, preprocess): GATE's 224 px RGB images.
var userCheckShape = []int{3, 224, 224}

// resolveUserEncoder checks and resolves a researcher's own encoder,
// arch = "python:PATH:CALLABLE" (PATH relative to the module): the file
// must exist, its code and declared inputs are hashed into code_sha256
// (so that every block using the encoder re-runs when they change), args
// become JSON, and, where the machine can run Python (an
// EncoderChecker), the callable is built and run on a fake batch.
func resolveUserEncoder(v map[string]cty.Value, decl nodes.Decl) hcl.Diagnostics {
	arch := v["arch"].AsString()
	path, callable, ok := train.SplitUserArch(arch)
	if !ok {
		return hcl.Diagnostics{decl.Errorf("arch", "Invalid value", "%q: write python:PATH:CALLABLE, as in python:mymodel.py:MyNet (PATH relative to this file, CALLABLE a function or class in it that returns a torch.nn.Module).", arch)}
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(decl.Dir, path)
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs // the worker runs in another directory
	}
	decl.Reads.Add(path)
	info, err := os.Stat(path)
	switch {
	case err != nil:
		return hcl.Diagnostics{decl.Errorf("arch", "Encoder file not found", "%s: %v.", path, err)}
	case !info.Mode().IsRegular():
		return hcl.Diagnostics{decl.Errorf("arch", "Encoder file not found", "%s is not a regular file.", path)}
	}
	v["arch"] = cty.StringVal(train.UserArchPrefix + path + ":" + callable)
	files, err := userInputs(path, v["inputs"], decl)
	if err != nil {
		return hcl.Diagnostics{decl.Errorf("inputs", "Invalid inputs", "%s.", err)}
	}
	code, err := hashFiles(files)
	if err != nil {
		return hcl.Diagnostics{decl.Errorf("arch", "Cannot read the encoder's code", "%s.", err)}
	}
	v["code_sha256"] = cty.StringVal(code)
	args := v["args"]
	switch {
	case args.IsNull():
		v["args"] = cty.StringVal("{}")
	case !args.IsWhollyKnown():
		return nil // checked when known
	case args.Type() == cty.String:
		// a decoded value again (args as JSON)
	case !args.Type().IsObjectType() && !args.Type().IsMapType():
		return hcl.Diagnostics{decl.Errorf("args", "Invalid value", "args are the callable's keyword arguments: an object such as { width = 64 }, not a %s.", args.Type().FriendlyName())}
	default:
		data, err := ctyjson.Marshal(args, args.Type())
		if err != nil {
			return hcl.Diagnostics{decl.Errorf("args", "Invalid value", "args: %s.", err)}
		}
		v["args"] = cty.StringVal(string(data))
	}
	return checkUserEncoder(v, decl)
}

// checkUserEncoder builds the encoder and runs one fake batch, where the
// machine can (nodes.EncoderChecker): a missing callable, an import
// error, an exception in the constructor or forward, or outputs not of
// the contract's shapes are errors at the arch attribute.
func checkUserEncoder(v map[string]cty.Value, decl nodes.Decl) hcl.Diagnostics {
	checker, ok := decl.Defaults.Machine.(nodes.EncoderChecker)
	if !ok {
		return nil
	}
	shape := userCheckShape
	var in []int
	if s := v["input_shape"]; !s.IsNull() && s.LengthInt() == 3 {
		in = intsOf(s)
	} else if pp := v["preprocess"]; !pp.IsNull() && pp.Type().IsObjectType() {
		if p, err := decodePreprocess(pp); err == nil {
			c := p.Channels
			if c == 0 {
				c = 3
			}
			in = []int{c, p.Size[0], p.Size[1]}
		}
	}
	if len(in) == 3 {
		shape = in
	}
	r := checker.CheckEncoder(decl.Defaults.Python, nodes.EncoderCheck{Arch: v["arch"].AsString(), Args: v["args"].AsString(), Code: v["code_sha256"].AsString(), Shape: shape})
	if r.Error != "" {
		return hcl.Diagnostics{decl.Errorf("arch", "Encoder does not build",
			"%s, built with its args and run on a fake batch of 2 examples %v: %s. SPEC §5.6 (\"Your own encoder\") gives the contract.", v["arch"].AsString(), shape, r.Error)}
	}
	return nil
}

func intsOf(v cty.Value) []int {
	var out []int
	for _, e := range v.AsValueSlice() {
		f, _ := e.AsBigFloat().Int64()
		out = append(out, int(f))
	}
	return out
}

// userInputs lists the encoder's file and, under each declared input (a
// file or a package folder, relative to the module), every regular file
// but Python's byte-code caches; each is recorded as read.
func userInputs(file string, inputs cty.Value, decl nodes.Decl) ([]string, error) {
	files := []string{file}
	if inputs.IsNull() || !inputs.IsWhollyKnown() {
		return files, nil
	}
	for _, e := range inputs.AsValueSlice() {
		p := e.AsString()
		if !filepath.IsAbs(p) {
			p = filepath.Join(decl.Dir, p)
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		decl.Reads.Add(p)
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		err = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && d.Name() == "__pycache__":
				return fs.SkipDir
			case d.IsDir():
				decl.Reads.Add(q)
			case d.Type().IsRegular() && !strings.HasSuffix(q, ".pyc"):
				files = append(files, q)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return files, nil
}

// hashFiles is the SHA-256 of the files' names and contents.
func hashFiles(files []string) (string, error) {
	sort.Strings(files[1:])
	h := sha256.New()
	for _, f := range files {
		sum, size, err := cache.FileSHA256(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d %s\n", f, size, sum)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
