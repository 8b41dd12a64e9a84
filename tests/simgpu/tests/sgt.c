/*
 * sgt.c: helpers shared by the simgpu check tests (see sgt.h).
 */
#include "sgt.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *sgt_errname(CUresult r)
{
    /* Our own table: the message must not depend on simgpu's. */
    switch (r) {
    case CUDA_SUCCESS: return "CUDA_SUCCESS";
    case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
    case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
    case CUDA_ERROR_INVALID_IMAGE: return "CUDA_ERROR_INVALID_IMAGE";
    case CUDA_ERROR_INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
    case CUDA_ERROR_NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
    case CUDA_ERROR_NOT_READY: return "CUDA_ERROR_NOT_READY";
    case CUDA_ERROR_ILLEGAL_ADDRESS: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case CUDA_ERROR_NOT_SUPPORTED: return "CUDA_ERROR_NOT_SUPPORTED";
    case CUDA_ERROR_NOT_PERMITTED: return "CUDA_ERROR_NOT_PERMITTED";
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
        return "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED";
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
        return "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED";
    case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:
        return "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT";
    case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD:
        return "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD";
    case CUDA_ERROR_LAUNCH_FAILED: return "CUDA_ERROR_LAUNCH_FAILED";
    case CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
    case CUDA_ERROR_UNKNOWN: return "CUDA_ERROR_UNKNOWN";
    default: return "(other)";
    }
}

void sgt_env(const char *name, const char *value)
{
    ck_assert_int_eq(setenv(name, value, 1), 0);
}

/* Per-process state: each test case (and each child) is its own process. */
static CUcontext sgt_context;
static CUmodule sgt_mod;

void sgt_init(void)
{
    CUdevice dev;
    SGT_OK(cuInit(0));
    SGT_OK(cuDeviceGet(&dev, 0));
    SGT_OK(cuDevicePrimaryCtxRetain(&sgt_context, dev));
    ck_assert_ptr_nonnull(sgt_context);
    SGT_OK(cuCtxSetCurrent(sgt_context));
}

CUcontext sgt_ctx(void)
{
    return sgt_context;
}

CUmodule sgt_module(void)
{
    if (!sgt_mod)
        SGT_OK(cuModuleLoadData(&sgt_mod, SGT_IMAGE));
    ck_assert_ptr_nonnull(sgt_mod);
    return sgt_mod;
}

CUfunction sgt_func(const char *name)
{
    CUfunction f = NULL;
    CUresult r = cuModuleGetFunction(&f, sgt_module(), name);
    ck_assert_msg(r == CUDA_SUCCESS && f, "cuModuleGetFunction(%s): %d (%s)",
                  name, (int)r, sgt_errname(r));
    return f;
}

CUresult sgt_launch(CUfunction f, CUstream s, void **params)
{
    return cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, s, params, NULL);
}

CUresult sgt_try_fill_u32(CUstream s, CUdeviceptr dst, uint32_t value,
                          uint64_t count)
{
    void *params[] = {&dst, &value, &count};
    return sgt_launch(sgt_func("sg_fill_u32"), s, params);
}

void sgt_fill_u32(CUstream s, CUdeviceptr dst, uint32_t value, uint64_t count)
{
    SGT_OK(sgt_try_fill_u32(s, dst, value, count));
}

void sgt_checksum(CUstream s, CUdeviceptr src, uint64_t bytes, CUdeviceptr out)
{
    void *params[] = {&src, &bytes, &out};
    SGT_OK(sgt_launch(sgt_func("sg_checksum_u64"), s, params));
}

