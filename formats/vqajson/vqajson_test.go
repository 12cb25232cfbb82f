package vqajson

import (
	"strings"
	"testing"
)

const clevrSample = `{"info": {"split": "train", "version": "1.0"}, "questions": [
 {"image_index": 0, "program": [{"inputs": [], "function": "scene", "value_inputs": []}], "question_index": 0,
  "image_filename": "CLEVR_train_000000.png", "question_family_index": 29, "split": "train", "answer": "yes",
  "question": "Are there more big green things than large purple shiny cubes?"},
 {"image_filename": "CLEVR_train_000001.png", "question": "How many spheres are there?", "answer": "3"}]}`

func TestReadCLEVRQuestions(t *testing.T) {
	got, err := Read(strings.NewReader(clevrSample), "CLEVR_train_questions.json")
	if err != nil {
		t.Fatal(err)
	}
	want := []Question{{"CLEVR_train_000000.png", "Are there more big green things than large purple shiny cubes?", "yes"}, {"CLEVR_train_000001.png", "How many spheres are there?", "3"}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %+v", got)
	}
	for _, c := range []struct{ in, want string }{
		{`[]`, "want a JSON object"},
		{`{"info": {}}`, "no questions"},
		{`{"questions": {}}`, "questions is not an array"},
		{`{"questions": [{"image_filename": "a.png", "question": "q?"}]}`, "question 0 lacks"},
		{`{"questions": [{"image_filename": "a.png", "question": "q?", "answer": "1"}, {"image_filename": 3}]}`, "question 1:"},
		{`{"questions": [{"image_filename": "a.png", "question": "q?", "answer": "1"}`, "offset"},
	} {
		if _, err := Read(strings.NewReader(c.in), "q.json"); err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "q.json: offset ") {
			t.Errorf("%s: error %v, want one naming the file, the offset and %q", c.in, err, c.want)
		}
	}
}

// FuzzRead: any input gives complete questions or an error, never a
// panic.
func FuzzRead(f *testing.F) {
	f.Add([]byte(clevrSample))
	f.Add([]byte(`{"questions": [{"image_filename": "a", "question": "b", "answer": "c"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		qs, err := Read(strings.NewReader(string(data)), "fuzz")
		if err != nil {
			return
		}
		for _, q := range qs {
			if q.Image == "" || q.Question == "" || q.Answer == "" {
				t.Fatalf("incomplete question %+v", q)
			}
		}
	})
}
