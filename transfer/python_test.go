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

// needNumpy skips the test where Debian's numpy and scipy are missing, and
// fails it in CI, which installs them.
func needNumpy(t *testing.T) {
	t.Helper()
	if exec.Command("/usr/bin/python3", "-c", "import numpy, scipy").Run() != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3-numpy and python3-scipy are needed for the metrics' reference checks")
		}
		t.Skip("python3-numpy or python3-scipy is not installed")
	}
}
