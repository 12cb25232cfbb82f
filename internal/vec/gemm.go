package vec

// Gemm computes C[m][n] += sum_k A(i,k) * B[k][n], where C and B are
// row-major with row lengths ldc and ldb, and A(i,k) = a[i*ai + k*ak] —
// so (ai, ak) = (lda, 1) multiplies by A and (1, lda) by A transposed.
func Gemm(c []float32, ldc int, a []float32, ai, ak int, b []float32, ldb int, m, k, n int) {
	gemmImpl(c, ldc, a, ai, ak, b, ldb, m, k, n)
}

// GemmBT computes C[m][n] += sum_k A[i][k] * B[j][k] (B transposed), all
// row-major with row lengths ldc, lda, ldb.
func GemmBT(c []float32, ldc int, a []float32, lda int, b []float32, ldb int, m, k, n int) {
	gemmBTImpl(c, ldc, a, lda, b, ldb, m, k, n)
}

var (
	gemmImpl   = gemmGeneric
	gemmBTImpl = gemmBTGeneric
)

func gemmGeneric(c []float32, ldc int, a []float32, ai, ak int, b []float32, ldb int, m, k, n int) {
	for i := 0; i < m; i++ {
		ci := c[i*ldc : i*ldc+n]
		for kk := 0; kk < k; kk++ {
			axpyGeneric(ci, a[i*ai+kk*ak], b[kk*ldb:kk*ldb+n])
		}
	}
}

func gemmBTGeneric(c []float32, ldc int, a []float32, lda int, b []float32, ldb int, m, k, n int) {
	for i := 0; i < m; i++ {
		ai := a[i*lda : i*lda+k]
		for j := 0; j < n; j++ {
			c[i*ldc+j] += dotGeneric(ai, b[j*ldb:j*ldb+k])
		}
	}
}
