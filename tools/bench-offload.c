/*
 * bench-offload: how close spillway's offload comes to the best possible,
 * on simgpu's virtual clock, for every scenario in every mode, in one run.
 *
 *   bench-offload BUILD_DIR [--quick] [--markdown] [--jobs N] [--keep]
 *
 * BUILD_DIR is a meson build directory of this project: the programs are
 * BUILD_DIR/tests/apps/{mlp,moe}, the library BUILD_DIR/src/libspillway.so
 * and simgpu's libcuda.so.1 is in BUILD_DIR/tests/simgpu.
 *
 * Scenarios (each model about 2.5 times the GPU budget):
 *   decode      mlp, one vector per step (gemv): transfer-bound;
 *   prefill     mlp --batch with a slow GPU (SIMGPU_TFLOPS), so a layer's
 *               compute takes longer than its transfer: compute-bound;
 *   moe         moe, K of E experts per step drawn from a Zipf law, timed
 *               after 100 steps, once popularity is learned (steady state);
 *   moe-early   the same, timed after 20 steps: the cost of learning it;
 *   one-buffer  mlp --one-buffer: every layer in one allocation.
 * Modes:
 *   all-resident  no spillway, device memory large enough for everything;
 *   prefetch-off  spillway, SPILLWAY_POLICY=learned, SPILLWAY_PREFETCH_BYTES=0;
 *   lru           spillway, SPILLWAY_POLICY=lru, SPILLWAY_PREFETCH_BYTES=0;
 *   learned       spillway with its defaults.
 * In the spillway modes SIMGPU_MEM is the budget plus 256 MiB, so the
 * budget, not the simulated GPU, is the limit.
 *
 * Each (scenario, mode) runs twice as a child process: once for W warm-up
 * steps only (the prefix run) and once for W + T steps with --time W.  The
 * program's routing and work do not depend on its step count, and simgpu's
 * clock depends only on the sequence of calls (spillway has no background
 * thread), so the first W steps of both runs are the same, and the
 * difference of their counters is what the T timed steps did.  This is how
 * the byte columns are measured; the step time comes from events on the
 * program's compute stream (mlp/moe --time).  Because the clock is
 * virtual, running several children at once (--jobs) changes no number.
 *
 * Exit status: 0 it ran and every run passed its check (whatever the
 * targets say: they are measurements, reported as PASS/MISS); 1 some run
 * failed its check (wrong result, hazard, fault, crash); 2 setup error.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MIB (1024.0 * 1024.0)
#define MiB(n) ((uint64_t)(n) << 20)
/* simgpu's default SIMGPU_H2D_GBPS (tests/simgpu/README.md): 1 GB/s moves
 * one byte per ns.  The children run with SIMGPU_* cleared, so this is
 * what they see.  No single transfer crosses faster: a copy alone runs at
 * this cap, zero-copy reads at 35 GB/s; only a copy and reads together
 * can fill the 57 GB/s link, 3.6% more. */
#define H2D_BYTES_PER_NS 55.0
/* A child that runs longer than this is killed (SIGALRM, set before exec). */
#define CHILD_TIMEOUT_S 900

/* ---- scenarios and modes ---- */

typedef enum { PROG_MLP, PROG_MOE } prog_t;

typedef struct scenario {
    const char *name;
    prog_t prog;
    uint32_t count;   /* layers (mlp) or experts (moe) */
    uint32_t width;   /* each layer or expert is width x width floats */
    uint32_t batch;   /* mlp: vectors per step through sg_gemm_f32; 0: gemv */
    bool one_buffer;  /* mlp --one-buffer */
    uint32_t active;  /* moe: experts per step */
    uint32_t warmup;  /* W */
    uint32_t timed;   /* T */
    uint64_t budget;  /* SPILLWAY_GPU_BUDGET */
    uint64_t chunk;   /* SPILLWAY_CHUNK */
    const char *tflops; /* SIMGPU_TFLOPS, or NULL for simgpu's default */
} scenario_t;

/*
 * The full set.  Sizes are chosen so the whole run stays short on a small
 * machine: the simulated kernels really compute, on the CPU, and so does
 * each program's host reference.  prefill uses batch 16 at 0.25 TFLOPS
 * rather than batch 64 at 1 TFLOPS: the same virtual times (a layer
 * computes 2 * 1024^2 * 16 flops in 134 us, longer than the 76 us its
 * 4 MiB take at 55 GB/s; both batches are below one 128-row GEMM tile, so
 * a host-resident weight is read once either way) for a quarter of the real work.  The moe targets
 * apply to the steady state; moe-early shows what the first steps cost.
 */
static const scenario_t full_set[] = {
    {"decode", PROG_MLP, 20, 2048, 0, false, 0, 3, 5, MiB(128), MiB(16), NULL},
    {"prefill", PROG_MLP, 20, 1024, 16, false, 0, 2, 3, MiB(32), MiB(4), "0.25"},
    {"moe", PROG_MOE, 32, 1024, 0, false, 2, 100, 40, MiB(51), MiB(4), NULL},
    {"moe-early", PROG_MOE, 32, 1024, 0, false, 2, 20, 40, MiB(51), MiB(4), NULL},
    {"one-buffer", PROG_MLP, 20, 1024, 0, true, 0, 3, 5, MiB(32), MiB(2), NULL},
};

