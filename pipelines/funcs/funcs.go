// Package funcs provides the functions available in gatepipe expressions:
// the cty standard library (format, join, merge, setproduct, jsondecode,
// ...), try/can, type conversions, and file functions that resolve
// relative paths against the module's directory.
package funcs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/gatepipe/gatepipe/internal/readset"
	"github.com/gatepipe/gatepipe/internal/safefile"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// Table returns the function table for a module whose relative paths resolve
// against baseDir. Paths starting with "stdlib/" are read from stdlibFS;
// other files the functions read are recorded in reads (which may be nil).
func Table(baseDir string, stdlibFS fs.FS, reads *readset.Set) map[string]function.Function {
	files := fileReader{base: baseDir, stdlib: stdlibFS, reads: reads}
	return map[string]function.Function{
		"abs": stdlib.AbsoluteFunc, "ceil": stdlib.CeilFunc, "chomp": stdlib.ChompFunc,
		"chunklist": stdlib.ChunklistFunc, "coalesce": stdlib.CoalesceFunc, "coalescelist": stdlib.CoalesceListFunc,
		"compact": stdlib.CompactFunc, "concat": stdlib.ConcatFunc, "contains": stdlib.ContainsFunc,
		"csvdecode": stdlib.CSVDecodeFunc, "distinct": stdlib.DistinctFunc, "element": stdlib.ElementFunc,
		"flatten": stdlib.FlattenFunc, "floor": stdlib.FloorFunc, "format": stdlib.FormatFunc,
		"formatdate": stdlib.FormatDateFunc, "formatlist": stdlib.FormatListFunc, "indent": stdlib.IndentFunc,
		"index": stdlib.IndexFunc, "join": stdlib.JoinFunc, "jsondecode": stdlib.JSONDecodeFunc,
		"jsonencode": stdlib.JSONEncodeFunc, "keys": stdlib.KeysFunc, "length": stdlib.LengthFunc,
		"log": stdlib.LogFunc, "lookup": stdlib.LookupFunc, "lower": stdlib.LowerFunc, "max": stdlib.MaxFunc,
		"merge": stdlib.MergeFunc, "min": stdlib.MinFunc, "parseint": stdlib.ParseIntFunc, "pow": stdlib.PowFunc,
		"range": stdlib.RangeFunc, "regex": stdlib.RegexFunc, "regexall": stdlib.RegexAllFunc,
		"replace": stdlib.ReplaceFunc, "reverse": stdlib.ReverseListFunc, "setintersection": stdlib.SetIntersectionFunc,
		"setproduct": stdlib.SetProductFunc, "setsubtract": stdlib.SetSubtractFunc, "setunion": stdlib.SetUnionFunc,
		"signum": stdlib.SignumFunc, "slice": stdlib.SliceFunc, "sort": stdlib.SortFunc, "split": stdlib.SplitFunc,
		"strlen": stdlib.StrlenFunc, "strrev": stdlib.ReverseFunc, "substr": stdlib.SubstrFunc,
		"timeadd": stdlib.TimeAddFunc, "title": stdlib.TitleFunc, "trim": stdlib.TrimFunc,
		"trimprefix": stdlib.TrimPrefixFunc, "trimsuffix": stdlib.TrimSuffixFunc, "trimspace": stdlib.TrimSpaceFunc,
		"upper": stdlib.UpperFunc, "values": stdlib.ValuesFunc, "zipmap": stdlib.ZipmapFunc,
		"try": tryfunc.TryFunc, "can": tryfunc.CanFunc,
		"tostring": stdlib.MakeToFunc(cty.String), "tonumber": stdlib.MakeToFunc(cty.Number),
		"tobool": stdlib.MakeToFunc(cty.Bool), "toset": toCollectionFunc(cty.Set(cty.DynamicPseudoType)),
		"tolist": toCollectionFunc(cty.List(cty.DynamicPseudoType)), "tomap": toCollectionFunc(cty.Map(cty.DynamicPseudoType)),
		"file": files.fileFunc(), "fileexists": files.existsFunc(), "filesha256": files.sha256Func(),
		"abspath": absPathFunc(baseDir), "basename": pathFunc(filepath.Base), "dirname": pathFunc(filepath.Dir),
	}
}

type fileReader struct {
	base   string
	stdlib fs.FS
	reads  *readset.Set
}

// resolve names a file relative to the module's directory.
func (r fileReader) resolve(name string) string {
	if !filepath.IsAbs(name) {
		if strings.HasPrefix(r.base, "stdlib/") {
			name = path.Join(r.base, name)
		} else {
			name = filepath.Join(r.base, name)
		}
	}
	return name
}

// read reads a regular file of at most max bytes (see safefile).
func (r fileReader) read(name string, max int64) ([]byte, error) {
	name = r.resolve(name)
	if strings.HasPrefix(name, "stdlib/") && r.stdlib != nil {
		return fs.ReadFile(r.stdlib, strings.TrimPrefix(name, "stdlib/"))
	}
	r.reads.Add(name)
	return safefile.ReadFile(name, max)
}

func (r fileReader) fileFunc() function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			b, err := r.read(args[0].AsString(), safefile.MaxFileFuncBytes)
			if err != nil {
				return cty.NilVal, fmt.Errorf("cannot read file: %w", err)
			}
			return cty.StringVal(string(b)), nil
		},
	})
}

func (r fileReader) existsFunc() function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			name := r.resolve(args[0].AsString())
			if strings.HasPrefix(name, "stdlib/") && r.stdlib != nil {
				_, err := fs.Stat(r.stdlib, strings.TrimPrefix(name, "stdlib/"))
				return cty.BoolVal(err == nil), nil
			}
			r.reads.Add(name)
			info, err := os.Stat(name)
			return cty.BoolVal(err == nil && info.Mode().IsRegular()), nil
		},
	})
}

func (r fileReader) sha256Func() function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			name := r.resolve(args[0].AsString())
			h := sha256.New()
			if strings.HasPrefix(name, "stdlib/") && r.stdlib != nil {
				b, err := fs.ReadFile(r.stdlib, strings.TrimPrefix(name, "stdlib/"))
				if err != nil {
					return cty.NilVal, fmt.Errorf("cannot read file: %w", err)
				}
				h.Write(b)
			} else {
				r.reads.Add(name)
				f, _, err := safefile.Open(name, safefile.MaxHashBytes)
				if err != nil {
					return cty.NilVal, fmt.Errorf("cannot read file: %w", err)
				}
				_, err = io.Copy(h, f)
				f.Close()
				if err != nil {
					return cty.NilVal, fmt.Errorf("cannot read file: %w", err)
				}
			}
			return cty.StringVal(hex.EncodeToString(h.Sum(nil))), nil
		},
	})
}

func absPathFunc(base string) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			p := args[0].AsString()
			if !filepath.IsAbs(p) {
				p = filepath.Join(base, p)
			}
			abs, err := filepath.Abs(p)
			return cty.StringVal(abs), err
		},
	})
}

func pathFunc(fn func(string) string) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return cty.StringVal(fn(args[0].AsString())), nil
		},
	})
}
