package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TestApplyOnATerminal runs the real binary with its stderr on a pseudo
// terminal while two trainers log progress and a download trickles in,
// and checks the screen holds a bar for each in its own unit, for nodes
// run inside apply and in their own `gatepipe exec` processes (whose
// progress is relayed to apply's display).
func TestApplyOnATerminal(t *testing.T) {
	for _, isolation := range []string{"none", "process"} {
		t.Run(isolation, func(t *testing.T) { applyOnATerminal(t, isolation) })
	}
}

func applyOnATerminal(t *testing.T, isolation string) {
	body := make([]byte, 6<<20)
	for i := range body {
		body[i] = byte(i * 7)
	}
	sum := sha256.Sum256(body)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		for off := 0; off < len(body); off += 64 << 10 {
			if _, err := w.Write(body[off:min(off+64<<10, len(body))]); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			time.Sleep(40 * time.Millisecond)
		}
	}))
	defer srv.Close()
	dir, cache := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "trainer.sh"), `total=$1; i=0
while [ $i -lt $total ]; do i=$((i+1)); echo "{\"step\": $i, \"total\": $total}" >> "$GATEPIPE_OUT_DIR/log.jsonl"; sleep 0.05; done
echo '{"model":"m","benchmark":"b","metrics":{"Acc@1":{"value":50,"higher_is_better":true}}}' > "$GATEPIPE_OUT_DIR/metrics.json"
`)
	writeFile(t, filepath.Join(dir, "main.hcl"), fmt.Sprintf(`
command "train" {
  for_each   = { convnet = 80, vit = 120 }
  run        = ["sh", "trainer.sh", each.value]
  inputs     = ["trainer.sh"]
  experiment = { model = each.key, benchmark = "toy", seed = 0 }
}
dataset "cifar" {
  source {
    url    = "%s/cifar-100-binary.bin"
    sha256 = "%s"
  }
  format = "raw"
}
`, srv.URL, hex.EncodeToString(sum[:])))
	cmd := exec.Command(binPath, "apply", "-parallelism", "3", "-devices", "cpu:3", "-isolation", isolation, dir)
	cmd.Env = append(os.Environ(), "GATEPIPE_CACHE_DIR="+cache)
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skip("no pseudo-terminal here:", err)
	}
	defer ptmx.Close()
	pty.Setsize(ptmx, &pty.Winsize{Rows: 24, Cols: 110})
	cmd.Stderr, cmd.Stdout = tty, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var mu sync.Mutex
	var out strings.Builder
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := ptmx.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	var mid string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		mu.Lock()
		s := screen(out.String())
		mu.Unlock()
		if strings.Contains(s, "MiB/s") && strings.Count(s, "steps") == 2 && strings.Contains(s, "ETA") {
			mid = s
			break
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("apply: %v\n%s", err, out.String())
	}
	if mid == "" {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("no screen showed both trainers' bars and the download's:\n%s", screen(out.String()))
	}
	t.Logf("screen while running:\n%s", mid)
	for _, want := range []string{`command.train["convnet"]`, `command.train["vit"]`, "dataset.cifar", "apply: "} {
		if !strings.Contains(mid, want) {
			t.Errorf("screen lacks %q", want)
		}
	}
	mu.Lock()
	final := screen(out.String())
	mu.Unlock()
	if !strings.Contains(final, "apply: 3 of 3 nodes") || strings.Contains(final, "steps") {
		t.Errorf("final screen keeps finished bars or lacks the total:\n%s", final)
	}
}
