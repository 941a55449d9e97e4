/* The grader's kernel tracer: a CUDA injection library (CUDA_INJECTION64_PATH) that records every
 * kernel the worker's process launches, whoever launches it (the submission's RawKernel, CuPy,
 * cuBLAS, torch, Triton), and the other GPU work a library could do in its place, for the
 * own-kernels check (the graded result must be the work of the submission's own kernels).
 *
 * The CUDA driver loads this library when the worker initialises CUDA, before any submission code
 * runs, and calls InitializeInjection. That subscribes to CUPTI's callback API for the functions of
 * the driver and runtime APIs that the table TRACED_CBIDS lists (generated from the toolkit's
 * cupti_*_cbid.h when the library is built): every kernel launch, every memory copy but a host-to-
 * device one, the stream memory operations (cuStreamWaitValue*, cuStreamWriteValue*,
 * cuStreamBatchMemOp*), the module loads and unloads, and device resets and context destroys
 * (which free modules without an unload). The callback runs on the calling host
 * thread: the GPU is not involved. (CUPTI's kernel *activity* records were tried first: on the
 * H200 they made the grader's timed kernels 4-5x slower, see benchmarks/RESULTS.md.)
 *
 * Kernels are known by their code, not only by name: the worker's trusted code opens the "own
 * window" once (grader_trace_own_window), compiles and loads the submission's .cu files through
 * grader.kernel, and closes it for good before any submission code runs; the modules loaded in
 * that window are the submission's own. A launch through a CUfunction (cuLaunchKernel, ...Ex,
 * ...Cooperative...) is marked "+" when cuFuncGetModule puts its function in one of those modules,
 * "-" otherwise (another module: CuPy's, a library's, one the submission compiled or linked itself;
 * a runtime-API launch; a graph).
 *
 * Lines written to the file descriptor named by GRADE_KERNEL_TRACE_FD (a file the grader opened and
 * reads from its own process):
 *   R <version>        tracing is on            E <message>   tracing could not start
 *   K <seq> <m> <name> a kernel (m "+" from an own module, "-" not), or other GPU work named
 *                      <memcpy:FUNCTION>, <stream-memory-op:FUNCTION>, <host-memory:FUNCTION> or
 *                      <CUDA graph launch>; written
 *                      at once the first time it happens since the last flush (a write per new
 *                      line, none per repeat); seq counts K lines 1, 2, ...
 *   S <seq> <mac>      written by grader_trace_flush(), which the worker's trusted code calls before
 *                      each reply but a timed round's: the seq of the last K line, and the MAC of
 *                      every line the tracer wrote so far. The grader requires it, so a gap (K lines
 *                      truncated away), a missing flush (the call patched out) and any byte the
 *                      worker wrote, removed or rewrote in the file (a forged line, a line overwritten
 *                      in place) show.
 *   W <seq>            written by grader_trace_window_end(), which the worker's trusted code calls
 *                      the moment a timed round's calls are synchronised: from then on the first
 *                      launch, copy or stream operation (any thread, even one already noted) is
 *                      written as
 *   L <seq> <m> <name> work started after the timed window closed (numbered with the K lines), until
 *   B <seq>            written by grader_trace_request(), which the worker's trusted code calls as
 *                      it receives each request: it reopens the window. The grader knows how many
 *                      requests it sent: a B it did not cause (the submission calling the function)
 *                      shows as tampering, a missing W as well.
 *   T <what>           tampering seen: the descriptor no longer reaches the grader's file, or the
 *                      callbacks were turned off (each checked at every write and every flush)
 *   D <n>              lines were dropped (the table of lines since the last flush is full)
 * The MAC: SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast short-input PRF", 2012) under a
 * 128-bit key the grader generates per worker and hands over through a pipe (GRADE_KERNEL_TRACE_KEY_FD)
 * that this library reads and closes before any submission code runs; chained over the lines:
 * mac = SipHash(key, mac as 8 little-endian bytes || the line without its newline), where an S
 * line counts as "S <seq>" and then carries the new mac in hex. Written lines are checked too: the
 * descriptor must reach the grader's file, still opened O_APPEND.
 * What runs in this process can still be undone by code that reads or writes the tracer's memory
 * (the key, the table of own modules); the README's isolation section says so. */
#include <cupti.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


#define MAX_NAMES 512
#define MAX_NAME 4000
#define MAX_OWN 256

