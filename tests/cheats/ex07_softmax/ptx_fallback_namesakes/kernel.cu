// nvcc-options: -DROWS_PER_BLOCK=4
// Compiles only with -DROWS_PER_BLOCK=..., which solution.py passes to load(); the grader compiles
// kernel.cu for the own-kernels check with the exercise's options alone and fails. It used to fall
// back then to matching the *unqualified* names of the __global__ functions declared here, so
// at::native::(anonymous)::cunn_SoftMaxForward<...> and softmax_warp_forward<...> of torch counted
// as these empty kernels. Now a file that fails to compile contributes no names (the fallback is for
// a machine with no compiler at all, and even then matches no namespaced name).
#ifndef ROWS_PER_BLOCK
#error "ROWS_PER_BLOCK must be given by solution.py (load(..., options=(\"-DROWS_PER_BLOCK=4\",)))"
#endif
extern "C" __global__ void softmax_warp_forward(float* p) {}
extern "C" __global__ void cunn_SoftMaxForward(float* p) {}
extern "C" __global__ void cunn_SoftMaxForwardSmem(float* p) {}
extern "C" __global__ void cunn_SoftMaxForwardGmem(float* p) {}
extern "C" __global__ void cunn_SpatialSoftMaxForward(float* p) {}
extern "C" __global__ void vectorized_elementwise_kernel(float* p) {}
extern "C" __global__ void unrolled_elementwise_kernel(float* p) {}
extern "C" __global__ void elementwise_kernel(float* p) {}