/* --quick: the same shapes, tiny, for the test suite (correctness only). */
static const scenario_t quick_set[] = {
    {"decode", PROG_MLP, 20, 1024, 0, false, 0, 2, 2, MiB(32), MiB(4), NULL},
    {"prefill", PROG_MLP, 20, 1024, 2, false, 0, 2, 2, MiB(32), MiB(4), "0.03125"},
    {"moe", PROG_MOE, 16, 1024, 0, false, 2, 8, 8, MiB(26), MiB(4), NULL},
    {"one-buffer", PROG_MLP, 20, 1024, 0, true, 0, 2, 2, MiB(32), MiB(2), NULL},
};

typedef struct bmode {
    const char *name;
    bool preload;
    const char *policy;   /* SPILLWAY_POLICY, or NULL: the default */
    const char *prefetch; /* SPILLWAY_PREFETCH_BYTES, or NULL: the default */
} bmode_t;

enum { M_RESIDENT, M_PREFETCH_OFF, M_LRU, M_LEARNED, NMODES };

static const bmode_t modes[NMODES] = {
    {"all-resident", false, NULL, NULL},
    {"prefetch-off", true, "learned", "0"},
    {"lru", true, "lru", "0"},
    {"learned", true, NULL, NULL},
};

static uint64_t model_bytes(const scenario_t *s)
{
    return (uint64_t)s->count * s->width * s->width * sizeof(float);
}

static uint64_t unit_bytes(const scenario_t *s)
{
    return (uint64_t)s->width * s->width * sizeof(float);
}

/* ---- one child run ---- */

typedef struct run {
    /* what to run */
    const scenario_t *s;
    int mode;
    bool prefix; /* W steps only, no timing */
    char tag[64];
    /* what came back */
    int wstatus;
    bool waited;
    bool exited0;    /* exit status 0 */
    bool have_line;  /* the result line was found */
    bool match;      /* result=match */
    uint64_t checksum;
    double step_ns;
    bool have_step;
    bool have_sg;    /* simgpu report read */
    uint64_t hazards, faults, link;
    bool have_sw;    /* spillway report read */
    uint64_t moved, late;
    uint32_t *sched; /* moe, all-resident full run: experts of the timed steps */
    size_t nsched;
} run_t;

static char tmpdir[4096];
static const char *build;
static bool keep;

static void die_setup(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "bench-offload: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    exit(2);
}

static char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    char *p;
    int n;

    va_start(ap, fmt);
    n = vasprintf(&p, fmt, ap);
    va_end(ap);
    if (n < 0)
        die_setup("out of memory");
    return p;
}

static char *path_of(const run_t *r, const char *ext)
{
    return xasprintf("%s/%s.%s", tmpdir, r->tag, ext);
}

/* The child's environment: ours without SIMGPU_*, SPILLWAY_*, LD_PRELOAD
 * and LD_LIBRARY_PATH, then exactly the settings of the run. */
static char **child_env(const run_t *r)
{
    const scenario_t *s = r->s;
    const bmode_t *m = &modes[r->mode];
    size_t n = 0, i = 0;
    char **env;

    while (environ[n] != NULL)
        n++;
    env = calloc(n + 16, sizeof(char *));
    if (env == NULL)
        die_setup("out of memory");
    for (size_t k = 0; k < n; k++) {
        const char *e = environ[k];

        if (strncmp(e, "SIMGPU_", 7) == 0 || strncmp(e, "SPILLWAY_", 9) == 0 ||
            strncmp(e, "LD_PRELOAD=", 11) == 0 || strncmp(e, "LD_LIBRARY_PATH=", 16) == 0)
            continue;
        env[i++] = (char *)e;
    }
    {
        const char *old = getenv("LD_LIBRARY_PATH");

        env[i++] = old != NULL && old[0] != '\0'
                       ? xasprintf("LD_LIBRARY_PATH=%s/tests/simgpu:%s", build, old)
                       : xasprintf("LD_LIBRARY_PATH=%s/tests/simgpu", build);
    }
    env[i++] = xasprintf("SIMGPU_REPORT=%s", path_of(r, "simgpu.json"));
    if (s->tflops != NULL)
        env[i++] = xasprintf("SIMGPU_TFLOPS=%s", s->tflops);
    if (!m->preload) {
        /* Room for everything. */
        env[i++] = xasprintf("SIMGPU_MEM=%" PRIu64 "MiB", model_bytes(s) / MiB(1) * 2 + 256);
    } else {
        env[i++] = xasprintf("SIMGPU_MEM=%" PRIu64 "MiB", s->budget / MiB(1) + 256);
        env[i++] = xasprintf("LD_PRELOAD=%s/src/libspillway.so", build);
        env[i++] = xasprintf("SPILLWAY_GPU_BUDGET=%" PRIu64 "MiB", s->budget / MiB(1));
        env[i++] = xasprintf("SPILLWAY_CHUNK=%" PRIu64 "MiB", s->chunk / MiB(1));
        env[i++] = xasprintf("SPILLWAY_REPORT=%s", path_of(r, "spillway.json"));
        env[i++] = xasprintf("SPILLWAY_STATS_DIR=%s/stats", tmpdir);
        if (m->policy != NULL)
            env[i++] = xasprintf("SPILLWAY_POLICY=%s", m->policy);
        if (m->prefetch != NULL)
            env[i++] = xasprintf("SPILLWAY_PREFETCH_BYTES=%s", m->prefetch);
    }
    env[i] = NULL;
    return env;
}

