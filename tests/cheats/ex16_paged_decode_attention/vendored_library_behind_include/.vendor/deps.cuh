#include "vllm/attention_kernels.cuh"