uint64_t sgt_fnv1a(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static uint64_t sgt_next(uint64_t *s)
{
    /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void sgt_pattern(void *p, size_t n, uint64_t seed)
{
    unsigned char *b = p;
    uint64_t s = seed;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = sgt_next(&s);
        memcpy(b + i, &v, n - i < 8 ? n - i : 8);
    }
}

float sgt_randf(uint64_t *state)
{
    /* Uniform in [-2, 2) with 24 significant bits: never -0.0 or NaN. */
    uint32_t v = (uint32_t)(sgt_next(state) >> 40);
    float f = (float)v / (float)(1u << 24) * 4.0f - 2.0f;
    return f == 0.0f ? 0.5f : f;
}

CUmemAllocationProp sgt_prop(CUmemLocationType type)
{
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
    p.location.type = type;
    p.location.id = 0;
    return p;
}

CUresult sgt_set_access(CUdeviceptr ptr, size_t size)
{
    CUmemAccessDesc d;
    memset(&d, 0, sizeof d);
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = 0;
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return cuMemSetAccess(ptr, size, &d, 1);
}

int sgt_child(void (*body)(void *), void *arg)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        body(arg);
        exit(0); /* runs simgpu's exit-time report writer */
    }
    int status = 0;
    pid_t w;
    do {
        w = waitpid(pid, &status, 0);
    } while (w < 0 && errno == EINTR);
    ck_assert_int_eq(w, pid);
    return status;
}

void sgt_child_ok(void (*body)(void *), void *arg)
{
    int st = sgt_child(body, arg);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "child failed: %s %d", WIFEXITED(st) ? "exit" : "signal",
                  WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

void sgt_report_env(char *path, size_t n, const char *tag)
{
    static unsigned seq;
    snprintf(path, n, "/tmp/sgt-report-%ld-%s-%u.json", (long)getpid(), tag,
             seq++);
    unlink(path);
    sgt_env("SIMGPU_REPORT", path);
}

char *sgt_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s: %s", path, strerror(errno));
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len < 2) {
            cap *= 2;
            buf = realloc(buf, cap);
            ck_assert_ptr_nonnull(buf);
        }
    }
    fclose(f);
    buf[len] = '\0';
    return buf;
}

char *sgt_report_read(const char *path)
{
    char *json = sgt_slurp(path);
    unlink(path);
    return json;
}

/* Position just after `"key"` and the colon, or NULL. */
static const char *sgt_json_value(const char *json, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = json; (p = strchr(p, '"')) != NULL; p++) {
        if (strncmp(p + 1, key, kl) != 0 || p[kl + 1] != '"')
            continue;
        const char *q = p + kl + 2;
        while (isspace((unsigned char)*q))
            q++;
        if (*q != ':')
            continue;
        q++;
        while (isspace((unsigned char)*q))
            q++;
        return q;
    }
    return NULL;
}

bool sgt_json_has(const char *json, const char *key)
{
    return sgt_json_value(json, key) != NULL;
}

bool sgt_json_num(const char *json, const char *key, double *out)
{
    const char *v = sgt_json_value(json, key);
    if (!v)
        return false;
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (end == v || errno)
        return false;
    *out = d;
    return true;
}

uint64_t sgt_json_u64(const char *json, const char *key)
{
    const char *v = sgt_json_value(json, key);
    ck_assert_msg(v != NULL, "report has no \"%s\"", key);
    char *end;
    errno = 0;
    unsigned long long u = strtoull(v, &end, 10);
    if (*end == '.' || *end == 'e' || *end == 'E') {
        double d = strtod(v, &end);
        ck_assert_msg(d >= 0, "\"%s\" is negative", key);
        u = (unsigned long long)d;
    }
    ck_assert_msg(end != v && errno == 0 && *v != '-',
                  "\"%s\" is not a non-negative number", key);
    return u;
}

char *sgt_json_array(const char *json, const char *key)
{
    const char *v = sgt_json_value(json, key);
    if (!v || *v != '[')
        return NULL;
    /* Find the closing bracket, skipping strings (with escapes). */
    const char *p = v + 1;
    int depth = 1;
    bool in_str = false;
    for (; *p && depth > 0; p++) {
        if (in_str) {
            if (*p == '\\' && p[1])
                p++;
            else if (*p == '"')
                in_str = false;
        } else if (*p == '"') {
            in_str = true;
        } else if (*p == '[') {
            depth++;
        } else if (*p == ']') {
            depth--;
        }
    }
    if (depth != 0)
        return NULL;
    return strndup(v, (size_t)(p - v));
}

void sgt_sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

void sgt_loop_case(Suite *s, const TTest *t, int start, int end)
{
    TCase *tc = tcase_create(t->name);
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, t, start, end);
    suite_add_tcase(s, tc);
}

void sgt_case(Suite *s, const TTest *t)
{
    sgt_loop_case(s, t, 0, 1);
}
