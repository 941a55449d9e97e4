// a second copy under a suffix the word check skipped
namespace vllm { namespace detail { __device__ int block_of(const int* table, int i) { return table[i / 16]; } } }
