// Command gatepipe-supervisor is the supervisor gatepipe puts between
// itself and each command it runs (package internal/supervise), built
// small so that it starts in about a millisecond; without it beside the
// gatepipe binary, gatepipe re-executes itself in its place.
package main

import (
	"fmt"
	"os"

	_ "github.com/gatepipe/gatepipe/internal/supervise" // takes over in init when started by gatepipe
)

func main() {
	fmt.Fprintln(os.Stderr, "gatepipe-supervisor is started by gatepipe, between it and the commands it runs; it has no use of its own.")
	os.Exit(2)
}