/* What a traced callback id is (TRACED_CBIDS[].kind) and its argument (.arg). */
enum {
    TRACE_LAUNCH,       /* a kernel launch; arg: the 1-based index of its CUfunction among the
                           parameters (pointer-sized), 0 when it has none */
    TRACE_GRAPH,        /* a CUDA graph launch */
    TRACE_COPY,         /* a memory copy; arg 1: a runtime cudaMemcpy[Async] whose 4th parameter is
                           its cudaMemcpyKind, arg 2: a cudaMemcpyToSymbol[Async] whose 5th is,
                           arg 3: a driver cuMemcpyHtoD* (source: 2nd parameter), arg 4: a
                           cuMemcpyHtoA* (source: 3rd); a copy labelled host-to-device is not
                           written when its source is host memory (with unified addressing the
                           driver follows the pointer, not the label) */
    TRACE_STREAM_OP,    /* a stream memory operation (wait on / write a value in memory) */
    TRACE_HOST_MEMORY,  /* host memory made reachable from the GPU (page-locked, mapped, managed) */
    TRACE_MODULE_LOAD,  /* cuModuleLoad*: the first parameter is the CUmodule* it fills */
    TRACE_MODULE_UNLOAD, /* cuModuleUnload: the first parameter is the CUmodule */
    TRACE_CONTEXT_END,   /* a device reset or context destroy: it frees the modules without a
                            cuModuleUnload callback, so every own module is forgotten */
    TRACE_CONTEXT_RELEASE /* cuDevicePrimaryCtxRelease: dropping the last reference destroys the
                            primary context and its modules without a callback (red-team pass 20:
                            a later load could get a dead own module's handle); every own module is
                            forgotten when, after the call, the context is no longer active */
};

#include "traced_cbids.h"   /* TRACED_CBIDS[]: {domain, cbid, kind, arg}, one of the kinds above */

static int trace_fd = -1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *seen[MAX_NAMES];   /* copies of the names noted since the last flush */
static int n_seen = 0;
static unsigned long dropped = 0;
static unsigned long seq = 0;   /* K lines written */
static int tampered = 0;        /* what was seen: 1 descriptor redirected or closed */
static int started = 0;         /* InitializeInjection subscribed to every launch callback */
static dev_t trace_dev;
static ino_t trace_ino;
static CUpti_SubscriberHandle subscriber;
static CUmodule own_modules[MAX_OWN];   /* modules loaded while the own window was open */
static int n_own = 0;
static int own_window = 0;      /* 0 never opened, 1 open, 2 closed for good */
static int late = 0;            /* 1 after grader_trace_window_end (the next work is an L line), 2 once written */
static CUresult (*func_get_module)(CUmodule *, CUfunction) = NULL;   /* the driver's cuFuncGetModule */
static CUresult (*pointer_attribute)(void *, CUpointer_attribute, CUdeviceptr) = NULL;   /* cuPointerGetAttribute */
/* the driver's context calls, resolved before any submission code runs: grader_trace_window_end
 * synchronises the context the own modules were loaded in itself (a replaced or skipped Python-level
 * synchronisation cannot leave the timed calls' work running past the W line) */
static CUresult (*ctx_get_current)(CUcontext *) = NULL;
static CUresult (*ctx_push)(CUcontext) = NULL;
static CUresult (*ctx_pop)(CUcontext *) = NULL;
static CUresult (*ctx_sync)(void) = NULL;
static CUresult (*primary_state)(CUdevice, unsigned int *, int *) = NULL;
static CUcontext own_ctx = NULL;    /* current when the own window opened */
static uint64_t key[2];         /* the MAC key (read from the grader's pipe) */
static uint64_t mac = 0;        /* the chained MAC of the lines written so far */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND(v0, v1, v2, v3) do { \
    v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32); \
    v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2; \
    v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0; \
    v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32); } while (0)

