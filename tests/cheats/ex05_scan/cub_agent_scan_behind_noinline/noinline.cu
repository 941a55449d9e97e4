// Same as tests/cheats/ex05_scan/cub_agent_scan_in_own_kernel, with the CUB calls behind __noinline__:
// CUB's code is emitted in those .func, not in the entries; the forbidden_headers check
// (library_code) scans only the .loc lines between an .entry and the next function.
#define SCAN_INLINE __noinline__
