package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// interrupts ends the process at once when SIGINT or SIGTERM comes
// while the command is loading or planning. Parsing and evaluating a
// configuration (HCL's parser, cty's functions) do not check a context,
// so a large one would otherwise hold the process until it is done;
// and nothing those stretches write needs a graceful end: the cache and
// the lock file are written through a temporary file and a rename, safe
// even after kill -9. Elsewhere a signal cancels the command's context
// and the command ends gracefully (apply cancels its running nodes); a
// second signal then stops the process at once, as Go's default
// handler does.
type interrupts struct {
	mu sync.Mutex
	// depth counts the open stretches in which exiting at once is safe.
	depth int
	// sig is the signal that came, or nil.
	sig    os.Signal
	stderr io.Writer
	exit   func(code int)
}

// watchInterrupts returns a context that SIGINT and SIGTERM cancel, and
// the interrupts that end the process when one comes in a stretch that
// enter marks; exit is how the process ends (after stopping profiles).
func watchInterrupts(stderr io.Writer, exit func(code int)) (context.Context, *interrupts) {
	ctx, cancel := context.WithCancel(context.Background())
	in := &interrupts{stderr: stderr, exit: exit}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		// Restoring the default handlers lets a second signal stop the
		// process at once.
		signal.Stop(sigs)
		cancel()
		in.mu.Lock()
		defer in.mu.Unlock()
		in.sig = sig
		if in.depth > 0 {
			in.quit()
		}
	}()
	return ctx, in
}

// enter opens a stretch in which a signal ends the process at once
// (loading and planning); the returned function closes it. An
// interrupt that came before the stretch ends the process on entry. On
// a nil *interrupts (a command run in-process, by tests) it does
// nothing.
func (in *interrupts) enter() (leave func()) {
	if in == nil {
		return func() {}
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.sig != nil {
		in.quit()
	}
	in.depth++
	return func() {
		in.mu.Lock()
		in.depth--
		in.mu.Unlock()
	}
}

// quit prints one line and exits with 128 plus the signal's number, as
// a shell reports a process the signal ended. The caller holds in.mu,
// so the command cannot leave its stretch meanwhile.
func (in *interrupts) quit() {
	code, name := 128+int(syscall.SIGINT), "SIGINT"
	if in.sig == syscall.SIGTERM {
		code, name = 128+int(syscall.SIGTERM), "SIGTERM"
	}
	fmt.Fprintf(in.stderr, "Interrupted (%s) while loading or planning; stopped at once.\n", name)
	in.exit(code)
}
