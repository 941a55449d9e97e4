// the cheat's own kernel is never used
extern "C" __global__ void unused(float* x) { x[0] = 0.0f; }
