/* The grader's kernel tracer: a CUDA injection library (CUDA_INJECTION64_PATH) that records the
 * name of every kernel the worker's process runs on the GPU, whoever launched it (the submission's
 * RawKernel, CuPy, cuBLAS, torch, Triton, a CUDA graph), for the own-kernels check (DESIGN must 9).
 *
 * The CUDA driver loads this library when the worker initialises CUDA, before any submission code
 * runs, and calls InitializeInjection. That enables CUPTI activity records of kind CONCURRENT_KERNEL
 * (GPU timestamps; kernels are not serialised). Completed records are written, one line per
 * kernel, "K <name>\n", to the file descriptor named by GRADE_KERNEL_TRACE_FD: a file the grader
 * opened and reads from its own process. Lines "R <version>" (ready) and "E <message>" (could not
 * start) say whether tracing is on. The worker's trusted code calls grader_trace_flush() at the end
 * of each request so that the grader sees that request's kernels in its reply's wake.
 *
 * Built by grader.sandbox.kernel_trace with the system C compiler against the CUDA toolkit's CUPTI
 * (cupti.h, libcupti.so); see the CUPTI documentation, "Activity API" and "CUPTI injection". */
#include <cupti.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityKernel10 KernelRecord;
#else
typedef CUpti_ActivityKernel9 KernelRecord;   /* the name field is at the same offset in both */
#endif

#define BUFFER_BYTES (8u << 20)

static int trace_fd = -1;

static void write_all(const char *data, size_t n) {
    while (n > 0 && trace_fd >= 0) {
        ssize_t w = write(trace_fd, data, n);
        if (w <= 0) return;
        data += w;
        n -= (size_t)w;
    }
}

static void say(char kind, const char *text) {
    char line[512];
    int n = snprintf(line, sizeof line, "%c %s\n", kind, text);
    if (n > 0) write_all(line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    *buffer = (uint8_t *)aligned_alloc(8, BUFFER_BYTES);
    *size = *buffer ? BUFFER_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid) {
    (void)ctx; (void)stream; (void)size;
    CUpti_Activity *record = NULL;
    char out[1 << 16];
    size_t used = 0;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL)
            continue;
        const char *name = ((const KernelRecord *)record)->name;
        size_t len = name ? strlen(name) : 0;
        if (len > 4000) len = 4000;
        if (used + len + 4 > sizeof out) {
            write_all(out, used);
            used = 0;
        }
        out[used++] = 'K';
        out[used++] = ' ';
        if (len) memcpy(out + used, name, len);
        else { memcpy(out + used, "?", 1); len = 1; }
        used += len;
        out[used++] = '\n';
    }
    write_all(out, used);
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped) {
        char text[64];
        snprintf(text, sizeof text, "%zu kernel records dropped", dropped);
        say('D', text);
    }
    free(buffer);
}

/* Called by the worker (ctypes) at the end of every request: deliver every completed record now. */
int grader_trace_flush(void) {
    return cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS ? 0 : -1;
}

static void at_exit(void) { grader_trace_flush(); }

int InitializeInjection(void) {
    const char *fd = getenv("GRADE_KERNEL_TRACE_FD");
    if (!fd) return 1;
    trace_fd = atoi(fd);
    CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (r == CUPTI_SUCCESS) r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r != CUPTI_SUCCESS) {
        const char *text = NULL;
        cuptiGetResultString(r, &text);
        say('E', text ? text : "CUPTI failed to start");
        return 1;
    }
    atexit(at_exit);
    char version[32];
    snprintf(version, sizeof version, "CUPTI %d", (int)CUPTI_API_VERSION);
    say('R', version);
    return 1;
}
