// Package vqajson reads visual-question-answering question files in
// CLEVR's JSON layout: {"info": ..., "questions": [{"image_filename",
// "question", "answer", ...}, ...]}. The questions array is streamed, one
// question at a time, so memory grows with the questions kept, not with
// what else the file holds.
package vqajson

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Question is one question about one image, with its answer.
type Question struct {
	Image    string `json:"image_filename"`
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

// maxQuestion bounds one question object in bytes: CLEVR's are a few
// hundred (with the functional program); a larger one is damage.
const maxQuestion = 1 << 20

// ReadFile reads the questions of a CLEVR question file.
func ReadFile(path string) ([]Question, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, filepath.Base(path))
}

// Read reads the questions array of r (name is for messages). Every
// question needs an image, a question and an answer (CLEVR's test split
// has no answers: it cannot be scored, and is an error here). Errors name
// the file and the byte offset.
func Read(r io.Reader, name string) ([]Question, error) {
	dec := json.NewDecoder(r)
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: offset %d: %s", name, dec.InputOffset(), fmt.Sprintf(format, args...))
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fail("want a JSON object with a questions array (CLEVR's layout)")
	}
	var out []Question
	found := false
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, fail("%v", err)
		}
		if key != "questions" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, fail("%v", err)
			}
			continue
		}
		found = true
		if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
			return nil, fail("questions is not an array")
		}
		for i := 0; dec.More(); i++ {
			start := dec.InputOffset()
			var q Question
			if err := dec.Decode(&q); err != nil {
				return nil, fail("question %d: %v", i, err)
			}
			if dec.InputOffset()-start > maxQuestion {
				return nil, fail("question %d is %d bytes, more than a question holds", i, dec.InputOffset()-start)
			}
			if q.Image == "" || q.Question == "" || q.Answer == "" {
				return nil, fail("question %d lacks image_filename, question or answer (CLEVR's test questions have no answers)", i)
			}
			out = append(out, q)
		}
		if _, err := dec.Token(); err != nil {
			return nil, fail("%v", err)
		}
	}
	if _, err := dec.Token(); err != nil && !errors.Is(err, io.EOF) {
		return nil, fail("%v", err)
	}
	if !found || len(out) == 0 {
		return nil, fail("no questions")
	}
	return out, nil
}
