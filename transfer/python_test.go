package transfer

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// runPython runs a Python script with Debian's python3, the JSON of in on
// its standard input, and decodes the JSON it prints (NaN as null, 0) into
// out.
func runPython(t *testing.T, script string, in, out any) {
	t.Helper()
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/usr/bin/python3", "-c", script)
	cmd.Stdin = strings.NewReader(string(data))
	cmd.Stderr = os.Stderr
	res, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(strings.ReplaceAll(string(res), "NaN", "null")), out); err != nil {
		t.Fatalf("%v: %s", err, res)
	}
}
