/*
 * spillway.h: the optional control API, for programs that know more than
 * spillway can learn.
 *
 * spillway needs no code change: preloaded (LD_PRELOAD=libspillway.so), it
 * offloads a program's GPU memory by itself. A program that includes this
 * header can also ask what spillway is doing, change its budgets at run
 * time, give hints on ranges of memory, and mark a new phase. It does not
 * link against spillway: each call below is a small inline function that
 * finds the library's entry point with dlsym(RTLD_DEFAULT, ...) on first
 * use and returns SPILLWAY_ENOTLOADED (changing nothing) when spillway is
 * not preloaded. Link with -ldl where libc lacks dlsym (glibc < 2.34).
 * Python reaches the same entry points through ctypes.CDLL(None).
 *
 * ABI (stable): the entry points are plain C functions exported by
 * libspillway under the symbol version SPILLWAY_1 (src/spillway.map):
 *
 *   int         spillway_query(spillway_info_t *info);
 *   int         spillway_stat(const char *name, uint64_t *value, uint64_t *peak);
 *   const char *spillway_stat_name(uint32_t i);
 *   int         spillway_set_budgets(uint64_t gpu_bytes, uint64_t host_bytes);
 *   int         spillway_hint(uint64_t ptr, uint64_t bytes, int hint);
 *   int         spillway_phase(void);
 *
 * A name, once exported, keeps its prototype and meaning; an incompatible
 * change gets a new name under a new version node. spillway_info_t starts
 * with its size, set by the caller: the library fills only what both sides
 * know, so either side may be the newer. Statistics are read by name, so
 * a program never depends on the field list's order (which the stats
 * file's version tracks: spillway/stats.h). Every function is thread-safe
 * and returns a spillway_status_t; none ever aborts the program.
 *
 * Hints are advice: spillway keeps its safety rule whatever they say. A
 * hint names a range inside one allocation spillway tracks (an allocation
 * of at least SPILLWAY_MIN_ALLOC made through cuMemAlloc or cudaMalloc)
 * and applies to every chunk (SPILLWAY_CHUNK bytes) the range touches. A
 * wrong hint gets an error code and changes nothing.
 *
 * Define SPILLWAY_NO_LOADER to get plain prototypes instead of the inline
 * loader (to link against libspillway directly; the library itself does).
 */
#ifndef SPILLWAY_H
#define SPILLWAY_H

#include <stdint.h>

#define SPILLWAY_API_VERSION 1

typedef enum {
    SPILLWAY_OK = 0,
    SPILLWAY_ENOTLOADED = -1, /* spillway is not preloaded: nothing happened */
    SPILLWAY_EINVAL = -2,     /* a bad argument: NULL, a size of 0, an
                               * unknown hint or statistic, a value out of
                               * range */
    SPILLWAY_ENOTTRACKED = -3, /* the range starts outside every tracked
                                * allocation */
    SPILLWAY_EOVERLAP = -4,   /* the range runs past the end of its allocation
                               * (into the next, or into untracked memory) */
    SPILLWAY_ENOTSUP = -5,    /* a valid request this library does not
                               * implement (see spillway_hint) */
    SPILLWAY_EBUSY = -6,      /* a stream capture is in progress, when no
                               * memory may move: nothing changed; retry
                               * after it ends */
    SPILLWAY_EPARTIAL = -7,   /* the budget is set, but chunks kept resident
                               * (or no longer movable) hold the GPU above it */
} spillway_status_t;

/* spillway_query's answer. Set size to sizeof(spillway_info_t) first. */
typedef struct {
    uint32_t size;          /* in: the caller's sizeof(spillway_info_t) */
    uint32_t api_version;   /* the library's SPILLWAY_API_VERSION */
    uint32_t stats_version; /* the library's stats format (spillway/stats.h) */
    uint32_t flags;         /* SPILLWAY_INFO_* */
    uint64_t gpu_budget;    /* bytes tracked chunks may hold on the GPU,
                             * prefetch window included; SPILLWAY_BUDGET_NONE:
                             * none (demote only when the driver runs out);
                             * SPILLWAY_BUDGET_UNKNOWN: a percentage of a
                             * device not yet seen */
    uint64_t host_budget;   /* bytes of pinned host memory for chunks */
    uint64_t min_alloc;     /* smaller allocations are not tracked */
    uint64_t chunk;         /* bytes per chunk (SPILLWAY_CHUNK, before
                             * rounding to the device's granularity) */
} spillway_info_t;

#define SPILLWAY_INFO_DISABLED 0x1u  /* SPILLWAY_DISABLE=1: all passes through */
#define SPILLWAY_INFO_TRACKING 0x2u  /* budgets are resolved: the first
                                      * allocation was tracked */
#define SPILLWAY_INFO_LEARNED 0x4u   /* SPILLWAY_POLICY=learned (else lru) */
#define SPILLWAY_INFO_REWRITE 0x8u   /* SPILLWAY_REWRITE=on */

/* Budget values with a meaning of their own. */
#define SPILLWAY_BUDGET_KEEP UINT64_MAX          /* spillway_set_budgets: unchanged */
#define SPILLWAY_BUDGET_NONE (UINT64_MAX - 1)    /* GPU: no budget */
#define SPILLWAY_BUDGET_UNKNOWN (UINT64_MAX - 2) /* query: not resolved yet */

