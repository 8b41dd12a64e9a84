/*
 * SPILLWAY_* options: one table, parsed once at start-up.
 *
 * The table below is the only place an option exists. Its default is a
 * string run through the same parser as the user's value, so a default can
 * never disagree with what the parser accepts (the unit tests parse every
 * default), and sw_options_print walks the same table to show the effective
 * values. Adding an option is one line here plus a field in sw_options_t.
 *
 * This file is pure: it reads the environment array it is given, never the
 * process environment, and never calls CUDA. The caller decides what to do
 * with the message of a bad value (the library logs it and disables itself;
 * spillway-stat only needs STATS_DIR and carries on).
 *
 * Value forms:
 *   size      digits with an optional K/M/G/T multiplier (powers of 1024),
 *             itself optionally followed by "iB" or "B"; case-insensitive
 *             ("512k", "2MiB", "1GB"). A lone "B" means bytes. No sign, no
 *             spaces, no fraction; more than 2^64-1 bytes is refused.
 *   percent   digits with an optional fraction, then '%': 0 < p <= 100,
 *             rounded to a millionth of a percent (and refused if that
 *             leaves 0).
 *   amount    a size or a percent; the total the percent is of (device
 *             memory, RAM) is known only later (sw_amount_resolve).
 *   budgets   an amount for every device, or a list, separated by commas,
 *             of "D:amount" entries for device D (0..SW_MAX_DEVICES-1,
 *             each at most once) and at most one plain amount for the
 *             devices the list does not name ("0:20GiB,1:30GiB",
 *             "10GiB,1:40%"). A device neither names has no budget.
 *   bool      1/0 on/off yes/no true/false, case-insensitive.
 *   choice    one word of a fixed list, case-insensitive.
 *   path      any string shorter than the field (1024 bytes).
 * An option whose default is empty ("none": GPU_BUDGET, the paths) accepts
 * the empty value, meaning "none" again; any other option refuses it.
 */
#include "sw.h"

#include <stdarg.h>
#include <string.h>
#include <strings.h>

typedef enum {
    K_AMOUNT,   /* sw_amount_t: size or percentage */
    K_BUDGETS,  /* gpu_budget and gpu_budget_dev: an amount, or a per-device list */
    K_SIZE,     /* uint64_t */
    K_CHUNK,    /* uint64_t > 0, or auto (then chunk_given is false) */
    K_BOOL,     /* bool */
    K_CHOICE,   /* int: index into choices */
    K_PATH,     /* char[SW_PATH_FIELD] */
} kind_t;

/* Every path field of sw_options_t has this size (checked below). */
#define SW_PATH_FIELD 1024

typedef struct {
    const char *name;           /* without the SPILLWAY_ prefix */
    const char *dflt;
    kind_t kind;
    const char *help;
    size_t off;                 /* of the field in sw_options_t */
    const char *const *choices; /* K_CHOICE: NULL-terminated, index = value */
} opt_t;

#define PREFIX "SPILLWAY_"
#define PREFIX_LEN (sizeof PREFIX - 1)

/* Index = SW_LOG_* / SW_MEMINFO_* value. */
static const char *const log_levels[] = {"error", "warn", "info", "debug", NULL};
static const char *const meminfo_modes[] = {"physical", "virtual", NULL};
/* Index = sw_policy_kind_t. */
static const char *const policies[] = {"lru", "learned", NULL};

#define O(name, dflt, kind, field, help) \
    { name, dflt, kind, help, offsetof(sw_options_t, field), NULL }
#define C(name, dflt, field, choices, help) \
    { name, dflt, K_CHOICE, help, offsetof(sw_options_t, field), choices }
