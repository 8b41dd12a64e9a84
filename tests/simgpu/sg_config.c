/*
 * SIMGPU_* environment, read once at cuInit from one table.
 * A bad value ends the program with status 2: a test that asked for a
 * setting must never run without it.
 */
#include "sg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { K_SIZE, K_U64, K_BOOL, K_DOUBLE, K_PATH, K_FAIL } kind_t;

typedef struct {
    const char *name;
    const char *dflt;
    kind_t kind;
    size_t off;
} opt_t;

#define O(name, dflt, kind, field) { name, dflt, kind, offsetof(sg_config_t, field) }
static const opt_t opts[] = {
    O("SIMGPU_MEM", "80GiB", K_SIZE, mem),
    O("SIMGPU_DEVICES", "1", K_U64, devices),
    O("SIMGPU_GRANULARITY", "2MiB", K_SIZE, granularity),
    O("SIMGPU_HOST_GRANULARITY", "2MiB", K_SIZE, host_granularity),
    O("SIMGPU_VA", "64GiB", K_SIZE, va_size),
    O("SIMGPU_JITTER", "0", K_U64, jitter_us),
    O("SIMGPU_SEED", "1", K_U64, seed),
    O("SIMGPU_HOST_VMM", "1", K_BOOL, host_vmm),
    O("SIMGPU_HOST_NUMA_VMM", "1", K_BOOL, host_numa_vmm),
    O("SIMGPU_FUNC_ACCEPTS_KERNEL", "0", K_BOOL, func_accepts_kernel),
    O("SIMGPU_HBM_GBPS", "3000", K_DOUBLE, hbm_gbps),
    O("SIMGPU_H2D_GBPS", "55", K_DOUBLE, h2d_gbps),
    O("SIMGPU_D2H_GBPS", "55", K_DOUBLE, d2h_gbps),
    O("SIMGPU_D2D_GBPS", "1500", K_DOUBLE, d2d_gbps),
    O("SIMGPU_ZEROCOPY_GBPS", "50", K_DOUBLE, zerocopy_gbps),
    O("SIMGPU_LINK_GBPS", "57", K_DOUBLE, link_gbps),
    O("SIMGPU_TFLOPS", "60", K_DOUBLE, tflops),
    O("SIMGPU_KERNEL_NS", "2000", K_U64, kernel_ns),
    O("SIMGPU_LAUNCH_NS", "2500", K_U64, launch_ns),
    O("SIMGPU_API_NS", "100", K_U64, api_ns),
    O("SIMGPU_MEMCREATE_NS", "9200", K_U64, memcreate_ns),
    O("SIMGPU_MEMMAP_NS", "1500", K_U64, memmap_ns),
    O("SIMGPU_SETACCESS_NS", "24000", K_U64, setaccess_ns),
    O("SIMGPU_UNMAP_NS", "17000", K_U64, unmap_ns),
    O("SIMGPU_RESERVE_NS", "1000", K_U64, reserve_ns),
    O("SIMGPU_RELEASE_NS", "11600", K_U64, release_ns),
    O("SIMGPU_HOST_MEMCREATE_NS", "178000", K_U64, host_memcreate_ns),
    O("SIMGPU_HOST_SETACCESS_NS", "79000", K_U64, host_setaccess_ns),
    O("SIMGPU_HOST_UNMAP_NS", "45000", K_U64, host_unmap_ns),
    O("SIMGPU_HOST_RELEASE_NS", "42500", K_U64, host_release_ns),
    O("SIMGPU_HOST_MEMCREATE_MIB_NS", "210000", K_U64, host_memcreate_mib_ns),
    O("SIMGPU_HOST_SETACCESS_MIB_NS", "11000", K_U64, host_setaccess_mib_ns),
    O("SIMGPU_HOST_UNMAP_MIB_NS", "2400", K_U64, host_unmap_mib_ns),
    O("SIMGPU_HOST_RELEASE_MIB_NS", "26000", K_U64, host_release_mib_ns),
    O("SIMGPU_REPORT", "", K_PATH, report),
    O("SIMGPU_TRACE", "0", K_BOOL, trace),
    O("SIMGPU_TIMELINE", "", K_PATH, timeline),
    O("SIMGPU_FAIL", "", K_FAIL, fail_nth),
};
#undef O

static const char *const fn_names[] = {
#define SG_FN_NAME(name, err, cost) #name,
    SG_FUNCS(SG_FN_NAME)
#undef SG_FN_NAME
};

