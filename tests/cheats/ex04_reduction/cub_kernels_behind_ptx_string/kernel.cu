// Variant of cub_kernels_behind_ptx_comment that survives grader/ptx.py strip_comments: ptxas accepts
// a multi-line string literal in ".pragma", which _COMMENT_OR_STRING ("[^"\n]*") does not see as a
// string. The kernel "unused" (first in the PTX) holds .pragma "\n/*\n": the stripper takes /* for a
// comment and removes everything up to the */ in the functor's string inside CUB's first kernel (both
// real CUB .entry headers and their cub/ .loc lines); the functor's string then shows the parser
// ".entry <CUB kernel>" + ".loc 1 1 1" lines (kernel.cu) and a ".func hide" that takes the rest. ptxas sees
// two unknown pragmas (ignored). Names: CuPy's bundled CUB 3.1.2, sm_90.
// No reduction written here: CUB's own __global__ kernels (cub::detail::reduce::DeviceReduceKernel and
// DeviceReduceSingleTileKernel, the two passes of cub::DeviceReduce::Sum) explicitly instantiated with
// a reduction functor and a policy defined in this file. The functor's operator() is inlined into
// CUB's kernels, so each entry's PTX carries a .loc line naming kernel.cu: entries_from counts them as
// the submission's own code, and the module is loaded in the own window (unlike the instantiations of
// cub_namesake_instantiations, which had no .loc line here and were launched from CuPy's module).
#define CUB_RUNTIME_FUNCTION
#include <cub/device/dispatch/kernels/reduce.cuh>

struct Add {   // "my" reduction
    __device__ __forceinline__ float operator()(float a, float b) const {
        asm volatile(".pragma \"\n*/\n.entry _ZN3cub17CUB_300102_SM_9006detail6reduce18DeviceReduceKernelI6TuningPKfi3AddfN4cuda3std3__48identityEEEvT0_PT3_T1_NS0_13GridEvenShareISF_EET2_T4_\n.loc 1 1 1\n.entry _ZN3cub17CUB_300102_SM_9006detail6reduce28DeviceReduceSingleTileKernelI6TuningPKfPfi3AddffN4cuda3std3__48identityEEEvT0_T1_T2_T3_T4_T6_\n.loc 1 1 1\n.func hide\n/*\n\";");
        return a + b;
    }
};

struct Tuning {   // a policy chain with one link, as DeviceReduce's dispatch would pass
    struct ActivePolicy {
        using ReducePolicy = cub::AgentReducePolicy<256, 16, float, 4, cub::BLOCK_REDUCE_WARP_REDUCTIONS, cub::LOAD_LDG>;
        using SingleTilePolicy = ReducePolicy;
    };
};

template __global__ void cub::detail::reduce::DeviceReduceKernel<Tuning, const float*, int, Add, float, ::cuda::std::identity>(
    const float*, float*, int, cub::GridEvenShare<int>, Add, ::cuda::std::identity);
template __global__ void cub::detail::reduce::DeviceReduceSingleTileKernel<Tuning, const float*, float*, int, Add, float, float,
                                                                           ::cuda::std::identity>(
    const float*, float*, int, Add, float, ::cuda::std::identity);

// for the static check ("declares no __global__ kernel"); never launched
extern "C" __global__ void unused(float* p) { if (p) p[0] = 0.0f; asm volatile(".pragma \"\n/*\n\";"); }