static const opt_t opts[] = {
    O("GPU_BUDGET", "", K_BUDGETS, gpu_budget,
      "device memory tracked allocations may use, on every device or per device (D:amount); unset: each device's free memory at its first tracked allocation less a sixteenth of its total; none: no budget, demote only on out-of-memory"),
    /* Per process, and nothing coordinates processes: eight of them, one
     * per GPU, must not pin more than half of RAM together by default. */
    O("HOST_BUDGET", "6.25%", K_AMOUNT, host_budget,
      "pinned host memory demoted chunks may use, per process (a percentage is of RAM)"),
    O("MIN_ALLOC", "2MiB", K_SIZE, min_alloc,
      "smaller allocations pass to the driver untracked"),
    O("CHUNK", "auto", K_CHUNK, chunk,
      "unit of demotion: tracked allocations are split into chunks of this size; auto: "
      "at most 32MiB and at most the largest power of two the device's GPU budget holds "
      "eight times; an allocation of at most that and at most 16MiB is one chunk, one of "
      "at most 32MiB is cut to the smaller of the two where the budget is 64MiB or more, "
      "a bigger one to the largest power of two the budget holds 64 times (at least the "
      "VMM granularity)"),
    O("DISABLE", "0", K_BOOL, disable,
      "pass every call straight to the driver"),
    C("LOG", "warn", log_level, log_levels,
      "least severe messages written: error, warn, info or debug"),
    O("LOG_FILE", "", K_PATH, log_file,
      "append messages to this file instead of stderr"),
    O("REPORT", "", K_PATH, report,
      "write the final statistics as JSON to this file at exit"),
    C("MEMINFO", "physical", meminfo, meminfo_modes,
      "what cuMemGetInfo reports: physical device memory or the virtual view with spilled bytes"),
    C("POLICY", "learned", policy, policies,
      "which chunks stay on the GPU: lru (the baseline) or learned (from the launch schedule)"),
    O("PREFETCH_BYTES", "25%", K_AMOUNT, prefetch_bytes,
      "each device's streaming window (a percentage is of its GPU budget; unset with a picked budget: "
      "fitted to two copies of the largest allocation that fits); 0 turns it off"),
    O("REWRITE", "1", K_BOOL, rewrite,
      "stream by copying into the window and rewriting kernel arguments; 0: remap chunks into window slots"),
    O("STATS_DIR", "", K_PATH, stats_dir,
      "directory of live stats files; empty: $XDG_RUNTIME_DIR/spillway or /tmp/spillway-<uid>"),
};
#undef O
#undef C

_Static_assert(sizeof(((sw_options_t *)0)->log_file) == SW_PATH_FIELD, "path field size");
_Static_assert(sizeof(((sw_options_t *)0)->report) == SW_PATH_FIELD, "path field size");
_Static_assert(sizeof(((sw_options_t *)0)->stats_dir) == SW_PATH_FIELD, "path field size");

#define NOPTS (sizeof opts / sizeof opts[0])

/* ---- value parsers ----------------------------------------------------- */

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Not toupper(3): the locale must not change how names compare. */
static char upper(char c)
{
    return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
}

bool sw_parse_size(const char *s, uint64_t *out)
{
    if (!s || !is_digit(*s))
        return false; /* empty, sign, space or junk */
    uint64_t v = 0;
    for (; is_digit(*s); s++) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    unsigned shift = 0;
    switch (*s) {
    case 'k': case 'K': shift = 10; break;
    case 'm': case 'M': shift = 20; break;
    case 'g': case 'G': shift = 30; break;
    case 't': case 'T': shift = 40; break;
    default: break;
    }
    if (shift) {
        s++;
        if (strcasecmp(s, "ib") == 0 || strcasecmp(s, "b") == 0 || *s == '\0')
            s += strlen(s);
    } else if (strcasecmp(s, "b") == 0) {
        s++;
    }
    if (*s || (shift && v > (UINT64_MAX >> shift)))
        return false;
    *out = v << shift;
    return true;
}

bool sw_parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"1", "on", "yes", "true"};
    static const char *const no[] = {"0", "off", "no", "false"};
    if (!s)
        return false;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = true;
            return true;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = false;
            return true;
        }
    }
    return false;
}

/* "40%", "12.5%", "100%". Parsed by hand: strtod would also take spaces,
 * signs, hex, "inf" and the locale's decimal point. The value is rounded
 * to a millionth of a percent, the unit sw_amount_resolve works in, and
 * kept as that many millionths over 10^6: a double that "%.6f" prints
 * exactly, so sw_options_print's output parses back to the same bits
 * (summing digit by digit in floating point did not: "1e-05%" was printed,
 * and the 11th digit lost). A percentage above 100, or one that rounds
 * to 0, is refused. */