/* Hints (spillway_hint). */
typedef enum {
    SPILLWAY_HINT_NONE = 0,          /* withdraw earlier hints on the range */
    SPILLWAY_HINT_KEEP_RESIDENT = 1, /* never demote it (a KV cache) */
    SPILLWAY_HINT_NEVER_STREAM = 2,  /* never serve it through the window */
    SPILLWAY_HINT_STREAM = 3,        /* stream it rather than keep it */
    SPILLWAY_HINT_READ_ONLY = 4,     /* kernels never write it (weights) */
} spillway_hint_t;

/*
 * spillway_query: fills *info (up to info->size bytes) with the effective
 * options and budgets. EINVAL when info is NULL or info->size is smaller
 * than the first four fields (16 bytes).
 *
 * spillway_stat: the calling process's statistic `name` (a field of
 * spillway/stats_fields.h, e.g. "demotions"): *value, and for a gauge its
 * peak in *peak (0 for a counter). Either pointer may be NULL. EINVAL when
 * name is NULL or unknown; value and peak are then untouched.
 *
 * spillway_stat_name: the name of statistic i (0, 1, ...), or NULL past
 * the last (and when spillway is not loaded).
 *
 * spillway_set_budgets: sets the GPU and the host budget, in bytes
 * (SPILLWAY_BUDGET_KEEP leaves one unchanged; SPILLWAY_BUDGET_NONE removes
 * the GPU budget). Before the first tracked allocation the values are kept
 * and take effect then. A smaller GPU budget demotes chunks at once (the
 * coldest first, after a device synchronization, as an allocation
 * would): OK when the GPU now holds no more than the budget; EPARTIAL
 * when chunks kept resident, or moves that failed, hold it above (the
 * budget stays set; later allocations go to host memory). A smaller host
 * budget moves nothing: it limits later moves. EBUSY during a stream
 * capture, EINVAL for a host budget of SPILLWAY_BUDGET_NONE or UNKNOWN
 * (or a GPU budget of UNKNOWN); both change nothing. The streaming window
 * is sized once, at the first tracked allocation, and keeps its size.
 *
 * spillway_hint: advice on [ptr, ptr + bytes). KEEP_RESIDENT: its chunks on
 * the GPU are never demoted, whatever the pressure (chunks on the host are
 * not moved by the hint; once the policy promotes one, it stays). NONE:
 * withdraws it. NEVER_STREAM, STREAM and READ_ONLY: ENOTSUP in this
 * version, after the range was checked. ENOTTRACKED, EOVERLAP, or EINVAL
 * (bytes 0, an unknown hint): nothing changed.
 *
 * spillway_phase: the program starts a new phase (prefill to decode, a new
 * adapter): the learned schedule (predicted reuse and popularity of every
 * chunk) is dropped at once, so the next launches teach the new one,
 * instead of the old estimate fading over a thousand launches (the
 * learned period, recomputed every 64 launches, follows within 64). What
 * was seen (each chunk's last use and use count) stays. OK always
 * (nothing to drop is not an error).
 */

#ifdef SPILLWAY_NO_LOADER

#ifdef __cplusplus
extern "C" {
#endif
int spillway_query(spillway_info_t *info);
int spillway_stat(const char *name, uint64_t *value, uint64_t *peak);
const char *spillway_stat_name(uint32_t i);
int spillway_set_budgets(uint64_t gpu_bytes, uint64_t host_bytes);
int spillway_hint(uint64_t ptr, uint64_t bytes, int hint);
int spillway_phase(void);
#ifdef __cplusplus
}
#endif

#else /* the inline loader */

#include <dlfcn.h>

/* Older glibc defines RTLD_DEFAULT only under _GNU_SOURCE; its value is
 * the null handle. */
#ifdef RTLD_DEFAULT
#define SPILLWAY__DEFAULT RTLD_DEFAULT
#else
#define SPILLWAY__DEFAULT ((void *)0)
#endif

/* The entry point `name`, looked up once per translation unit and call
 * site's slot; NULL when spillway is not loaded (looked up again next
 * time, so a library loaded later is found). Races are benign: every
 * thread finds the same address. */
static inline void *spillway__find(void **slot, const char *name)
{
    void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!f) {
        f = dlsym(SPILLWAY__DEFAULT, name);
        __atomic_store_n(slot, f, __ATOMIC_RELEASE);
    }
    return f;
}

#define SPILLWAY__CALL(ret, name, params, args, absent)            \
    static inline ret name params                                   \
    {                                                               \
        static void *slot_;                                         \
        ret(*f_) params;                                            \
        /* Stored through a void * lvalue: ISO C has no cast from an  \
         * object pointer to a function pointer. */                   \
        *(void **)(void *)&f_ = spillway__find(&slot_, #name);      \
        return f_ ? f_ args : (absent);                             \
    }

SPILLWAY__CALL(int, spillway_query, (spillway_info_t * info), (info), SPILLWAY_ENOTLOADED)
SPILLWAY__CALL(int, spillway_stat, (const char *name, uint64_t *value, uint64_t *peak),
               (name, value, peak), SPILLWAY_ENOTLOADED)
SPILLWAY__CALL(const char *, spillway_stat_name, (uint32_t i), (i), (const char *)0)
SPILLWAY__CALL(int, spillway_set_budgets, (uint64_t gpu_bytes, uint64_t host_bytes),
               (gpu_bytes, host_bytes), SPILLWAY_ENOTLOADED)
SPILLWAY__CALL(int, spillway_hint, (uint64_t ptr, uint64_t bytes, int hint),
               (ptr, bytes, hint), SPILLWAY_ENOTLOADED)
SPILLWAY__CALL(int, spillway_phase, (void), (), SPILLWAY_ENOTLOADED)

#undef SPILLWAY__CALL

#endif /* SPILLWAY_NO_LOADER */

#endif