static char **child_argv(const run_t *r, char **exe)
{
    const scenario_t *s = r->s;
    char **a = calloc(24, sizeof(char *));
    int i = 0;
    uint32_t steps = r->prefix ? s->warmup : s->warmup + s->timed;

    if (a == NULL)
        die_setup("out of memory");
    *exe = xasprintf("%s/tests/apps/%s", build, s->prog == PROG_MLP ? "mlp" : "moe");
    a[i++] = *exe;
    if (s->prog == PROG_MLP) {
        a[i++] = "--layers";
        a[i++] = xasprintf("%u", s->count);
        if (s->batch > 0) {
            a[i++] = "--batch";
            a[i++] = xasprintf("%u", s->batch);
        }
        if (s->one_buffer)
            a[i++] = "--one-buffer";
    } else {
        a[i++] = "--experts";
        a[i++] = xasprintf("%u", s->count);
        a[i++] = "--active";
        a[i++] = xasprintf("%u", s->active);
        if (r->mode == M_RESIDENT && !r->prefix)
            a[i++] = "--schedule";
    }
    a[i++] = "--width";
    a[i++] = xasprintf("%u", s->width);
    a[i++] = "--steps";
    a[i++] = xasprintf("%u", steps);
    if (!r->prefix) {
        a[i++] = "--time";
        a[i++] = xasprintf("%u", s->warmup);
    }
    a[i] = NULL;
    return a;
}

static pid_t start(run_t *r)
{
    char *exe, **argv = child_argv(r, &exe), **envp = child_env(r);
    char *out = path_of(r, "out"), *sg = path_of(r, "simgpu.json"),
         *sw = path_of(r, "spillway.json");
    pid_t pid;

    /* A report left from an earlier run must not be read as this one's. */
    unlink(sg);
    unlink(sw);
    fflush(NULL);
    pid = fork();
    if (pid < 0)
        die_setup("fork: %s", strerror(errno));
    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(126);
        alarm(CHILD_TIMEOUT_S); /* kept across exec: a hang ends as SIGALRM */
        execve(exe, argv, envp);
        fprintf(stderr, "bench-offload: exec %s: %s\n", exe, strerror(errno));
        _exit(127);
    }
    return pid;
}

/* The whole file, NUL-terminated, or NULL. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    size_t len = 0, cap = 0;

    if (f == NULL)
        return NULL;
    for (;;) {
        if (cap - len < 4096) {
            char *nb = realloc(buf, cap + 65536);

            if (nb == NULL) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
            cap += 65536;
        }
        size_t got = fread(buf + len, 1, cap - len - 1, f);

        len += got;
        if (got == 0)
            break;
    }
    fclose(f);
    buf[len] = '\0';
    return buf;
}

/* An unsigned number field of a flat JSON object; 0 when it is absent
 * (spillway fields that do not exist yet read as 0). */
static uint64_t json_u64(const char *json, const char *key)
{
    char pat[128];
    const char *p;

    snprintf(pat, sizeof(pat), "\"%s\"", key);
    if (json == NULL || (p = strstr(json, pat)) == NULL)
        return 0;
    p += strlen(pat);
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (*p != ':')
        return 0;
    p++;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return strtoull(p, NULL, 10);
}