#define MILLIONTHS 1000000u
static bool parse_percent(const char *s, double *out)
{
    if (!is_digit(*s))
        return false;
    uint64_t whole = 0;
    for (; is_digit(*s); s++) {
        whole = whole * 10 + (unsigned)(*s - '0');
        if (whole > 100)
            return false; /* also keeps a digit run from overflowing */
    }
    uint64_t frac = 0;         /* the first six decimals, in millionths */
    bool round_up = false, beyond = false;
    if (*s == '.') {
        s++;
        if (!is_digit(*s))
            return false;
        unsigned i = 0;
        for (; is_digit(*s); s++, i++) {
            unsigned d = (unsigned)(*s - '0');
            if (i < 6)
                frac = frac * 10 + d;
            else if (i == 6)
                round_up = d >= 5;
            beyond |= i >= 6 && d;
        }
        for (; i < 6; i++)
            frac *= 10;
    }
    if (strcmp(s, "%") != 0 || (whole == 100 && (frac || beyond)))
        return false;
    uint64_t p = whole * MILLIONTHS + frac + round_up;
    if (p == 0)
        return false;
    *out = (double)p / MILLIONTHS;
    return true;
}

/* memset and memcpy rather than initialisers and assignment: padding bytes
 * then compare equal too, and two parses of one environment are identical
 * byte for byte. */
static bool parse_amount(const char *s, sw_amount_t *a)
{
    sw_amount_t r;
    memset(&r, 0, sizeof r);
    size_t n = strlen(s);
    if (n && s[n - 1] == '%') {
        if (!parse_percent(s, &r.percent))
            return false;
        r.is_percent = true;
    } else if (!sw_parse_size(s, &r.bytes)) {
        return false;
    }
    r.set = true;
    memcpy(a, &r, sizeof r);
    return true;
}

/* An amount or a per-device list (K_BUDGETS) into *all and dev[]; false,
 * leaving both as they were, when any entry is malformed, a device is
 * out of range or named twice, or two entries are plain amounts. */
static bool parse_budgets(const char *s, sw_amount_t *all, sw_amount_t dev[SW_MAX_DEVICES])
{
    sw_amount_t a, d[SW_MAX_DEVICES];
    memset(&a, 0, sizeof a);
    memset(d, 0, sizeof d);
    char entry[64];
    for (const char *at = s;; at++) {
        size_t n = strcspn(at, ",");
        if (n == 0 || n >= sizeof entry)
            return false;
        memcpy(entry, at, n);
        entry[n] = '\0';
        char *colon = strchr(entry, ':');
        if (!colon) {
            if (a.set || !parse_amount(entry, &a))
                return false;
        } else {
            /* One digit: devices 0..7. */
            int k = entry[0] - '0';
            if (colon != entry + 1 || k < 0 || k >= SW_MAX_DEVICES || d[k].set ||
                !parse_amount(colon + 1, &d[k]))
                return false;
        }
        at += n;
        if (!*at)
            break;
    }
    memcpy(all, &a, sizeof a);
    memcpy(dev, d, sizeof d);
    return true;
}

const sw_amount_t *sw_gpu_budget_of(const sw_options_t *o, int dev)
{
    if (dev >= 0 && dev < SW_MAX_DEVICES && o->gpu_budget_dev[dev].set)
        return &o->gpu_budget_dev[dev];
    return &o->gpu_budget;
}

/* Integer arithmetic on the percentage in millionths of a percent: exact
 * for any total (no float can hold every uint64_t), never above total, and
 * the same under valgrind, which has no 80-bit long double. */
#define PERCENT_UNITS 100000000ull /* 100% */
uint64_t sw_amount_resolve(const sw_amount_t *a, uint64_t total)
{
    if (!a->is_percent)
        return a->bytes;
    uint64_t p = (uint64_t)(a->percent * (PERCENT_UNITS / 100) + 0.5);
    if (p >= PERCENT_UNITS)
        return total;
    /* p < 10^8 and total % 10^8 < 10^8: the products fit in 64 bits */
    return total / PERCENT_UNITS * p + total % PERCENT_UNITS * p / PERCENT_UNITS;
}

/* ---- messages ------------------------------------------------------------ */

/* Appends to buf like snprintf would, never overflowing; a full buffer just
 * truncates (the messages are for people, not for parsing). */
