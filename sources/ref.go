package sources

import (
	"fmt"
	"path"
	"strings"
)

// Credentials names where a source's credentials come from.
const (
	CredsNone   = ""
	CredsHF     = "hf"     // HF_TOKEN, HUGGING_FACE_HUB_TOKEN or the token file of huggingface-cli
	CredsKaggle = "kaggle" // KAGGLE_USERNAME and KAGGLE_KEY, or kaggle.json
)

// Ref is one declared remote source: a URL, or files of a Hugging Face
// dataset repository at a revision.
type Ref struct {
	// URL of a single file (http or https).
	URL string
	// Name is the file's name in the raw directory (URL sources).
	Name string
	// SHA256 is the checksum the configuration declares, if any.
	SHA256 string
	// SHA256Prefix, when set, is how the file's SHA-256 must start: a
	// publisher that names its files by a hash prefix (torchvision's
	// resnet50-11ad3fa6.pth) is checked at the first download, before the
	// file is pinned.
	SHA256Prefix string
	// HF, when set, is a dataset repository ("owner/name"); Revision a
	// branch, tag or commit (default "main"); Files path patterns in it
	// (path.Match syntax, one directory level per pattern).
	HF       string
	Revision string
	Files    []string
	// Model marks HF as a model repository (timm's weights), not a
	// dataset repository.
	Model bool
	// Credentials is CredsNone, CredsHF or CredsKaggle.
	Credentials string
}

// Key identifies the ref in the lock file. It holds no credentials.
func (r Ref) Key() string {
	if r.HF != "" {
		kind := "hf"
		if r.Model {
			kind = "hf-model"
		}
		return fmt.Sprintf("%s %s@%s %s", kind, r.HF, r.revision(), strings.Join(r.Files, " "))
	}
	return "url " + r.URL
}

// hubKind is the repository kind as the Hub's URLs and the Hugging Face
// cache name it: "datasets" or "models".
func (r Ref) hubKind() string {
	if r.Model {
		return "models"
	}
	return "datasets"
}

// hubPrefix is the repository's path on the Hub, before /resolve/:
// "datasets/OWNER/NAME", or "OWNER/NAME" for a model.
func (r Ref) hubPrefix() string {
	if r.Model {
		return r.HF
	}
	return "datasets/" + r.HF
}

func (r Ref) revision() string {
	if r.Revision == "" {
		return "main"
	}
	return r.Revision
}

// Pin is what a ref resolved to: the files to download, each with its
// checksum, and for a Hub repository the commit the revision named.
type Pin struct {
	Commit string
	Files  []File
}

// File is one file to download.
type File struct {
	// Path is where the file goes in the raw directory: a clean relative
	// slash-separated path, never absolute and never leaving it.
	Path   string
	URL    string
	SHA256 string
	Size   int64 // bytes; 0 when unknown
	// Storage is how a Hub repository stores the file: StorageLFS (its
	// Hugging Face cache blob is named by its SHA-256), StorageGit (by its
	// git blob hash), or "" when unknown (a lock file from before it was
	// recorded, a URL source).
	Storage string
}

// Hub file storage (File.Storage).
const (
	StorageLFS = "lfs"
	StorageGit = "git"
)

// Size is the total size of the pin's files.
func (p Pin) Size() int64 {
	var n int64
	for _, f := range p.Files {
		n += f.Size
	}
	return n
}

// CheckRelPath reports whether p is a path that stays inside the
// directory it is joined to: relative, clean, no "..", no backslashes or
// NUL. Paths from a server (the Hub's tree listing) go through it before
// they name a file.
func CheckRelPath(p string) error {
	if p == "" || strings.ContainsAny(p, "\\\x00") || path.IsAbs(p) || path.Clean(p) != p || p == "." ||
		p == ".." || strings.HasPrefix(p, "../") {
		return fmt.Errorf("%q is not a relative path inside the source", p)
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." || el == "." || el == "" {
			return fmt.Errorf("%q is not a relative path inside the source", p)
		}
	}
	return nil
}