static void collect(run_t *r)
{
    char *out = slurp(path_of(r, "out"));
    char *sg = slurp(path_of(r, "simgpu.json"));
    char *sw = slurp(path_of(r, "spillway.json"));
    const char *prog = r->s->prog == PROG_MLP ? "mlp: " : "moe: ";
    size_t cap = 0;

    r->exited0 = WIFEXITED(r->wstatus) && WEXITSTATUS(r->wstatus) == 0;
    for (char *line = out; line != NULL && *line != '\0';) {
        char *nl = strchr(line, '\n');
        char *p;

        if (nl != NULL)
            *nl = '\0';
        if (strncmp(line, prog, 5) == 0 && (p = strstr(line, " result=")) != NULL) {
            char *c = strstr(line, " checksum=0x"), *t = strstr(line, " step_ns=");

            r->have_line = true;
            r->match = strncmp(p + 8, "match", 5) == 0 && (p[13] == ' ' || p[13] == '\0');
            if (c != NULL)
                r->checksum = strtoull(c + 12, NULL, 16);
            if (t != NULL) {
                r->step_ns = strtod(t + 9, NULL);
                r->have_step = true;
            }
        } else if (strncmp(line, "moe-step ", 9) == 0) {
            char *end;
            unsigned long step = strtoul(line + 9, &end, 10);

            if (step >= r->s->warmup && *end == ':') {
                for (p = end + 1;;) {
                    unsigned long e = strtoul(p, &end, 10);

                    if (end == p)
                        break;
                    p = end;
                    if (r->nsched == cap) {
                        uint32_t *ns;

                        cap = cap ? cap * 2 : 256;
                        ns = realloc(r->sched, cap * sizeof(uint32_t));
                        if (ns == NULL)
                            die_setup("out of memory");
                        r->sched = ns;
                    }
                    r->sched[r->nsched++] = (uint32_t)e;
                }
            }
        }
        line = nl != NULL ? nl + 1 : NULL;
    }
    if (sg != NULL) {
        r->have_sg = strstr(sg, "\"virtual_time_ns\"") != NULL;
        r->hazards = json_u64(sg, "hazards");
        r->faults = json_u64(sg, "faults");
        r->link = json_u64(sg, "dma_h2d_bytes") + json_u64(sg, "dma_d2h_bytes") +
                  json_u64(sg, "kernel_bytes_host");
    }
    if (sw != NULL) {
        r->have_sw = strstr(sw, "\"pid\"") != NULL;
        r->moved = json_u64(sw, "bytes_promoted") + json_u64(sw, "bytes_written_back");
        r->late = json_u64(sw, "prefetch_late");
    }
    free(out);
    free(sg);
    free(sw);
}

/* Run all, in the given order, at most `jobs` at a time. */
static void run_all(run_t **runs, size_t n, int jobs, bool verbose)
{
    pid_t *pids = calloc(n, sizeof(pid_t));
    size_t next = 0, done = 0;
    int active = 0;

    if (pids == NULL)
        die_setup("out of memory");
    while (done < n) {
        while (active < jobs && next < n) {
            pids[next] = start(runs[next]);
            if (verbose)
                fprintf(stderr, "bench-offload: [%zu/%zu] %s\n", next + 1, n, runs[next]->tag);
            next++;
            active++;
        }
        int st;
        pid_t pid = waitpid(-1, &st, 0);

        if (pid < 0) {
            if (errno == EINTR)
                continue;
            die_setup("waitpid: %s", strerror(errno));
        }
        for (size_t i = 0; i < next; i++)
            if (pids[i] == pid && !runs[i]->waited) {
                runs[i]->wstatus = st;
                runs[i]->waited = true;
                collect(runs[i]);
                active--;
                done++;
                break;
            }
    }
    free(pids);
}

/* ---- the lower bound ---- */

/*
 * Fewest misses any policy can have on the access sequence seq[0..n) with
 * room for `cap` units, where a miss may also be served without keeping
 * the unit (zero-copy: "bypass"), and where the units resident at the
 * start are chosen freely.  Belady's MIN with bypass is optimal for
 * unit-size items: on a miss with the room full, drop whichever of the
 * resident units and the missing one is next used furthest ahead.  From
 * an empty start that gives OPT_empty; a free start saves exactly the
 * first min(cap, distinct) loads, which MIN makes without evicting.
 */
static uint64_t opt_misses(const uint32_t *seq, size_t n, uint32_t cap, uint32_t nunits)
{
    size_t *next = malloc(n * sizeof(size_t)), *last = malloc(nunits * sizeof(size_t));
    uint32_t *res = malloc((cap + 1) * sizeof(uint32_t));
    size_t *res_next = malloc((cap + 1) * sizeof(size_t));
    bool *in = calloc(nunits, sizeof(bool)), *seen = calloc(nunits, sizeof(bool));
    uint64_t misses = 0, distinct = 0;
    uint32_t nres = 0;

    if (next == NULL || last == NULL || res == NULL || res_next == NULL || in == NULL ||
        seen == NULL)
        die_setup("out of memory");
    for (uint32_t u = 0; u < nunits; u++)
        last[u] = SIZE_MAX;
    for (size_t i = n; i-- > 0;) {
        next[i] = last[seq[i]];
        last[seq[i]] = i;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t u = seq[i];

        if (!seen[u]) {
            seen[u] = true;
            distinct++;
        }
        if (in[u]) {
            for (uint32_t k = 0; k < nres; k++)
                if (res[k] == u)
                    res_next[k] = next[i];
            continue;
        }
        misses++;
        if (cap == 0)
            continue;
        if (nres < cap) {
            res[nres] = u;
            res_next[nres++] = next[i];
            in[u] = true;
            continue;
        }
        uint32_t far = 0;

        for (uint32_t k = 1; k < nres; k++)
            if (res_next[k] > res_next[far])
                far = k;
        if (res_next[far] > next[i]) { /* else bypass: u is needed last */
            in[res[far]] = false;
            res[far] = u;
            res_next[far] = next[i];
            in[u] = true;
        }
    }
    free(next);
    free(last);
    free(res);
    free(res_next);
    free(in);
    free(seen);
    {
        uint64_t saved = distinct < cap ? distinct : cap;

        return misses > saved ? misses - saved : 0;
    }
}

