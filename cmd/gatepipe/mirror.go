package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/gatepipe/gatepipe/sources"
)

const mirrorUsage = `mirror [flags] DIR [PATH]

Writes into DIR a mirror of every remote file the pipeline's sources pin,
laid out HOST/PATH as -mirror reads it (https://huggingface.co/datasets/o/n/
resolve/C/x.parquet becomes DIR/huggingface.co/datasets/o/n/resolve/C/x.parquet),
fetching what the cache lacks first, as fetch does. Apply the same pipeline,
with its gatepipe.lock.hcl, elsewhere with -mirror DIR, or with -mirror URL
against any plain HTTP server that serves DIR (python3 -m http.server -d DIR).
Files already in DIR with the pinned size and checksum are kept.`

func runMirror(ctx context.Context, c *cli, args []string) int {
	s, lead, code := loadSourcesWith(ctx, c, args, "mirror", mirrorUsage, sourcesResolve, 1, nil)
	if s == nil {
		return code
	}
	dir, err := filepath.Abs(lead[0])
	if err != nil {
		fmt.Fprintln(c.stderr, "gatepipe mirror:", err)
		return exitConfigError
	}
	pinned, code := c.pinnedFiles(ctx, s, "it is not in the mirror")
	if pinned == nil {
		return code
	}
	r := s.engine.Options().Sources
	var written int
	var bytes int64
	for _, pf := range pinned {
		d, file := pf.d, pf.file
		dest, err := mirrorPath(dir, file.URL)
		if err != nil {
			fmt.Fprintf(c.stderr, "Error: %s: %v\n", d.Addr, err)
			return exitRunFailure
		}
		if sameFile(dest, file) {
			continue
		}
		src, err := r.Fetch(ctx, d.Ref, file, nil)
		if err == nil {
			err = placeFile(src, dest)
		}
		if err != nil {
			fmt.Fprintf(c.stderr, "Error: %s: %v\n", d.Addr, err)
			return exitRunFailure
		}
		fmt.Fprintf(c.stdout, "mirrored %s (%s)\n", file.URL, humanBytes(file.Size))
		written++
		bytes += file.Size
	}
	fmt.Fprintf(c.stdout, "%d file(s) in the mirror %s, %d written now (%s). Apply elsewhere with -mirror %s, or serve the directory over HTTP and use -mirror URL.\n",
		len(pinned), dir, written, humanBytes(bytes), dir)
	return exitOK
}

// mirrorPath is where a remote file goes in a mirror directory: HOST/PATH,
// as sources.Mirror maps it.
func mirrorPath(dir, raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	rel := u.Host + u.Path
	if err := sources.CheckRelPath(rel); err != nil || u.RawQuery != "" {
		return "", fmt.Errorf("%s cannot be laid out in a mirror directory", raw)
	}
	return filepath.Join(dir, filepath.FromSlash(rel)), nil
}

// sameFile reports whether dest already holds f (size, then SHA-256).
func sameFile(dest string, f sources.File) bool {
	info, err := os.Stat(dest)
	if err != nil || (f.Size > 0 && info.Size() != f.Size) {
		return false
	}
	sum, err := sources.FileSHA256(dest)
	return err == nil && sum == f.SHA256
}

// placeFile copies src to dest through a temporary file, so that an
// interrupted mirror never leaves a partial file under a file's name.
func placeFile(src, dest string) error {
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	tmp := dest + ".gatepipe-tmp"
	if err := sources.CopyFile(src, tmp); err != nil {
		os.Remove(tmp)
		return err
	}
	_ = os.Chmod(tmp, 0o644)
	return os.Rename(tmp, dest)
}
