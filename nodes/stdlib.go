package nodes

import "strings"

// StdlibPrefix starts the paths of files of the embedded standard library
// as node configurations see them (a module's directory, a matrix file);
// it is pipelines.StdlibPrefix, repeated here so that node packages need
// not import the loader.
const StdlibPrefix = "stdlib/"

// StdlibPath reports whether p names a file or directory of the embedded
// standard library, and returns the path inside it.
func StdlibPath(p string) (rel string, ok bool) { return strings.CutPrefix(p, StdlibPrefix) }