/*
 * Bytes per timed step that must reach the GPU at least: the chunk size
 * times the optimum above over the chunks the T timed steps use, for a
 * budget of floor(budget / chunk) chunks.  mlp uses every chunk of every
 * layer in order, each step, so this is (model - what the budget holds)
 * per step; moe uses the chunks of the experts its schedule names (read
 * from the all-resident run's --schedule).  Returns -1 if unknown.
 */
static double min_bytes_per_step(const scenario_t *s, const run_t *resident)
{
    uint32_t per_unit = (uint32_t)(unit_bytes(s) / s->chunk);
    uint32_t nunits = s->count * per_unit, cap = (uint32_t)(s->budget / s->chunk);
    uint32_t *seq;
    size_t n = 0;
    double bytes;

    if (unit_bytes(s) % s->chunk != 0)
        die_setup("%s: layer or expert size is not a multiple of the chunk", s->name);
    if (s->prog == PROG_MLP) {
        seq = malloc((size_t)s->timed * nunits * sizeof(uint32_t));
        if (seq == NULL)
            die_setup("out of memory");
        for (uint32_t t = 0; t < s->timed; t++)
            for (uint32_t u = 0; u < nunits; u++)
                seq[n++] = u;
    } else {
        if (resident->nsched != (size_t)s->timed * s->active)
            return -1;
        seq = malloc(resident->nsched * per_unit * sizeof(uint32_t));
        if (seq == NULL)
            die_setup("out of memory");
        for (size_t i = 0; i < resident->nsched; i++) {
            if (resident->sched[i] >= s->count) {
                free(seq);
                return -1;
            }
            for (uint32_t c = 0; c < per_unit; c++)
                seq[n++] = resident->sched[i] * per_unit + c;
        }
    }
    bytes = (double)opt_misses(seq, n, cap, nunits) * (double)s->chunk / s->timed;
    free(seq);
    return bytes;
}

/* ---- the table ---- */

typedef struct cell {
    const run_t *full, *prefix;
    bool ok;
    char check[64];
    double step_ns;      /* <0: unknown */
    double moved, link;  /* per timed step; <0: unknown */
    double late;         /* <0: unknown */
    double min_bytes;    /* per timed step */
    double bound_ns;     /* <0: unknown */
} cell_t;

static void why_failed(const run_t *r, char *buf, size_t len)
{
    if (WIFSIGNALED(r->wstatus))
        snprintf(buf, len, "%s: %s", r->prefix ? "prefix" : "run",
                 WTERMSIG(r->wstatus) == SIGALRM ? "timeout" : strsignal(WTERMSIG(r->wstatus)));
    else if (!r->exited0)
        snprintf(buf, len, "%s: exit %d", r->prefix ? "prefix" : "run", WEXITSTATUS(r->wstatus));
    else if (!r->have_line)
        snprintf(buf, len, "%s: no result line", r->prefix ? "prefix" : "run");
    else if (!r->match)
        snprintf(buf, len, "%s: mismatch", r->prefix ? "prefix" : "run");
    else if (!r->have_sg)
        snprintf(buf, len, "%s: no simgpu report", r->prefix ? "prefix" : "run");
    else if (r->hazards != 0)
        snprintf(buf, len, "%s: %" PRIu64 " hazards", r->prefix ? "prefix" : "run", r->hazards);
    else if (r->faults != 0)
        snprintf(buf, len, "%s: %" PRIu64 " faults", r->prefix ? "prefix" : "run", r->faults);
    else
        buf[0] = '\0';
}

static void fill_cell(cell_t *c, const scenario_t *s, int mode, const run_t *full,
                      const run_t *prefix, const cell_t *resident, double min_bytes)
{
    char why[64];

    memset(c, 0, sizeof(*c));
    c->full = full;
    c->prefix = prefix;
    c->ok = true;
    why_failed(full, why, sizeof(why));
    if (why[0] == '\0')
        why_failed(prefix, why, sizeof(why));
    if (why[0] == '\0' && mode != M_RESIDENT) {
        if (!resident->ok)
            snprintf(why, sizeof(why), "no reference");
        else if (full->checksum != resident->full->checksum ||
                 prefix->checksum != resident->prefix->checksum)
            snprintf(why, sizeof(why), "checksum differs");
    }
    if (why[0] == '\0' && full->exited0 && !full->have_step)
        snprintf(why, sizeof(why), "no step_ns");
    if (why[0] != '\0') {
        c->ok = false;
        snprintf(c->check, sizeof(c->check), "%s", why);
    } else {
        snprintf(c->check, sizeof(c->check), "ok");
    }
    c->step_ns = full->have_step ? full->step_ns : -1;
    c->moved = c->link = c->late = -1;
    if (full->have_sg && prefix->have_sg && full->link >= prefix->link)
        c->link = (double)(full->link - prefix->link) / s->timed;
    if (modes[mode].preload && full->have_sw && prefix->have_sw) {
        if (full->moved >= prefix->moved)
            c->moved = (double)(full->moved - prefix->moved) / s->timed;
        if (full->late >= prefix->late)
            c->late = (double)(full->late - prefix->late);
    }
    if (mode == M_RESIDENT) {
        c->min_bytes = 0;
        c->bound_ns = c->step_ns;
    } else {
        c->min_bytes = min_bytes;
        c->bound_ns = -1;
        if (resident->step_ns >= 0 && c->min_bytes >= 0) {
            double xfer = c->min_bytes / H2D_BYTES_PER_NS;

            c->bound_ns = resident->step_ns > xfer ? resident->step_ns : xfer;
        }
    }
}