static void __attribute__((format(printf, 3, 4)))
append(char *buf, size_t len, const char *fmt, ...)
{
    if (!buf || !len)
        return;
    size_t used = strnlen(buf, len);
    if (used >= len - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
}

/* Appends n bytes of s (fewer at a NUL) as append would, each byte
 * outside printable ASCII, the backslash and the quote as \xNN: a value or
 * a name is the user's bytes, and the messages must stay one line each
 * (sw_options_parse's contract), with no terminal escape in them. Stops
 * when buf is full, however long s is. */
static void append_escaped(char *buf, size_t len, const char *s, size_t n)
{
    if (!buf || !len)
        return;
    size_t used = strnlen(buf, len);
    for (const unsigned char *p = (const unsigned char *)s; n && *p && used + 1 < len; p++, n--) {
        char one[5];
        if (*p < 0x20 || *p >= 0x7f || *p == '\\' || *p == '"')
            snprintf(one, sizeof one, "\\x%02x", *p);
        else
            snprintf(one, sizeof one, "%c", *p);
        for (const char *c = one; *c && used + 1 < len; c++)
            buf[used++] = *c;
        buf[used] = '\0';
    }
}

/* What a kind accepts, for the message of a bad value. */
static void expected(const opt_t *o, char *buf, size_t len)
{
    buf[0] = '\0';
    switch (o->kind) {
    case K_AMOUNT:
        append(buf, len, "a size such as 20GiB or 512MiB, or a percentage such as 40%%");
        break;
    case K_BUDGETS:
        append(buf, len,
               "a size such as 20GiB, a percentage such as 40%%, a list of device:amount "
               "such as 0:20GiB,1:30GiB (devices 0 to %d), or none",
               SW_MAX_DEVICES - 1);
        break;
    case K_SIZE:
        append(buf, len, "a size such as 2MiB, 512KiB or 4096 (bytes)");
        break;
    case K_CHUNK:
        append(buf, len, "auto or a size greater than zero such as 32MiB or 1GiB");
        break;
    case K_BOOL:
        append(buf, len, "1/0, on/off, yes/no or true/false");
        break;
    case K_CHOICE:
        append(buf, len, "one of");
        for (size_t i = 0; o->choices[i]; i++)
            append(buf, len, "%s %s", i ? (o->choices[i + 1] ? "," : " or") : "", o->choices[i]);
        break;
    case K_PATH:
        append(buf, len, "a path shorter than %d bytes", SW_PATH_FIELD);
        break;
    }
}

/* Optimal-string-alignment distance, case-insensitive: a swapped pair of
 * letters ("BUDGTE") costs 1, as people make that typo. Three rolling rows
 * of the usual table keep it small on the stack. Names longer than
 * NAME_MAX_CMP are never close to anything. */
#define NAME_MAX_CMP 64
static unsigned name_distance(const char *a, size_t la, const char *b, size_t lb)
{
    if (la > NAME_MAX_CMP || lb > NAME_MAX_CMP)
        return UINT32_MAX;
    unsigned rows[3][NAME_MAX_CMP + 1];
    unsigned *prev2 = rows[0], *prev = rows[1], *row = rows[2];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = (unsigned)j;
    for (size_t i = 1; i <= la; i++) {
        row[0] = (unsigned)i;
        for (size_t j = 1; j <= lb; j++) {
            char ca = upper(a[i - 1]), cb = upper(b[j - 1]);
            unsigned best = prev[j - 1] + (ca != cb);
            if (prev[j] + 1 < best)
                best = prev[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            if (i > 1 && j > 1 && ca == upper(b[j - 2]) && upper(a[i - 2]) == cb &&
                prev2[j - 2] + 1 < best)
                best = prev2[j - 2] + 1;
            row[j] = best;
        }
        unsigned *t = prev2;
        prev2 = prev;
        prev = row;
        row = t;
    }
    return prev[lb];
}

/* Whether name is a whole '_'-separated part at either end of known
 * ("BUDGET" of "GPU_BUDGET", "PREFETCH" of "PREFETCH_BYTES"), case aside:
 * a name shortened, not mistyped. */
static bool part_of(const char *name, size_t len, const char *known, size_t kl)
{
    if (len == 0 || len >= kl)
        return false;
    bool head = known[len] == '_', tail = known[kl - len - 1] == '_';
    for (size_t i = 0; i < len && (head || tail); i++) {
        head &= upper(name[i]) == known[i];
        tail &= upper(name[i]) == known[kl - len + i];
    }
    return head || tail;
}

/* The known option closest to an unknown name (without the prefix), or
 * NULL when none is close enough to be a likely typo: within a third of
 * the known name's length, and at least 1; failing that, the first the
 * name is a shortened form of. Ties go to the earlier entry. */
static const opt_t *closest(const char *name, size_t len)
{
    const opt_t *best = NULL;
    unsigned best_d = UINT32_MAX;
    for (size_t i = 0; i < NOPTS; i++) {
        size_t kl = strlen(opts[i].name);
        unsigned limit = kl / 3 ? (unsigned)(kl / 3) : 1;
        unsigned d = name_distance(name, len, opts[i].name, kl);
        if (d <= limit && d < best_d) {
            best = &opts[i];
            best_d = d;
        }
    }
    for (size_t i = 0; i < NOPTS && !best; i++)
        if (part_of(name, len, opts[i].name, strlen(opts[i].name)))
            best = &opts[i];
    return best;
}

/* ---- the table driven parts ------------------------------------------------ */

/* Stores value v of option o into *out. Returns false, leaving *out as it
 * was, when v is not an accepted form. */
static bool apply(const opt_t *o, sw_options_t *out, const char *v)
{
    void *field = (char *)out + o->off;
    bool none = v[0] == '\0' && o->dflt[0] == '\0';
    switch (o->kind) {
    case K_AMOUNT: {
        sw_amount_t a;
        memset(&a, 0, sizeof a);
        if (!none && !parse_amount(v, &a))
            return false;
        memcpy(field, &a, sizeof a);
        return true;
    }
    case K_BUDGETS: {
        sw_options_t *o_ = out;
        bool off = strcmp(v, "none") == 0;
        if (!none && !off) {
            if (!parse_budgets(v, &o_->gpu_budget, o_->gpu_budget_dev))
                return false;
            o_->gpu_budget_off = false;
            return true;
        }
        memset(&o_->gpu_budget, 0, sizeof o_->gpu_budget);
        memset(o_->gpu_budget_dev, 0, sizeof o_->gpu_budget_dev);
        o_->gpu_budget_off = off;
        return true;
    }
    case K_SIZE: {
        uint64_t n;
        if (!sw_parse_size(v, &n))
            return false;
        *(uint64_t *)field = n;
        return true;
    }
    case K_CHUNK: {
        uint64_t n = SW_DEFAULT_CHUNK;
        bool given = strcasecmp(v, "auto") != 0;
        if (given && (!sw_parse_size(v, &n) || n == 0))
            return false;
        *(uint64_t *)field = n;
        out->chunk_given = given;
        return true;
    }
    case K_BOOL:
        return sw_parse_bool(v, field);
    case K_CHOICE:
        for (int i = 0; o->choices[i]; i++) {
            if (strcasecmp(v, o->choices[i]) == 0) {
                *(int *)field = i;
                return true;
            }
        }
        return false;
    case K_PATH:
        if (strlen(v) >= SW_PATH_FIELD)
            return false;
        /* Zeros after the NUL too: a path set twice leaves no bytes of the
         * first behind, so equal options are equal byte for byte. */
        memset(field, 0, SW_PATH_FIELD);
        memcpy(field, v, strlen(v));
        return true;
    }
    return false;
}

/* The whole environment is read even after a bad value, so that *o ends up
 * with the defaults plus every valid value and warn lists every unknown
 * name, one line each, each ending in '\n' (ready for fputs); err keeps
 * the first bad value only, without a '\n'. When a name appears twice the
 * later entry wins, as getenv's callers would not see it anyway. */
int sw_options_parse(sw_options_t *o, char *const *env, char *err, size_t errlen,
                     char *warn, size_t warnlen)
{
    memset(o, 0, sizeof *o);
    for (size_t i = 0; i < NOPTS; i++) {
        apply(&opts[i], o, opts[i].dflt); /* cannot fail: the tests parse every default */
        if (opts[i].kind == K_AMOUNT)
            ((sw_amount_t *)((char *)o + opts[i].off))->set = false;
    }
    if (err && errlen)
        err[0] = '\0';
    if (warn && warnlen)
        warn[0] = '\0';

    int rc = 0;
    for (char *const *e = env; e && *e; e++) {
        const char *s = *e;
        const char *eq = strchr(s, '=');
        if (strncmp(s, PREFIX, PREFIX_LEN) != 0 || !eq)
            continue;
        const char *name = s + PREFIX_LEN;
        size_t len = (size_t)(eq - name);
        const opt_t *o_ = NULL;
        for (size_t i = 0; i < NOPTS && !o_; i++)
            if (strlen(opts[i].name) == len && memcmp(opts[i].name, name, len) == 0)
                o_ = &opts[i];
        if (!o_) {
            const opt_t *near = closest(name, len);
            append(warn, warnlen, "spillway: unknown variable ");
            append_escaped(warn, warnlen, s, (size_t)(eq - s));
            if (near)
                append(warn, warnlen, " (did you mean " PREFIX "%s?)", near->name);
            append(warn, warnlen, "\n");
            continue;
        }
        if (apply(o_, o, eq + 1))
            continue;
        if (rc == 0 && err && errlen) {
            char forms[160];
            expected(o_, forms, sizeof forms);
            err[0] = '\0';
            append(err, errlen, "spillway: bad value " PREFIX "%s=\"", o_->name);
            append_escaped(err, errlen, eq + 1, SIZE_MAX);
            append(err, errlen, "\": expected %s", forms);
        }
        rc = -1;
    }
    return rc;
}

/* The shortest exact spelling: "32MiB", not "33554432". */
static void format_size(uint64_t v, char *buf, size_t len)
{
    static const char *const units[] = {"TiB", "GiB", "MiB", "KiB"};
    for (int i = 0; i < 4; i++) {
        unsigned shift = 40 - 10 * (unsigned)i;
        if (v && (v & ((1ull << shift) - 1)) == 0) {
            snprintf(buf, len, "%llu%s", (unsigned long long)(v >> shift), units[i]);
            return;
        }
    }
    snprintf(buf, len, "%llu", (unsigned long long)v);
}

/* A percentage as parse_percent reads it back: its millionths exactly,
 * without trailing zeros ("6.25%", "25%"). */
static void format_percent(double v, char *buf, size_t len)
{
    char digits[32];
    snprintf(digits, sizeof digits, "%.6f", v);
    char *end = digits + strlen(digits);
    while (end[-1] == '0')
        end--;
    if (end[-1] == '.')
        end--;
    *end = '\0';
    snprintf(buf, len, "%s%%", digits);
}

static void format_amount(const sw_amount_t *a, char *buf, size_t len)
{
    if (a->is_percent)
        format_percent(a->percent, buf, len);
    else if (a->set || a->bytes)
        format_size(a->bytes, buf, len);
    else
        buf[0] = '\0';
}

/* The amount for every device (if set) first, then each device's entry:
 * a form parse_budgets reads back to the same options. */
static void format_budgets(const sw_options_t *opt, char *buf, size_t len)
{
    char one[48];
    if (opt->gpu_budget_off) {
        snprintf(buf, len, "none");
        return;
    }
    format_amount(&opt->gpu_budget, buf, len);
    for (int d = 0; d < SW_MAX_DEVICES; d++) {
        if (!opt->gpu_budget_dev[d].set)
            continue;
        format_amount(&opt->gpu_budget_dev[d], one, sizeof one);
        append(buf, len, "%s%d:%s", buf[0] ? "," : "", d, one);
    }
}

static void format_value(const opt_t *o, const sw_options_t *opt, char *buf, size_t len)
{
    const void *field = (const char *)opt + o->off;
    switch (o->kind) {
    case K_AMOUNT:
        format_amount(field, buf, len);
        return;
    case K_BUDGETS:
        format_budgets(opt, buf, len);
        return;
    case K_SIZE:
        format_size(*(const uint64_t *)field, buf, len);
        return;
    case K_CHUNK:
        if (opt->chunk_given)
            format_size(*(const uint64_t *)field, buf, len);
        else
            snprintf(buf, len, "auto");
        return;
    case K_BOOL:
        snprintf(buf, len, "%d", *(const bool *)field ? 1 : 0);
        return;
    case K_CHOICE: {
        int v = *(const int *)field, n = 0;
        while (o->choices[n])
            n++;
        snprintf(buf, len, "%s", v >= 0 && v < n ? o->choices[v] : "?");
        return;
    }
    case K_PATH:
        snprintf(buf, len, "%s", (const char *)field);
        return;
    }
}

/* Output that parses back to the same options (tested, and fuzzed:
 * tests/fuzz), but for a path holding a newline, which one line per
 * option cannot show: it is printed as it is. */
void sw_options_print(const sw_options_t *o, FILE *f)
{
    char v[SW_PATH_FIELD + 32];
    for (size_t i = 0; i < NOPTS; i++) {
        format_value(&opts[i], o, v, sizeof v);
        fprintf(f, PREFIX "%s=%s\n", opts[i].name, v);
    }
}

bool sw_option_info(size_t i, sw_option_info_t *out)
{
    if (i >= NOPTS)
        return false;
    out->name = opts[i].name;
    out->dflt = opts[i].dflt;
    out->help = opts[i].help;
    expected(&opts[i], out->forms, sizeof out->forms);
    return true;
}

void sw_options_help(FILE *f)
{
    sw_option_info_t o;
    for (size_t i = 0; sw_option_info(i, &o); i++)
        fprintf(f, PREFIX "%-12s %s\n    %s (default: %s)\n", o.name, o.help, o.forms,
                o.dflt[0] ? o.dflt : "none");
}
