/* The grader's kernel tracer: a CUDA injection library (CUDA_INJECTION64_PATH) that records the
 * name of every kernel the worker's process launches, whoever launches it (the submission's
 * RawKernel, CuPy, cuBLAS, torch, Triton), for the own-kernels check (DESIGN must 9).
 *
 * The CUDA driver loads this library when the worker initialises CUDA, before any submission code
 * runs, and calls InitializeInjection. That subscribes to CUPTI's callback API for every kernel
 * launch function of the driver and runtime APIs (the list, LAUNCH_CBIDS, is generated from the
 * toolkit's cupti_*_cbid.h when the library is built). The callback runs on the launching host
 * thread and only notes the kernel's name (CUpti_CallbackData.symbolName) in a small table: the
 * GPU is not involved. (CUPTI's kernel *activity* records were tried first: on the H200 they made
 * the grader's timed kernels 4-5x slower, see benchmarks/RESULTS.md.) A CUDA graph launch has no
 * kernel name here and is noted as "<CUDA graph launch>".
 *
 * grader_trace_flush() writes the names noted since the last flush, one line each, "K <name>\n",
 * to the file descriptor named by GRADE_KERNEL_TRACE_FD (a file the grader opened and reads from
 * its own process). The worker's trusted code calls it before each reply but a timed round's, so
 * nothing is written while kernels are being timed. Lines "R <version>" (ready) and "E <message>"
 * (could not start) say whether tracing is on; "D <n>" that names were dropped (table full). */
#include <cupti.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launch_cbids.h"   /* LAUNCH_CBIDS[]: {domain, cbid, is_graph} */

#define MAX_NAMES 512
#define MAX_NAME 4000

static int trace_fd = -1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *seen[MAX_NAMES];   /* copies of the names noted since the last flush */
static int n_seen = 0;
static unsigned long dropped = 0;
static CUpti_SubscriberHandle subscriber;

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
        if (copy) {
            memcpy(copy, name, len);
            copy[len] = 0;
            seen[n_seen++] = copy;
        }
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

/* Called by the worker (ctypes) before its replies: write the names noted since the last call. */
int grader_trace_flush(void) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_seen; ++i) {
        size_t len = strlen(seen[i]);
        char *line = (char *)malloc(len + 3);
        if (line) {
            line[0] = 'K';
            line[1] = ' ';
            memcpy(line + 2, seen[i], len);
            line[len + 2] = '\n';
            write_all(line, len + 3);
            free(line);
        }
        free(seen[i]);
    }
    n_seen = 0;
    if (dropped) {
        char text[64];
        snprintf(text, sizeof text, "%lu kernel names dropped", dropped);
        say('D', text);
        dropped = 0;
    }
    pthread_mutex_unlock(&lock);
    return 0;
}

static void at_exit(void) { grader_trace_flush(); }

int InitializeInjection(void) {
    const char *fd = getenv("GRADE_KERNEL_TRACE_FD");
    if (!fd) return 1;
    trace_fd = atoi(fd);
    CUptiResult r = cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)on_launch, NULL);
    for (size_t i = 0; r == CUPTI_SUCCESS && i < sizeof LAUNCH_CBIDS / sizeof LAUNCH_CBIDS[0]; ++i)
        r = cuptiEnableCallback(1, subscriber, LAUNCH_CBIDS[i].domain, LAUNCH_CBIDS[i].cbid);
    if (r != CUPTI_SUCCESS) {
        const char *text = NULL;
        cuptiGetResultString(r, &text);
        say('E', text ? text : "CUPTI failed to start");
        return 1;
    }
    atexit(at_exit);
    char version[64];
    snprintf(version, sizeof version, "CUPTI %d, launch callbacks", (int)CUPTI_API_VERSION);
    say('R', version);
    return 1;
}