/* A number, or "-" when unknown, into buf. */
static const char *num(char *buf, size_t len, double v, double scale, int prec)
{
    if (v < 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.*f", prec, v / scale);
    return buf;
}

static void print_table(const scenario_t *set, size_t nsc, cell_t (*cells)[NMODES], bool md)
{
    static const char *head[] = {"scenario", "mode", "step us", "bound us", "x bound",
                                 "moved MiB/step", "link MiB/step", "min MiB/step",
                                 "late", "check"};

    if (md) {
        printf("|");
        for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++)
            printf(" %s |", head[i]);
        printf("\n|---|---|--:|--:|--:|--:|--:|--:|--:|---|\n");
    } else {
        printf("%-10s  %-12s  %9s  %9s  %7s  %14s  %13s  %12s  %5s  %s\n", head[0], head[1],
               head[2], head[3], head[4], head[5], head[6], head[7], head[8], head[9]);
    }
    for (size_t si = 0; si < nsc; si++)
        for (int m = 0; m < NMODES; m++) {
            const cell_t *c = &cells[si][m];
            char a[32], b[32], r[32], mv[32], lk[32], mn[32], lt[32];
            double ratio = c->step_ns >= 0 && c->bound_ns > 0 ? c->step_ns / c->bound_ns : -1;

            num(a, sizeof(a), c->step_ns, 1e3, 1);
            num(b, sizeof(b), c->bound_ns, 1e3, 1);
            num(r, sizeof(r), ratio, 1, 2);
            num(mv, sizeof(mv), c->moved, MIB, 1);
            num(lk, sizeof(lk), c->link, MIB, 1);
            num(mn, sizeof(mn), c->min_bytes, MIB, 1);
            num(lt, sizeof(lt), c->late, 1, 0);
            if (md)
                printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", set[si].name,
                       modes[m].name, a, b, r, mv, lk, mn, lt, c->check);
            else
                printf("%-10s  %-12s  %9s  %9s  %7s  %14s  %13s  %12s  %5s  %s\n",
                       set[si].name, modes[m].name, a, b, r, mv, lk, mn, lt, c->check);
        }
}

static void print_setup(const scenario_t *set, size_t nsc, bool md)
{
    const char *li = md ? "- " : "  ";

    printf("%sscenarios (W warm-up + T timed steps; SIMGPU_MEM = budget + 256 MiB under "
           "spillway):\n", md ? "" : "");
    if (md)
        printf("\n");
    for (size_t i = 0; i < nsc; i++) {
        const scenario_t *s = &set[i];

        printf("%s%s: ", li, s->name);
        if (s->prog == PROG_MLP)
            printf("mlp --layers %u --width %u%s", s->count, s->width,
                   s->one_buffer ? " --one-buffer" : "");
        else
            printf("moe --experts %u --width %u --active %u (zipf 1.1, seed 1)", s->count,
                   s->width, s->active);
        if (s->batch > 0)
            printf(" --batch %u", s->batch);
        if (s->tflops != NULL)
            printf(", SIMGPU_TFLOPS=%s", s->tflops);
        printf("; model %.0f MiB, budget %.0f MiB (%.2fx), chunk %.0f MiB; W=%u, T=%u\n",
               model_bytes(s) / MIB, s->budget / MIB, (double)model_bytes(s) / s->budget,
               s->chunk / MIB, s->warmup, s->timed);
    }
    printf("\n");
}

/* One note under the table: a markdown bullet, or plain text wrapped at 96
 * columns with a hanging indent. */
static void note(bool md, const char *text)
{
    const char *p = text;
    int col;

    if (md) {
        printf("- %s\n", text);
        return;
    }
    printf("  ");
    col = 2;
    while (*p != '\0') {
        size_t w = strcspn(p, " ");

        if (col > 4 && col + 1 + (int)w > 96) {
            printf("\n    ");
            col = 4;
        } else if (col > 2 && col != 4) {
            putchar(' ');
            col++;
        }
        fwrite(p, 1, w, stdout);
        col += (int)w;
        p += w;
        while (*p == ' ')
            p++;
    }
    putchar('\n');
}

