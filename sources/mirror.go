package sources

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// Mirror maps remote URLs to a local directory or an internal HTTP
// server laid out as HOST/PATH: https://huggingface.co/datasets/x maps to
// MIRROR/huggingface.co/datasets/x. Checksums are verified as for the
// original URL.
type Mirror struct {
	base string // http(s) base URL without a trailing slash, or
	dir  string // an absolute directory
}

// ParseMirror reads a mirror setting: an http(s) URL, a file:// URL or a
// directory (relative to dir). "" is no mirror.
func ParseMirror(s, dir string) (Mirror, error) {
	if s == "" {
		return Mirror{}, nil
	}
	u, err := url.Parse(s)
	switch {
	case err == nil && (u.Scheme == "http" || u.Scheme == "https"):
		if u.Host == "" {
			return Mirror{}, fmt.Errorf("mirror %q has no host", s)
		}
		return Mirror{base: strings.TrimRight(s, "/")}, nil
	case err == nil && u.Scheme == "file":
		return Mirror{dir: filepath.Clean(u.Path)}, nil
	case err == nil && len(u.Scheme) > 1:
		return Mirror{}, fmt.Errorf("mirror %q: use an http(s):// URL, a file:// URL or a directory", s)
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(dir, s)
	}
	return Mirror{dir: filepath.Clean(s)}, nil
}

// IsZero reports whether there is no mirror.
func (m Mirror) IsZero() bool { return m.base == "" && m.dir == "" }

// String is the mirror as configured.
func (m Mirror) String() string {
	if m.base != "" {
		return m.base
	}
	return m.dir
}

// locate maps a remote URL: it returns the URL to request, or a local
// file path when the mirror is a directory.
func (m Mirror) locate(raw string) (remote, local string, err error) {
	if m.IsZero() {
		return raw, "", nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", err
	}
	rel := u.Host + u.EscapedPath()
	if u.RawQuery != "" {
		rel += "?" + u.RawQuery
	}
	if m.base != "" {
		return m.base + "/" + rel, "", nil
	}
	p := u.Host + u.Path
	if err := CheckRelPath(p); err != nil || u.RawQuery != "" {
		return "", "", fmt.Errorf("%s cannot be mapped into the mirror directory", raw)
	}
	return "", filepath.Join(m.dir, filepath.FromSlash(p)), nil
}