/* SipHash-2-4 of data[0..n) under k (two little-endian 64-bit halves). Exported for the tests. */
uint64_t grader_trace_siphash(const uint64_t k[2], const unsigned char *data, size_t n) {
    uint64_t v0 = k[0] ^ 0x736f6d6570736575ULL, v1 = k[1] ^ 0x646f72616e646f6dULL;
    uint64_t v2 = k[0] ^ 0x6c7967656e657261ULL, v3 = k[1] ^ 0x7465646279746573ULL;
    size_t full = n - n % 8;
    for (size_t i = 0; i < full; i += 8) {
        uint64_t m = 0;
        for (int j = 7; j >= 0; --j) m = (m << 8) | data[i + (size_t)j];
        v3 ^= m;
        SIPROUND(v0, v1, v2, v3);
        SIPROUND(v0, v1, v2, v3);
        v0 ^= m;
    }
    uint64_t last = (uint64_t)(n & 0xff) << 56;
    for (size_t j = 0; j < n % 8; ++j) last |= (uint64_t)data[full + j] << (8 * j);
    v3 ^= last;
    SIPROUND(v0, v1, v2, v3);
    SIPROUND(v0, v1, v2, v3);
    v0 ^= last;
    v2 ^= 0xff;
    for (int r = 0; r < 4; ++r) SIPROUND(v0, v1, v2, v3);
    return v0 ^ v1 ^ v2 ^ v3;
}

/* mac = SipHash(key, mac || line[0..n)), the chain the grader recomputes. */
static void chain(const char *line, size_t n) {
    unsigned char buf[8 + 512];
    unsigned char *data = n <= 512 ? buf : (unsigned char *)malloc(8 + n);
    if (!data) {           /* cannot happen for the lines written here; the grader then sees a bad MAC */
        mac = ~mac;
        return;
    }
    for (int j = 0; j < 8; ++j) data[j] = (unsigned char)(mac >> (8 * j));
    memcpy(data + 8, line, n);
    mac = grader_trace_siphash(key, data, 8 + n);
    if (data != buf) free(data);
}

/* Whether trace_fd still reaches the file it reached at start, opened for appending (a dup2 over
 * it, a close, or O_APPEND cleared to rewrite lines in place shows). */
static int fd_intact(void) {
    struct stat st;
    int flags = fcntl(trace_fd, F_GETFL);
    if (fstat(trace_fd, &st) != 0 || st.st_dev != trace_dev || st.st_ino != trace_ino || flags < 0
        || !(flags & O_APPEND)) {
        tampered |= 1;
        return 0;
    }
    return 1;
}

static void write_all(const char *data, size_t n) {
    while (n > 0 && trace_fd >= 0) {
        ssize_t w = write(trace_fd, data, n);
        if (w <= 0) return;
        data += w;
        n -= (size_t)w;
    }
}

/* Write "<kind> <text>" (chained into the MAC; an S line then carries the MAC). */
static void say(char kind, const char *text) {
    char line[512];
    int n = snprintf(line, sizeof line - 24, "%c %s", kind, text);
    if (n < 0) return;
    if ((size_t)n > sizeof line - 25) n = (int)(sizeof line - 25);
    chain(line, (size_t)n);
    if (kind == 'S') n += snprintf(line + n, 24, " %016llx", (unsigned long long)mac);
    line[n] = '\n';
    write_all(line, (size_t)n + 1);
}

/* Write "L <seq> <origin> <name>" for the first work after a timed window closed. Under the lock. */
static void note_late(char origin, const char *name, size_t len) {
    char *line = (char *)malloc(len + 40);
    if (!line) {
        ++dropped;
        return;
    }
    int head = snprintf(line, 40, "L %lu %c ", ++seq, origin);
    memcpy(line + head, name, len);
    chain(line, (size_t)head + len);
    line[head + len] = '\n';
    if (fd_intact()) write_all(line, (size_t)head + len + 1);
    free(line);
    late = 2;
}

/* Write "K <seq> <origin> <name>" the first time that pair is seen since the last flush (after a
 * timed window closed, the first work of any kind as an L line instead). */
static void note(char origin, const char *name) {
    size_t len = strnlen(name, MAX_NAME);
    pthread_mutex_lock(&lock);
    if (late) {
        if (late == 1) note_late(origin, name, len);
        pthread_mutex_unlock(&lock);
        return;
    }
    for (int i = 0; i < n_seen; ++i) {
        if (seen[i][0] == origin && strncmp(seen[i] + 1, name, len) == 0 && seen[i][1 + len] == 0) {
            pthread_mutex_unlock(&lock);
            return;
        }
    }
    if (n_seen < MAX_NAMES) {
        char *copy = (char *)malloc(len + 2);
        char *line = (char *)malloc(len + 40);
        if (copy && line) {
            copy[0] = origin;
            memcpy(copy + 1, name, len);
            copy[1 + len] = 0;
            seen[n_seen++] = copy;
            int head = snprintf(line, 40, "K %lu %c ", ++seq, origin);
            memcpy(line + head, name, len);
            chain(line, (size_t)head + len);
            line[head + len] = '\n';
            if (fd_intact()) write_all(line, (size_t)head + len + 1);
            copy = NULL;
        } else {
            ++dropped;
        }
        free(copy);
        free(line);
    } else {
        ++dropped;
    }
    pthread_mutex_unlock(&lock);
}