static void print_footer(bool md)
{
    char buf[512];

    printf("\n");
    note(md, "step: average virtual time of the T timed steps, from events on the program's "
             "compute stream (--time W).");
    snprintf(buf, sizeof(buf),
             "bound: max(all-resident step, min / %.0f GB/s), simgpu's H2D copy cap, the "
             "fastest one transfer crosses; x bound: step / bound.", H2D_BYTES_PER_NS);
    note(md, buf);
    note(md, "min: bytes per timed step that must reach the GPU at least, whatever the policy "
             "(prefetch, evict or read in place): chunk x Belady's offline optimum, with "
             "bypass and the best starting set, over the chunks the timed steps use, with "
             "room for floor(budget / chunk) chunks. For the mlp scenarios that is model - "
             "budget; for moe it comes from the run's own expert sequence (moe --schedule).");
    note(md, "moved: spillway's bytes_promoted + bytes_written_back, per timed step: (value "
             "after W + T steps - value after a run of W steps) / T.");
    note(md, "link: simgpu's dma_h2d_bytes + dma_d2h_bytes + kernel_bytes_host (zero-copy), "
             "the same way: every byte that crossed PCIe, demotion copies and each step's "
             "input and output (a few KiB) included.");
    note(md, "late: spillway's prefetch_late over the timed steps. \"-\": not measured (a "
             "field missing from a report reads 0).");
    note(md, "check: both runs exit 0 with result=match and the all-resident checksums, and "
             "simgpu reports no hazards and no faults.");
}

