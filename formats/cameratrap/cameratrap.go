// Package cameratrap reads camera-trap annotations in the COCO-style JSON
// of LILA and the iWildCam competitions: the images, each with the
// sequence (seq_id) it was taken in and its place in it (seq_frame_num),
// and the per-sequence animal counts iWildCam 2022 publishes as a CSV
// (seq_id,count). A sequence is a short clip of consecutive frames.
package cameratrap

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Frame is one image of a sequence.
type Frame struct {
	// File is the image's file name (file_name).
	File string
	// Num is its place in the sequence (seq_frame_num).
	Num int
}

// image is the part of a COCO image record a sequence needs.
type image struct {
	ID          string `json:"id"`
	FileName    string `json:"file_name"`
	SeqID       string `json:"seq_id"`
	SeqFrameNum *int   `json:"seq_frame_num"`
}

// ReadSequences reads the "images" of a COCO-style camera-trap JSON (name
// is for errors) into each sequence's frames, in seq_frame_num order (ties
// in file order). The file is streamed: other keys (annotations,
// categories) are skipped without being kept. An image without file_name,
// seq_id or seq_frame_num, or with a negative frame number, is an error
// naming the file and its byte offset.
func ReadSequences(r io.Reader, name string) (map[string][]Frame, error) {
	dec := json.NewDecoder(r)
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s at byte %d: %s", name, dec.InputOffset(), fmt.Sprintf(format, args...))
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fail("not a JSON object (%v)", errOr(err, "no opening brace"))
	}
	seqs := map[string][]Frame{}
	found := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fail("%v", err)
		}
		key, _ := tok.(string)
		if key != "images" {
			if err := skip(dec); err != nil {
				return nil, fail("%v", err)
			}
			continue
		}
		found = true
		if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
			return nil, fail("images is not a list (%v)", errOr(err, "another value"))
		}
		for i := 0; dec.More(); i++ {
			var im image
			if err := dec.Decode(&im); err != nil {
				return nil, fail("image %d: %v", i, err)
			}
			switch {
			case im.FileName == "" || im.SeqID == "":
				return nil, fail("image %d (%q) has no file_name or seq_id", i, im.ID)
			case im.SeqFrameNum == nil || *im.SeqFrameNum < 0:
				return nil, fail("image %d (%s) has no seq_frame_num of 0 or more", i, im.FileName)
			}
			seqs[im.SeqID] = append(seqs[im.SeqID], Frame{File: im.FileName, Num: *im.SeqFrameNum})
		}
		if _, err := dec.Token(); err != nil { // ]
			return nil, fail("%v", err)
		}
	}
	if _, err := dec.Token(); err != nil { // }
		return nil, fail("%v", err)
	}
	if !found {
		return nil, fmt.Errorf("%s: no \"images\" list (a COCO-style camera-trap file has one)", name)
	}
	for _, frames := range seqs {
		slices.SortStableFunc(frames, func(a, b Frame) int { return a.Num - b.Num })
	}
	return seqs, nil
}

// skip reads one JSON value (of any depth) without keeping it.
func skip(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				depth++
			default:
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
	}
}

func errOr(err error, what string) string {
	if err != nil {
		return err.Error()
	}
	return what
}

// ReadCounts reads a CSV whose header names seq_id and count into each
// sequence's count (name is for errors): a count that is not a finite
// number of at least 0, or a sequence listed twice, is an error naming the
// line.
func ReadCounts(r io.Reader, name string) (map[string]float64, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: no header: %w", name, err)
	}
	seqCol, countCol := -1, -1
	for i, h := range header {
		switch strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")) {
		case "seq_id":
			seqCol = i
		case "count":
			countCol = i
		}
	}
	if seqCol < 0 || countCol < 0 {
		return nil, fmt.Errorf("%s: the header %q lacks seq_id or count", name, header)
	}
	out := map[string]float64{}
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		seq := strings.TrimSpace(rec[seqCol])
		v, err := strconv.ParseFloat(strings.TrimSpace(rec[countCol]), 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Errorf("%s line %d: count %q is not a number of at least 0", name, line, rec[countCol])
		}
		if _, dup := out[seq]; dup || seq == "" {
			return nil, fmt.Errorf("%s line %d: sequence %q is empty or listed twice", name, line, seq)
		}
		out[seq] = v
	}
	return out, nil
}