/* Whether ``p`` is host memory: memory the driver does not know (pageable), or that it says is on
 * the host (page-locked). Device and managed memory are not. */
static int host_memory(const void *p) {
    unsigned int type = 0;
    if (pointer_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS)
        return 1;
    return type == CU_MEMORYTYPE_HOST;
}

/* Whether a traced copy (TRACE_COPY with ``arg``, parameters ``params``) uploads host memory to
 * the device: an upload computes nothing from the inputs, so it is not written. */
static int upload(int arg, const void *params) {
    if (!params) return 0;
    switch (arg) {
    case 1: {
        const struct { void *d; const void *s; size_t n; int kind; } *p = params;
        return p->kind == 1 && host_memory(p->s);   /* cudaMemcpyHostToDevice */
    }
    case 2: {
        const struct { const void *y; const void *s; size_t n; size_t o; int kind; } *p = params;
        return p->kind == 1 && host_memory(p->s);
    }
    case 3:
        return host_memory(((const struct { CUdeviceptr d; const void *s; } *)params)->s);
    case 4:
        return host_memory(((const struct { CUarray a; size_t o; const void *s; } *)params)->s);
    }
    return 0;
}

/* Whether ``f`` is a function of a module loaded in the own window. */
static int own_function(CUfunction f) {
    CUmodule m = NULL;
    if (!f || !func_get_module || func_get_module(&m, f) != CUDA_SUCCESS || !m) return 0;
    pthread_mutex_lock(&lock);
    int own = 0;
    for (int i = 0; i < n_own && !own; ++i) own = own_modules[i] == m;
    pthread_mutex_unlock(&lock);
    return own;
}

static void module_loaded(CUmodule m) {
    pthread_mutex_lock(&lock);
    if (own_window == 1 && m && n_own < MAX_OWN) own_modules[n_own++] = m;
    /* the own modules' context: current here, in the thread that loads them, before any submission
     * code runs (when the window opened, CUDA may not have made one current yet) */
    if (own_window == 1 && m && !own_ctx && ctx_get_current) ctx_get_current(&own_ctx);
    pthread_mutex_unlock(&lock);
}

/* An unloaded module's handle may be reused by a later load: it is own no more. */
static void module_unloaded(CUmodule m) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_own; ++i) {
        if (own_modules[i] == m) own_modules[i--] = own_modules[--n_own];
    }
    pthread_mutex_unlock(&lock);
}

/* The context that held the own modules is gone (reset, destroyed, released to zero): so are they. */
static void own_modules_forgotten(void) {
    pthread_mutex_lock(&lock);
    n_own = 0;
    pthread_mutex_unlock(&lock);
}

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data) {
    (void)userdata;
    const CUpti_CallbackData *cb = (const CUpti_CallbackData *)data;
    for (size_t i = 0; i < sizeof TRACED_CBIDS / sizeof TRACED_CBIDS[0]; ++i) {
        if (TRACED_CBIDS[i].domain != domain || TRACED_CBIDS[i].cbid != cbid) continue;
        void *const *params = (void *const *)cb->functionParams;
        int arg = TRACED_CBIDS[i].arg;
        char text[200];
        switch (TRACED_CBIDS[i].kind) {
        case TRACE_MODULE_LOAD:
            if (cb->callbackSite == CUPTI_API_EXIT && params && params[0] && cb->functionReturnValue
                && *(const CUresult *)cb->functionReturnValue == CUDA_SUCCESS)
                module_loaded(*(CUmodule *)params[0]);
            return;
        case TRACE_MODULE_UNLOAD:
            if (cb->callbackSite == CUPTI_API_ENTER && params) module_unloaded((CUmodule)params[0]);
            return;
        case TRACE_CONTEXT_END:
            if (cb->callbackSite == CUPTI_API_ENTER) own_modules_forgotten();
            return;
        case TRACE_CONTEXT_RELEASE:
            if (cb->callbackSite == CUPTI_API_EXIT) {
                unsigned int flags = 0;
                int active = 0;
                const CUdevice dev = cb->functionParams ? *(const CUdevice *)cb->functionParams : 0;
                if (!primary_state || primary_state(dev, &flags, &active) != CUDA_SUCCESS || !active)
                    own_modules_forgotten();
            }
            return;
        }
        if (cb->callbackSite != CUPTI_API_ENTER) return;
        switch (TRACED_CBIDS[i].kind) {
        case TRACE_LAUNCH:
            note(arg && params && own_function((CUfunction)params[arg - 1]) ? '+' : '-',
                 cb->symbolName && cb->symbolName[0] ? cb->symbolName : "<unnamed kernel>");
            return;
        case TRACE_GRAPH:
            note('-', "<CUDA graph launch>");
            return;
        case TRACE_COPY:
            if (upload(arg, params)) return;
            snprintf(text, sizeof text, "<memcpy:%s>", cb->functionName ? cb->functionName : "?");
            note('-', text);
            return;
        case TRACE_STREAM_OP:
            snprintf(text, sizeof text, "<stream-memory-op:%s>", cb->functionName ? cb->functionName : "?");
            note('-', text);
            return;
        case TRACE_HOST_MEMORY:
            snprintf(text, sizeof text, "<host-memory:%s>", cb->functionName ? cb->functionName : "?");
            note('-', text);
            return;
        }
        return;
    }
}

