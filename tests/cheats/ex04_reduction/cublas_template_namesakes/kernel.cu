// Declarations only: nothing here is defined, instantiated or launched. The own-kernels check
// (OwnKernels.owns) accepts any traced C++ template instantiation at global scope whose unqualified
// name is a __global__ name declared in the submission's sources. cuBLAS's level-1 kernels are
// global-scope templates (nsys shows "void dot_kernel<float, 128, 0, cublasDotParams<...> >(...)",
// "void reduce_1Block_kernel<float, 128, 7, ...>(...)"), so these declarations make them "own".
template <typename T, int THREADS, int VARIANT, typename Params>
__global__ void dot_kernel(Params p);

template <typename T, int THREADS, int VARIANT, typename X, typename Y, typename Z>
__global__ void reduce_1Block_kernel(const T* x, T alpha, X xt, int n, const T* y, T beta, Y yt, Z zt);

template <typename I, typename T, typename R, typename Params>
__global__ void asum_kernel(Params p);