const char *sg_fn_name(sg_fn_t fn)
{
    return fn < SG_FN_COUNT ? fn_names[fn] : "?";
}

static void __attribute__((noreturn)) bad(const char *var, const char *val, const char *forms)
{
    fprintf(stderr, "simgpu: bad value %s=\"%s\": expected %s\n", var, val, forms);
    exit(2);
}

/* "64", "2MiB", "1G", "512K": powers of 1024. */
static bool parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno || *s == '-')
        return false;
    uint64_t mul = 1;
    switch (*end) {
    case 'K': case 'k': mul = 1ull << 10; end++; break;
    case 'M': case 'm': mul = 1ull << 20; end++; break;
    case 'G': case 'g': mul = 1ull << 30; end++; break;
    case 'T': case 't': mul = 1ull << 40; end++; break;
    default: break;
    }
    if (mul > 1 && (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0))
        end += strlen(end);
    if (*end || (v && v > UINT64_MAX / mul))
        return false;
    *out = v * mul;
    return true;
}

static bool parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"1", "on", "yes", "true"};
    static const char *const no[] = {"0", "off", "no", "false"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) { *out = true; return true; }
        if (strcasecmp(s, no[i]) == 0) { *out = false; return true; }
    }
    return false;
}

/* "cuMemCreate:3,cuMemMap:1,cuMemCreate:5": a function may appear up to
 * SG_MAX_FAILS times. */
static bool parse_fail(const char *s, uint64_t (*nth)[SG_MAX_FAILS])
{
    char buf[1024];
    if (strlen(s) >= sizeof buf)
        return false;
    strcpy(buf, s);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        if (!colon)
            return false;
        *colon = '\0';
        uint64_t n;
        if (!parse_size(colon + 1, &n) || n == 0)
            return false;
        int fn = -1;
        for (int i = 0; i < SG_FN_COUNT; i++)
            if (strcmp(fn_names[i], tok) == 0)
                fn = i;
        if (fn < 0)
            return false;
        int slot = 0;
        while (slot < SG_MAX_FAILS && nth[fn][slot])
            slot++;
        if (slot == SG_MAX_FAILS)
            return false;
        nth[fn][slot] = n;
    }
    return true;
}

void sg_config_load(sg_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        const opt_t *o = &opts[i];
        const char *env = getenv(o->name);
        const char *v = env ? env : o->dflt;
        void *field = (char *)cfg + o->off;
        char *end;
        switch (o->kind) {
        case K_SIZE:
            if (!parse_size(v, field))
                bad(o->name, v, "a size such as 512MiB, 2G or 4096");
            break;
        case K_U64:
            if (!parse_size(v, field))
                bad(o->name, v, "a non-negative integer");
            break;
        case K_BOOL:
            if (!parse_bool(v, field))
                bad(o->name, v, "1/0, on/off, yes/no or true/false");
            break;
        case K_DOUBLE:
            errno = 0;
            *(double *)field = strtod(v, &end);
            if (end == v || *end || errno || *(double *)field <= 0)
                bad(o->name, v, "a positive number");
            break;
        case K_PATH:
            if (strlen(v) >= sizeof cfg->report)
                bad(o->name, v, "a path shorter than 4096 bytes");
            strcpy(field, v);
            break;
        case K_FAIL:
            if (*v && !parse_fail(v, field))
                bad(o->name, v, "function:n[,function:n...] with a simgpu function name, n >= 1, "
                       "and at most 8 entries per function");
            break;
        }
    }
    uint64_t g = cfg->granularity, hg = cfg->host_granularity;
    if (g < 4096 || (g & (g - 1)))
        bad("SIMGPU_GRANULARITY", getenv("SIMGPU_GRANULARITY"), "a power of two of at least 4KiB");
    if (hg < 4096 || (hg & (hg - 1)))
        bad("SIMGPU_HOST_GRANULARITY", getenv("SIMGPU_HOST_GRANULARITY"),
            "a power of two of at least 4KiB");
    if (cfg->devices < 1 || cfg->devices > SG_MAX_DEVICES)
        bad("SIMGPU_DEVICES", getenv("SIMGPU_DEVICES"), "a number of devices from 1 to 8");
    if (cfg->va_size < (1ull << 30))
        bad("SIMGPU_VA", getenv("SIMGPU_VA"), "a size of at least 1GiB");
}