/* Whether every traced callback is still enabled (cuptiFinalize or cuptiEnableCallback(0, ...)
 * called by code in this process shows here). */
static int callbacks_on(void) {
    for (size_t i = 0; i < sizeof TRACED_CBIDS / sizeof TRACED_CBIDS[0]; ++i) {
        uint32_t on = 0;
        if (cuptiGetCallbackState(&on, subscriber, TRACED_CBIDS[i].domain, TRACED_CBIDS[i].cbid) != CUPTI_SUCCESS
            || !on)
            return 0;
    }
    return 1;
}

/* Called once by the worker's trusted code (ctypes) with 1 before it loads the submission's own
 * modules, then with 0 before any submission code runs: the window opens once and closes for good
 * (a later call changes nothing). Returns the window's state: 1 open, 2 closed, 0 never opened. */
int grader_trace_own_window(int open) {
    pthread_mutex_lock(&lock);
    if (open && own_window == 0) {
        own_window = 1;
        if (ctx_get_current) ctx_get_current(&own_ctx);   /* NULL when none is current yet: see module_loaded */
    }
    else if (!open && own_window == 1) own_window = 2;
    int state = own_window;
    pthread_mutex_unlock(&lock);
    return state;
}

/* Called by the worker's trusted code (ctypes) once a timed round's calls are queued: writes
 * "W <seq>" and closes the window (the next launch, copy or stream operation of any thread is an L
 * line) BEFORE it synchronises the own modules' context itself: work queued before this call is
 * waited for here, inside the parent's clock; work queued after it, however the submission times
 * it (another thread, a replaced synchronisation), is an L line. Returns the CUresult of the
 * synchronisation (0: done), -1 when the tracer did not start. */
int grader_trace_window_end(void) {
    if (!started) return -1;
    pthread_mutex_lock(&lock);
    char text[32];
    snprintf(text, sizeof text, "%lu", seq);
    say('W', text);
    late = 1;
    pthread_mutex_unlock(&lock);
    /* the own modules' context; without one (a submission that loaded no module of its own), the
     * calling thread's, in which the harness ran solve */
    CUcontext ctx = own_ctx, popped;
    if (!ctx && ctx_get_current(&ctx) != CUDA_SUCCESS) ctx = NULL;
    if (!ctx) return 0;        /* no context at all: nothing can have been queued */
    CUresult r = ctx_push(ctx);
    if (r != CUDA_SUCCESS) return (int)r;
    r = ctx_sync();
    ctx_pop(&popped);
    return (int)r;
}

/* Called by the worker's trusted code (ctypes) as it receives each request: writes "B <seq>" and
 * ends the closed window. */
int grader_trace_request(void) {
    if (!started) return 1;
    pthread_mutex_lock(&lock);
    char text[32];
    snprintf(text, sizeof text, "%lu", seq);
    say('B', text);
    late = 0;
    pthread_mutex_unlock(&lock);
    return 0;
}

/* Called by the worker (ctypes) before its replies: forget the names noted since the last call (the
 * next launch of each is written again), report tampering, and write "S <seq>". */
