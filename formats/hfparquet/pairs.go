package hfparquet

import (
	"cmp"
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// readPairs reads one file's image-text pairs (Options.Pairs) into d:
// every row adds len(o.Pairs) examples. d.Rows counts examples, so that
// Options.Rows (and a LabelsOnly pass) index examples, not rows.
func readPairs(ctx context.Context, pf *file.Reader, fr *pqarrow.FileReader, sc *arrow.Schema, o Options, d *Data) error {
	var cols []string
	for _, p := range o.Pairs {
		for _, c := range []struct{ name, attr string }{{p.Image, "image column"}, {p.Text, "caption column"}} {
			if _, err := pickColumn(sc, c.name, nil, nil, c.attr); err != nil {
				return err
			}
		}
		if f, _ := sc.FieldsByName(p.Image); !isEncodedImage(f[0].Type) {
			return fmt.Errorf("column %q holds %s, not encoded images", p.Image, f[0].Type)
		}
		if !o.LabelsOnly {
			cols = append(cols, p.Image)
		}
		if o.Rows == nil {
			cols = append(cols, p.Text)
		}
	}
	if o.LabelsOnly {
		if o.Height <= 0 || o.Width <= 0 {
			return fmt.Errorf("encoded images need image_size = [H, W]")
		}
		d.Shape = []int{cmp.Or(o.Channels, 3), o.Height, o.Width}
	}
	return readRowGroups(ctx, pf, fr, leafColumns(pf, cols...), len(o.Pairs), o, d, func(tbl arrow.Table) error {
		return readPairTable(tbl, o, d)
	})
}

func readPairTable(tbl arrow.Table, o Options, d *Data) error {
	images := make([][]arrow.Array, len(o.Pairs))
	texts := make([][]arrow.Array, len(o.Pairs))
	for k, p := range o.Pairs {
		var err error
		if !o.LabelsOnly {
			if images[k], err = column(tbl, p.Image); err != nil {
				return err
			}
		}
		if o.Rows == nil {
			if texts[k], err = column(tbl, p.Text); err != nil {
				return err
			}
		}
	}
	per := len(o.Pairs)
	for row := range int(tbl.NumRows()) {
		for k, p := range o.Pairs {
			if o.Rows != nil {
				if d.next == len(o.Rows) || o.Rows[d.next] != d.Rows {
					d.Rows++
					continue
				}
				d.next++
			}
			if images[k] != nil {
				xa, i := at(images[k], row)
				if err := appendInput(d, xa, i, o); err != nil {
					return fmt.Errorf("row %d, column %q: %w", d.Rows/per, p.Image, err)
				}
			}
			if texts[k] != nil {
				ta, j := at(texts[k], row)
				s, ok := text(ta, j)
				if !ok {
					return fmt.Errorf("row %d, column %q: not a string", d.Rows/per, p.Text)
				}
				d.Text = append(d.Text, s)
			}
			d.Rows++
		}
	}
	return nil
}
