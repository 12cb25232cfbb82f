//go:build openblas && cgo

package cblas

/*
#cgo LDFLAGS: -ldl
#include <cblas.h>
#include <dlfcn.h>
#include <stdlib.h>

typedef void (*sgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint, blasint, blasint,
	float, const float *, blasint, const float *, blasint, float, float *, blasint);
typedef void (*sgemv_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, blasint, blasint,
	float, const float *, blasint, const float *, blasint, float, float *, blasint);

static sgemm_fn gp_sgemm_ptr;
static sgemv_fn gp_sgemv_ptr;
static char *(*gp_corename_ptr)(void);

// gp_load opens OpenBLAS with OPENBLAS_CORETYPE=core (unless core is
// empty), which its loader reads, and finds the functions used here. It
// returns NULL or an error message.
static const char *gp_load(const char *lib, const char *core) {
	int set = core[0] != 0;
	if (set) setenv("OPENBLAS_CORETYPE", core, 1);
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (set) unsetenv("OPENBLAS_CORETYPE");
	if (h == NULL) return dlerror();
	void (*threads)(int) = (void (*)(int))dlsym(h, "openblas_set_num_threads");
	gp_sgemm_ptr = (sgemm_fn)dlsym(h, "cblas_sgemm");
	gp_sgemv_ptr = (sgemv_fn)dlsym(h, "cblas_sgemv");
	gp_corename_ptr = (char *(*)(void))dlsym(h, "openblas_get_corename");
	if (threads == NULL || gp_sgemm_ptr == NULL || gp_sgemv_ptr == NULL || gp_corename_ptr == NULL) {
		return "a cblas_sgemm, cblas_sgemv, openblas_set_num_threads or openblas_get_corename symbol is missing";
	}
	threads(1);
	return NULL;
}

static const char *gp_corename(void) { return gp_corename_ptr(); }

static void gp_sgemm(enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, blasint m, blasint n, blasint k, float alpha,
	const float *a, blasint lda, const float *b, blasint ldb, float beta, float *c, blasint ldc) {
	gp_sgemm_ptr(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static void gp_sgemv(enum CBLAS_TRANSPOSE ta, blasint m, blasint n, float alpha, const float *a, blasint lda,
	const float *x, blasint incx, float beta, float *y, blasint incy) {
	gp_sgemv_ptr(CblasRowMajor, ta, m, n, alpha, a, lda, x, incx, beta, y, incy);
}
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"

	"github.com/gatepipe/gatepipe/internal/blascore"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
	G "gorgonia.org/gorgonia"
)

// Name says which BLAS Enable installs.
const Name = "openblas"

// impl is gonum's native BLAS with OpenBLAS's single-precision matrix
// products.
type impl struct{ gonum.Implementation }

func trans(t blas.Transpose) C.enum_CBLAS_TRANSPOSE {
	if t == blas.NoTrans {
		return C.CblasNoTrans
	}
	return C.CblasTrans
}

func ptr(s []float32) *C.float {
	if len(s) == 0 {
		return nil
	}
	return (*C.float)(unsafe.Pointer(&s[0]))
}

// Sgemm computes c = alpha * op(a) * op(b) + beta * c (row major). A
// large product is split into GOMAXPROCS blocks of rows (or of columns,
// when c is wide), each a one-thread OpenBLAS call on its own goroutine.
func (impl) Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	workers := runtime.GOMAXPROCS(0)
	if workers == 1 || m*n*k < splitWork || max(m, n) < 2*workers {
		serial{}.Sgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			if m >= n {
				i0, i1 := w*m/workers, (w+1)*m/workers
				aw := a[i0:] // rows of a's transpose are its columns
				if tA == blas.NoTrans {
					aw = a[i0*lda:]
				}
				serial{}.Sgemm(tA, tB, i1-i0, n, k, alpha, aw, lda, b, ldb, beta, c[i0*ldc:], ldc)
				return
			}
			j0, j1 := w*n/workers, (w+1)*n/workers
			bw := b[j0:] // columns of b are its transpose's rows
			if tB == blas.Trans {
				bw = b[j0*ldb:]
			}
			serial{}.Sgemm(tA, tB, m, j1-j0, k, alpha, a, lda, bw, ldb, beta, c[j0:], ldc)
		})
	}
	wg.Wait()
}

// splitWork is the product size (m*n*k) from which Sgemm splits it.
const splitWork = 1 << 18

// serial calls OpenBLAS on the calling thread.
type serial struct{}

// Serial returns the one-thread matrix product, for callers that run
// their own goroutines (the convolution ops, an image per worker).
func Serial() Sgemmer {
	if _, err := loaded(); err != nil {
		return gonum.Implementation{}
	}
	return serial{}
}

func (serial) Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	C.gp_sgemm(trans(tA), trans(tB), C.blasint(m), C.blasint(n), C.blasint(k), C.float(alpha),
		ptr(a), C.blasint(lda), ptr(b), C.blasint(ldb), C.float(beta), ptr(c), C.blasint(ldc))
}

// Sgemv computes y = alpha * op(a) * x + beta * y (row major).
func (impl) Sgemv(tA blas.Transpose, m, n int, alpha float32, a []float32, lda int, x []float32, incX int, beta float32, y []float32, incY int) {
	if m == 0 || n == 0 {
		return
	}
	C.gp_sgemv(trans(tA), C.blasint(m), C.blasint(n), C.float(alpha), ptr(a), C.blasint(lda),
		ptr(x), C.blasint(incX), C.float(beta), ptr(y), C.blasint(incY))
}

// library is the OpenBLAS shared library Enable loads.
const library = "libopenblas.so.0"

// loaded holds the outcome of loading OpenBLAS, once per process.
var loaded = sync.OnceValues(func() (core string, err error) {
	choice := blascore.Choose(blascore.Host(), os.Getenv(blascore.EnvVar))
	lib, c := C.CString(library), C.CString(choice)
	defer C.free(unsafe.Pointer(lib))
	defer C.free(unsafe.Pointer(c))
	if msg := C.gp_load(lib, c); msg != nil {
		return "", fmt.Errorf("loading %s: %s", library, C.GoString(msg))
	}
	return C.GoString(C.gp_corename()), nil
})

// InUse loads OpenBLAS and says what training's matrix products run on:
// "openblas (Cooperlake kernels)", or "gonum (why OpenBLAS could not be
// loaded)".
func InUse() string {
	core, err := loaded()
	if err != nil {
		return fmt.Sprintf("gonum (%v)", err)
	}
	return fmt.Sprintf("%s (%s kernels)", Name, core)
}

// Enable makes gorgonia use OpenBLAS, loaded with the kernels
// blascore.Choose picks for this CPU (OPENBLAS_CORETYPE overrides them),
// and returns InUse: gonum's Go BLAS stays when the library cannot be
// loaded. OpenBLAS itself runs on one thread:
// Sgemm spreads large products over GOMAXPROCS goroutines (the node's CPU
// share when it runs in its own process), and callers that work in
// parallel already use Serial, so the CPUs are never oversubscribed.
func Enable() string {
	if _, err := loaded(); err == nil {
		G.Use(impl{})
	}
	return InUse()
}
