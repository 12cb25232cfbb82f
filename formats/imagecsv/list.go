package imagecsv

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// maxListLine bounds one line of a label list: a path and a label.
const maxListLine = 64 << 10

// LabelledImage is one line of a label list.
type LabelledImage struct {
	Image, Label string
}

// ReadLabelList reads a label list file (see ParseLabelList).
func ReadLabelList(path string) ([]LabelledImage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseLabelList(f, filepath.Base(path))
}

// ParseLabelList reads lines "IMAGE LABEL" separated by white space, as
// torchvision's Places365 file lists (`/a/airfield/00000001.jpg 0`,
// `Places365_val_00000001.jpg 165`) and many datasets' split files are.
// Empty lines are skipped; any other line must have exactly two fields,
// else the error names the file and line. Lines are bounded (64 KiB), so
// a damaged file costs bounded memory per line.
func ParseLabelList(r io.Reader, name string) ([]LabelledImage, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxListLine)
	var out []LabelledImage
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if line == 1 {
			text = strings.TrimPrefix(text, "\ufeff")
		}
		if text == "" {
			continue
		}
		f := strings.Fields(text)
		if len(f) != 2 {
			return nil, fmt.Errorf("%s:%d: want IMAGE LABEL, got %d fields", name, line, len(f))
		}
		out = append(out, LabelledImage{Image: f[0], Label: f[1]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w (a line longer than %d bytes is not a label list)", name, err, maxListLine)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no IMAGE LABEL lines", name)
	}
	return out, nil
}
