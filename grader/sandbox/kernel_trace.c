/* The grader's kernel tracer: a CUDA injection library (CUDA_INJECTION64_PATH) that records the
 * name of every kernel the worker's process launches, whoever launches it (the submission's
 * RawKernel, CuPy, cuBLAS, torch, Triton), for the own-kernels check (DESIGN must 9).
 *
 * The CUDA driver loads this library when the worker initialises CUDA, before any submission code
 * runs, and calls InitializeInjection. That subscribes to CUPTI's callback API for every kernel
 * launch function of the driver and runtime APIs (the list, LAUNCH_CBIDS, is generated from the
 * toolkit's cupti_*_cbid.h when the library is built). The callback runs on the launching host
 * thread and notes the kernel's name (CUpti_CallbackData.symbolName): the GPU is not involved.
 * (CUPTI's kernel *activity* records were tried first: on the H200 they made the grader's timed
 * kernels 4-5x slower, see benchmarks/RESULTS.md.) A CUDA graph launch has no kernel name here and
 * is noted as "<CUDA graph launch>".
 *
 * Lines written to the file descriptor named by GRADE_KERNEL_TRACE_FD (a file the grader opened and
 * reads from its own process):
 *   R <version>     tracing is on            E <message>   tracing could not start
 *   K <seq> <name>  a kernel name, written at once the first time it is launched since the last
 *                   flush (a write per new name, none per repeated launch); seq counts K lines 1, 2, ...
 *   S <seq> <mac>   written by grader_trace_flush(), which the worker's trusted code calls before each
 *                   reply but a timed round's: the seq of the last K line, and the MAC of every line
 *                   the tracer wrote so far. The grader requires it, so a gap (K lines truncated away),
 *                   a missing flush (the call patched out) and any byte the worker wrote, removed or
 *                   rewrote in the file (a forged line, a line overwritten in place) show.
 *   T <what>        tampering seen: the descriptor no longer reaches the grader's file, or the launch
 *                   callbacks were turned off (each checked at every write and every flush)
 *   D <n>           names were dropped (the table of names since the last flush is full)
 * The MAC: SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast short-input PRF", 2012) under a
 * 128-bit key the grader generates per worker and hands over through a pipe (GRADE_KERNEL_TRACE_KEY_FD)
 * that this library reads and closes before any submission code runs; chained over the lines:
 * mac = SipHash(key, mac as 8 little-endian bytes || the line without its newline), where an S
 * line counts as "S <seq>" and then carries the new mac in hex. Written lines are checked too: the
 * descriptor must reach the grader's file, still opened O_APPEND.
 * What runs in this process can still be undone by code that reads or writes the tracer's memory
 * (the key, the table of names); the README's isolation section says so. */
#include <cupti.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch_cbids.h"   /* LAUNCH_CBIDS[]: {domain, cbid, is_graph} */

#define MAX_NAMES 512
#define MAX_NAME 4000

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

/* Write "K <seq> <name>" the first time ``name`` is launched since the last flush. */
static void note(const char *name) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_seen; ++i) {
        if (strcmp(seen[i], name) == 0) {
            pthread_mutex_unlock(&lock);
            return;
        }
    }
    if (n_seen < MAX_NAMES) {
        size_t len = strnlen(name, MAX_NAME);
        char *copy = (char *)malloc(len + 1);
        char *line = (char *)malloc(len + 32);
        if (copy && line) {
            memcpy(copy, name, len);
            copy[len] = 0;
            seen[n_seen++] = copy;
            int head = snprintf(line, 32, "K %lu ", ++seq);
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

static void CUPTIAPI on_launch(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                               const void *data) {
    (void)userdata;
    const CUpti_CallbackData *cb = (const CUpti_CallbackData *)data;
    if (cb->callbackSite != CUPTI_API_ENTER) return;
    for (size_t i = 0; i < sizeof LAUNCH_CBIDS / sizeof LAUNCH_CBIDS[0]; ++i) {
        if (LAUNCH_CBIDS[i].domain == domain && LAUNCH_CBIDS[i].cbid == cbid) {
            if (LAUNCH_CBIDS[i].graph) note("<CUDA graph launch>");
            else note(cb->symbolName && cb->symbolName[0] ? cb->symbolName : "<unnamed kernel>");
            return;
        }
    }
}

/* Whether every launch callback is still enabled (cuptiFinalize or cuptiEnableCallback(0, ...)
 * called by code in this process shows here). */
static int callbacks_on(void) {
    for (size_t i = 0; i < sizeof LAUNCH_CBIDS / sizeof LAUNCH_CBIDS[0]; ++i) {
        uint32_t on = 0;
        if (cuptiGetCallbackState(&on, subscriber, LAUNCH_CBIDS[i].domain, LAUNCH_CBIDS[i].cbid) != CUPTI_SUCCESS
            || !on)
            return 0;
    }
    return 1;
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
    if (!callbacks_on()) say('T', "the kernel launch callbacks were turned off inside the worker");
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
    CUptiResult r = cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)on_launch, NULL);
    for (size_t i = 0; r == CUPTI_SUCCESS && i < sizeof LAUNCH_CBIDS / sizeof LAUNCH_CBIDS[0]; ++i)
        r = cuptiEnableCallback(1, subscriber, LAUNCH_CBIDS[i].domain, LAUNCH_CBIDS[i].cbid);
    if (r != CUPTI_SUCCESS) {
        const char *text = NULL;
        cuptiGetResultString(r, &text);
        say('E', text ? text : "CUPTI failed to start");
        return 1;
    }
    started = 1;
    char version[64];
    snprintf(version, sizeof version, "CUPTI %d, launch callbacks", (int)CUPTI_API_VERSION);
    say('R', version);
    return 1;
}
