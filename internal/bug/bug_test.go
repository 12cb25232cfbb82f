package bug

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestRecover(t *testing.T) {
	f := func() (err error) {
		defer Recover(&err)
		var m map[string]int
		m["x"] = 1
		return nil
	}
	err := f()
	if !Is(err) || !strings.Contains(err.Error(), "assignment to entry in nil map") || !strings.Contains(err.Error(), "bug_test.go") {
		t.Fatalf("err = %v", err)
	}
	if !Is(fmt.Errorf("node x: %w", err)) || !Is(errors.New("child said: "+err.Error())) {
		t.Fatal("a wrapped or relayed internal error is not recognised")
	}
	if Is(errors.New("plain failure")) || Is(nil) {
		t.Fatal("an ordinary error is taken for an internal one")
	}
}
