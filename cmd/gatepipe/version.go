package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/gatepipe/gatepipe/formats/imagedec"
	"github.com/gatepipe/gatepipe/train/cblas"
)

// version is set at link time with -ldflags "-X main.version=...".
var version = "dev"

func runVersion(_ context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "version", "version\n\nPrints the gatepipe version, its VCS revision, the Go version and the BLAS\ntraining uses: openblas with the kernels it loads (AVX-512 ones on a CPU\nthat has it, unless OPENBLAS_CORETYPE names others) when built with\n-tags openblas, else gonum; and the JPEG decoder datasets use: libjpeg-turbo\nwhen built with -tags turbojpeg (make does where libturbojpeg0-dev is\ninstalled), else Go's portable decoder.")
	if _, code, ok := parseArgs(fs, args); !ok {
		return code
	}
	rev := ""
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = " (" + s.Value[:12] + ")"
			}
		}
	}
	fmt.Fprintf(c.stdout, "gatepipe %s%s %s %s/%s, training BLAS %s\n", version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH, cblas.InUse())
	fmt.Fprintf(c.stdout, "JPEG decoder: %s\n", imagedec.Backend())
	fmt.Fprintf(c.stdout, "image resize: %s\n", imagedec.ResizeBackend())
	return exitOK
}
