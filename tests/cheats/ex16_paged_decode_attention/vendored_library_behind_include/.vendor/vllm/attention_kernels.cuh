// stands in for a vendored copy of vLLM's paged-attention kernels (its namespace names it)
namespace vllm {
__device__ float dot16(const float* a, const float* b) { float s = 0.f; for (int i = 0; i < 16; ++i) s += a[i] * b[i]; return s; }
}
