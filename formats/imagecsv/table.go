// Package imagecsv reads image sets annotated by a table: Kaggle's medical
// sets (HAM10000, diabetic retinopathy), NIH ChestX-ray14 and Flickr30k's
// captions. It reads the CSV, finds the image files it names among the
// extracted archives, decodes them to a fixed size in parallel, and turns
// captions into word tokens over a vocabulary.
package imagecsv

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Table is a CSV file with a header row.
type Table struct {
	Name   string // for messages
	Header []string
	Rows   [][]string
}

// ReadTable reads a CSV file whose first row names the columns. A UTF-8
// byte-order mark is dropped; every row must have the header's width.
func ReadTable(path string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseTable(f, filepath.Base(path))
}

// ParseTable reads a CSV table from r; name is used in messages.
func ParseTable(r io.Reader, name string) (*Table, error) {
	br := bufio.NewReader(r)
	if b, err := br.Peek(3); err == nil && string(b) == "\xef\xbb\xbf" {
		br.Discard(3)
	}
	cr := csv.NewReader(br)
	cr.ReuseRecord = false
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: empty file, expected a header row", name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	t := &Table{Name: name, Header: header}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// encoding/csv errors carry the line and column.
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		t.Rows = append(t.Rows, rec)
	}
	return t, nil
}

// Column returns the index of the named column; the error lists the
// columns there are.
func (t *Table) Column(name string) (int, error) {
	for i, h := range t.Header {
		if strings.TrimSpace(h) == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%s has no column %q; its columns are %s", t.Name, name, quoteAll(t.Header))
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// ReadList reads a text file of names, one per line (ChestX-ray14's
// train_val_list.txt): blank lines are skipped, spaces trimmed.
func ReadList(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return out, nil
}