int grader_trace_flush(void) {
    if (!started) return 1;     /* before CUDA loaded the tracer, or it could not start (an E line) */
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_seen; ++i) free(seen[i]);
    n_seen = 0;
    char text[96];
    if (dropped) {
        snprintf(text, sizeof text, "%lu kernel names dropped", dropped);
        say('D', text);
        dropped = 0;
    }
    int fd_ok = fd_intact();
    if (tampered & 1) say('T', "the trace descriptor was redirected, closed or made rewritable inside the worker");
    if (!callbacks_on()) say('T', "the tracer's callbacks were turned off inside the worker");
    if (fd_ok) tampered = 0;
    snprintf(text, sizeof text, "%lu", seq);
    say('S', text);
    pthread_mutex_unlock(&lock);
    return 0;
}

int InitializeInjection(void) {
    const char *fd = getenv("GRADE_KERNEL_TRACE_FD");
    if (!fd) return 1;
    trace_fd = atoi(fd);
    struct stat st;
    if (fstat(trace_fd, &st) != 0) return 1;
    trace_dev = st.st_dev;
    trace_ino = st.st_ino;
    const char *key_fd = getenv("GRADE_KERNEL_TRACE_KEY_FD");
    unsigned char raw[16];
    ssize_t got = 0;
    if (key_fd) {
        int kfd = atoi(key_fd);
        while (got < 16) {
            ssize_t r = read(kfd, raw + got, (size_t)(16 - got));
            if (r <= 0) break;
            got += r;
        }
        close(kfd);
    }
    if (got != 16) {
        say('E', "no MAC key from the grader (GRADE_KERNEL_TRACE_KEY_FD)");
        return 1;
    }
    for (int h = 0; h < 2; ++h) {
        key[h] = 0;
        for (int j = 7; j >= 0; --j) key[h] = (key[h] << 8) | raw[8 * h + j];
    }
    memset(raw, 0, sizeof raw);
    /* the driver that is loading this library (libcuda.so.1); else whatever defines the symbol */
    void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    func_get_module = (CUresult(*)(CUmodule *, CUfunction))dlsym(cuda ? cuda : RTLD_DEFAULT, "cuFuncGetModule");
    pointer_attribute = (CUresult(*)(void *, CUpointer_attribute, CUdeviceptr))dlsym(cuda ? cuda : RTLD_DEFAULT,
                                                                                     "cuPointerGetAttribute");
    ctx_get_current = (CUresult(*)(CUcontext *))dlsym(cuda ? cuda : RTLD_DEFAULT, "cuCtxGetCurrent");
    ctx_push = (CUresult(*)(CUcontext))dlsym(cuda ? cuda : RTLD_DEFAULT, "cuCtxPushCurrent_v2");
    ctx_pop = (CUresult(*)(CUcontext *))dlsym(cuda ? cuda : RTLD_DEFAULT, "cuCtxPopCurrent_v2");
    ctx_sync = (CUresult(*)(void))dlsym(cuda ? cuda : RTLD_DEFAULT, "cuCtxSynchronize");
    /* may be missing: then every primary-context release forgets the own modules */
    primary_state = (CUresult(*)(CUdevice, unsigned int *, int *))dlsym(cuda ? cuda : RTLD_DEFAULT,
                                                                       "cuDevicePrimaryCtxGetState");
    if (!func_get_module || !pointer_attribute || !ctx_get_current || !ctx_push || !ctx_pop || !ctx_sync) {
        say('E', "the CUDA driver lacks cuFuncGetModule, cuPointerGetAttribute or the context calls (a driver for CUDA 12 or later is needed)");
        return 1;
    }
    CUptiResult r = cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)on_callback, NULL);
    for (size_t i = 0; r == CUPTI_SUCCESS && i < sizeof TRACED_CBIDS / sizeof TRACED_CBIDS[0]; ++i)
        r = cuptiEnableCallback(1, subscriber, TRACED_CBIDS[i].domain, TRACED_CBIDS[i].cbid);
    if (r != CUPTI_SUCCESS) {
        const char *text = NULL;
        cuptiGetResultString(r, &text);
        say('E', text ? text : "CUPTI failed to start");
        return 1;
    }
    started = 1;
    char version[64];
    snprintf(version, sizeof version, "CUPTI %d, launch, copy and module callbacks", (int)CUPTI_API_VERSION);
    say('R', version);
    return 1;
}
