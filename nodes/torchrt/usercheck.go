package torchrt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/gatepipe/gatepipe/nodes"
)

// userCheckTimeout bounds one check: importing torch and the user's file
// and one forward pass of a batch of two.
const userCheckTimeout = 5 * time.Minute

// userChecks remembers the checks a Machine ran, by key (interpreter and
// check); they travel to apply's children with the Machine.
type userChecks struct {
	mu   sync.Mutex
	done map[string]nodes.EncoderResult
}

// checkKey identifies one check: the interpreter and everything the
// result depends on (the file's and inputs' hash among them).
func checkKey(python string, c nodes.EncoderCheck) string {
	data, _ := json.Marshal(struct {
		Python string
		C      nodes.EncoderCheck
	}{python, c})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}

// CheckEncoder implements nodes.EncoderChecker: it runs the worker's
// user.py as a script with python, which imports the file, calls the
// callable with its arguments and runs a fake batch; once per check.
func (m *Machine) CheckEncoder(python string, c nodes.EncoderCheck) nodes.EncoderResult {
	if python == "" {
		python = Python()
	}
	key := checkKey(python, c)
	m.checks.mu.Lock()
	if r, ok := m.checks.done[key]; ok {
		m.checks.mu.Unlock()
		return r
	}
	m.checks.mu.Unlock()
	if m.TorchProblem(python) != "" {
		// Nothing to check with: the blocks that use the encoder say
		// that their runtime needs torch.
		return nodes.EncoderResult{}
	}
	r := RunEncoderCheck(context.Background(), python, c)
	m.checks.mu.Lock()
	if m.checks.done == nil {
		m.checks.done = map[string]nodes.EncoderResult{}
	}
	m.checks.done[key] = r
	m.checks.mu.Unlock()
	return r
}

// RunEncoderCheck runs one check with python.
func RunEncoderCheck(ctx context.Context, python string, c nodes.EncoderCheck) nodes.EncoderResult {
	src, err := workerFiles.ReadFile(workerDir + "/user.py")
	if err != nil {
		return nodes.EncoderResult{Error: "the worker has no user.py (internal error)"}
	}
	var args any = map[string]any{}
	if c.Args != "" {
		if err := json.Unmarshal([]byte(c.Args), &args); err != nil {
			return nodes.EncoderResult{Error: "args: " + err.Error()}
		}
	}
	req, _ := json.Marshal(map[string]any{"arch": c.Arch, "args": args, "shape": c.Shape})
	ctx, cancel := context.WithTimeout(ctx, userCheckTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-c", string(src), string(req))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	line := strings.TrimSpace(string(out))
	if i := strings.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:] // the module may print
	}
	var r nodes.EncoderResult
	if jerr := json.Unmarshal([]byte(line), &r); jerr != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		if err == nil {
			err = jerr
		}
		return nodes.EncoderResult{Error: fmt.Sprintf("%s did not finish the check (%v)%s", python, err, lastLine(msg))}
	}
	return r
}

func lastLine(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}