static int find_scenario(const scenario_t *set, size_t nsc, const char *name)
{
    for (size_t i = 0; i < nsc; i++)
        if (strcmp(set[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* One target line: got <= factor x base gives PASS, else MISS (also when a
 * number is unknown).  Prints both numbers and their ratio. */
static void target(bool md, const char *what, double got, double base, double factor,
                   const char *base_name, const char *unit, double scale)
{
    int w = md ? 0 : 46;

    printf("%s%-*s ", md ? "- " : "  ", w, what);
    if (got < 0 || base < 0)
        printf("MISS (no data)\n");
    else if (base == 0)
        printf("%s (%.1f %s against %s 0)\n", got <= 0 ? "PASS" : "MISS", got / scale, unit,
               base_name);
    else
        printf("%s (%.1f %s against %s %.1f: %.2fx, limit %.2fx)\n",
               got <= factor * base ? "PASS" : "MISS", got / scale, unit, base_name,
               base / scale, got / base, factor);
}

static void print_targets(const scenario_t *set, size_t nsc, cell_t (*cells)[NMODES], bool md)
{
    int dec = find_scenario(set, nsc, "decode"), pre = find_scenario(set, nsc, "prefill"),
        moe = find_scenario(set, nsc, "moe");
    bool all_ok = true;

    printf("\ntargets (from the numbers above):\n");
    if (md)
        printf("\n");
    if (dec >= 0) {
        const cell_t *c = &cells[dec][M_LEARNED];

        target(md, "decode: learned step <= 1.15 x bound", c->step_ns, c->bound_ns, 1.15,
               "bound", "us", 1e3);
    }
    if (pre >= 0)
        target(md, "prefill: learned step <= 1.05 x all-resident",
               cells[pre][M_LEARNED].step_ns, cells[pre][M_RESIDENT].step_ns, 1.05,
               "all-resident", "us", 1e3);
    if (moe >= 0) {
        const cell_t *c = &cells[moe][M_LEARNED], *l = &cells[moe][M_LRU];

        target(md, "moe: learned link bytes <= 0.5 x lru's", c->link, l->link, 0.5, "lru",
               "MiB/step", MIB);
        target(md, "moe: learned step <= 0.7 x lru's", c->step_ns, l->step_ns, 0.7, "lru",
               "us", 1e3);
    }
    for (size_t i = 0; i < nsc; i++)
        for (int m = 0; m < NMODES; m++)
            all_ok = all_ok && cells[i][m].ok;
    printf("%s%-*s %s\n", md ? "- " : "  ", md ? 0 : 46,
           "every run: same results, no hazards or faults", all_ok ? "PASS" : "MISS");
}

/* ---- setup ---- */

static void need(const char *what, const char *path, int mode)
{
    if (access(path, mode) != 0)
        die_setup("%s %s: %s (is BUILD_DIR a built meson build directory?)", what, path,
                  strerror(errno));
}

static void rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        char *p;
        struct stat st;

        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        p = xasprintf("%s/%s", dir, e->d_name);
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            rm_tree(p);
        else
            unlink(p);
        free(p);
    }
    closedir(d);
    rmdir(dir);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench-offload BUILD_DIR [--quick] [--markdown] [--jobs N] [--keep] "
            "[--quiet]\n"
            "  runs every scenario (decode, prefill, moe, one-buffer) in every mode\n"
            "  (all-resident, prefetch-off, lru, learned) on simgpu and prints one table\n"
            "  --quick     tiny sizes (a smoke test of correctness, not of speed)\n"
            "  --markdown  the table and notes as markdown\n"
            "  --jobs N    children at once (default: online CPUs, at most 8); the\n"
            "              numbers do not depend on it (virtual time)\n"
            "  --keep      keep the temporary directory (outputs and reports)\n"
            "  --quiet     no progress lines on stderr\n"
            "exit status: 0 ran and every run passed its check, 1 some run failed its\n"
            "             check, 2 setup error.  Targets never change the status.\n");
}

int main(int argc, char **argv)
{
    bool quick = false, md = false, verbose = true;
    long jobs = sysconf(_SC_NPROCESSORS_ONLN);
    const scenario_t *set;
    size_t nsc, nruns;
    run_t *runs;
    cell_t (*cells)[NMODES];
    struct timespec t0, t1;
    const char *tmpbase;
    char *p;
    bool all_ok = true;

    if (jobs < 1)
        jobs = 1;
    if (jobs > 8)
        jobs = 8;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (strcmp(argv[i], "--markdown") == 0) {
            md = true;
        } else if (strcmp(argv[i], "--keep") == 0) {
            keep = true;
        } else if (strcmp(argv[i], "--quiet") == 0) {
            verbose = false;
        } else if (strcmp(argv[i], "--jobs") == 0 && i + 1 < argc) {
            char *end;

            jobs = strtol(argv[++i], &end, 10);
            if (*end != '\0' || jobs < 1 || jobs > 64) {
                usage(stderr);
                return 2;
            }
        } else if (strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' || build != NULL) {
            usage(stderr);
            return 2;
        } else {
            build = argv[i];
        }
    }
    if (build == NULL) {
        usage(stderr);
        return 2;
    }
    need("program", p = xasprintf("%s/tests/apps/mlp", build), X_OK);
    need("program", p = xasprintf("%s/tests/apps/moe", build), X_OK);
    need("library", p = xasprintf("%s/src/libspillway.so", build), R_OK);
    need("simgpu", p = xasprintf("%s/tests/simgpu/libcuda.so.1", build), R_OK);
    tmpbase = getenv("TMPDIR");
    snprintf(tmpdir, sizeof(tmpdir), "%s/bench-offload.XXXXXX",
             tmpbase != NULL && tmpbase[0] != '\0' ? tmpbase : "/tmp");
    if (mkdtemp(tmpdir) == NULL) /* mode 0700 */
        die_setup("mkdtemp %s: %s", tmpdir, strerror(errno));
    p = xasprintf("%s/stats", tmpdir);
    if (mkdir(p, 0700) != 0)
        die_setup("mkdir %s: %s", p, strerror(errno));

    set = quick ? quick_set : full_set;
    nsc = quick ? sizeof(quick_set) / sizeof(quick_set[0]) : sizeof(full_set) / sizeof(full_set[0]);
    nruns = nsc * NMODES * 2;
    runs = calloc(nruns, sizeof(run_t));
    cells = calloc(nsc, sizeof(*cells));
    if (runs == NULL || cells == NULL)
        die_setup("out of memory");
    /* Longest first, so that parallel runs end together: the full runs of
     * each scenario, then the prefixes. */
    for (size_t si = 0; si < nsc; si++)
        for (int m = 0; m < NMODES; m++)
            for (int pre = 0; pre < 2; pre++) {
                run_t *r = &runs[(si * NMODES + m) * 2 + pre];

                r->s = &set[si];
                r->mode = m;
                r->prefix = pre;
                snprintf(r->tag, sizeof(r->tag), "%s-%s-%s", set[si].name, modes[m].name,
                         pre ? "prefix" : "full");
            }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (verbose)
        fprintf(stderr, "bench-offload: %zu runs, %ld at a time, in %s\n", nruns, jobs, tmpdir);
    {
        /* The full runs first, then the shorter prefixes, so that runs in
         * parallel end close together. */
        run_t **order = calloc(nruns, sizeof(run_t *));
        size_t k = 0;

        if (order == NULL)
            die_setup("out of memory");
        for (int pre = 0; pre < 2; pre++)
            for (size_t i = 0; i < nruns; i++)
                if (runs[i].prefix == pre)
                    order[k++] = &runs[i];
        run_all(order, nruns, (int)jobs, verbose);
        free(order);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);

    for (size_t si = 0; si < nsc; si++) {
        run_t *base = &runs[si * NMODES * 2];

        double minb = min_bytes_per_step(&set[si], &base[0]);

        fill_cell(&cells[si][M_RESIDENT], &set[si], M_RESIDENT, &base[0], &base[1], NULL, 0);
        for (int m = 1; m < NMODES; m++)
            fill_cell(&cells[si][m], &set[si], m, &base[m * 2], &base[m * 2 + 1],
                      &cells[si][M_RESIDENT], minb);
        for (int m = 0; m < NMODES; m++)
            all_ok = all_ok && cells[si][m].ok;
    }

    printf("%sbench-offload%s: spillway offload on simgpu (virtual time), build %s%s\n\n",
           md ? "**" : "", md ? "**" : "", build, quick ? ", --quick sizes" : "");
    print_setup(set, nsc, md);
    print_table(set, nsc, cells, md);
    print_footer(md);
    print_targets(set, nsc, cells, md);
    printf("\n%zu runs in %.1f s of real time, %ld at a time.\n", nruns,
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, jobs);
    if (keep)
        printf("outputs and reports kept in %s\n", tmpdir);
    else
        rm_tree(tmpdir);
    if (!all_ok)
        fprintf(stderr, "bench-offload: some runs failed their check (see the check column)\n");
    return all_ok ? 0 : 1;
}
