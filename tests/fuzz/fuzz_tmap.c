/*
 * Fuzzes the table of TMA descriptors (core/tmap.c): a sequence of
 * inserts, lookups and launch-argument matches (sw_tmap_locate) on a
 * small table, so that the clock evicts often, and sw_tmap_extent on any
 * dimensions.
 *
 * The input gives the table's size (1 to 32 entries), a pool of up to 16
 * descriptors (one base of 128 bytes, each member differing from it in
 * one byte, so members may also be equal, which must then be one key),
 * and up to 64 operations. A model keeps, for every distinct descriptor
 * ever inserted, the value inserted last. Checks:
 *   - a lookup that finds a descriptor gives the value inserted last for
 *     those bytes; one never inserted is never found; one just inserted
 *     is always found;
 *   - the count is min(size, distinct descriptors inserted): nothing is
 *     evicted before the table is full, and it stays full after;
 *   - at the end, exactly count of the inserted descriptors are found;
 *   - sw_tmap_locate reports, in parameter order, exactly the windows
 *     (sw_scan_descriptors' 128 bytes at 64-byte steps) whose bytes the
 *     table holds, each with its value, the first max of them, in both
 *     the kernelParams and the packed-buffer form;
 *   - sw_tmap_extent equals the sum computed in 128-bit integers, and 0
 *     exactly when an argument is out of range or the sum does not fit
 *     in 64 bits.
 */
#include <stdbool.h>

#include "fuzz.h"
#include "sw.h"

#define POOL 16
#define MAX_OPS 64
#define MAX_PARAMS 6
#define MAX_OUT 8

typedef struct {
    uint8_t desc[POOL][SW_TMAP_BYTES];
    size_t npool;
    /* The model: distinct descriptors inserted, and each one's last value. */
    uint8_t key[POOL][SW_TMAP_BYTES];
    sw_tmap_val_t val[POOL];
    size_t nkeys;
} model_t;

static int model_find(const model_t *m, const void *desc)
{
    for (size_t i = 0; i < m->nkeys; i++)
        if (memcmp(m->key[i], desc, SW_TMAP_BYTES) == 0)
            return (int)i;
    return -1;
}

static void check_found(const model_t *m, const void *desc, bool found, sw_tmap_val_t v)
{
    int k = model_find(m, desc);
    FUZZ_CHECK(!found || k >= 0, "found a descriptor never inserted");
    if (found)
        FUZZ_CHECK(v.addr == m->val[k].addr && v.bytes == m->val[k].bytes,
                   "found value %llx, last inserted %llx", (unsigned long long)v.addr,
                   (unsigned long long)m->val[k].addr);
}

static void check_count(const sw_tmap_t *t, const model_t *m, size_t max)
{
    size_t want = m->nkeys < max ? m->nkeys : max;
    FUZZ_CHECK(sw_tmap_count(t) == want, "count %zu, expected %zu", sw_tmap_count(t), want);
}

/* A launch whose parameters hold pool descriptors or other bytes in
 * their 64-byte-aligned windows; sw_tmap_locate on it in both forms. */
static void check_locate(fuzz_in_t *in, sw_tmap_t *t, const model_t *m)
{
    static const uint32_t sizes[] = {8, 64, 128, 192, 256, 320};
    uint32_t offset[MAX_PARAMS], size[MAX_PARAMS];
    sw_layout_t l = {.nparams = 1 + fuzz_u8(in) % MAX_PARAMS, .offset = offset, .size = size};
    uint32_t at = 0;
    for (uint32_t i = 0; i < l.nparams; i++) {
        at += fuzz_u8(in) % 72;
        offset[i] = at;
        size[i] = sizes[fuzz_u8(in) % 6];
        at += size[i];
    }
    l.total = at;
    uint8_t *buf = calloc(1, at);
    FUZZ_CHECK(buf, "calloc");
    /* Fill each parameter 64 bytes at a time: a pool member's half, or
     * bytes of the input. A descriptor is two such halves in a row. */
    for (uint32_t i = 0; i < l.nparams; i++)
        for (uint32_t off = 0; off < size[i]; off += 64) {
            uint8_t pick = fuzz_u8(in);
            uint32_t n = size[i] - off < 64 ? size[i] - off : 64;
            if (pick < 4 * POOL)
                memcpy(buf + offset[i] + off, m->desc[(pick / 2) % m->npool] + 64 * (pick & 1), n);
            else
                fuzz_bytes(in, buf + offset[i] + off, n);
        }
    size_t max = 1 + fuzz_u8(in) % MAX_OUT, buflen = at - fuzz_u8(in) % 64 % (at + 1);
    void *params[MAX_PARAMS];
    for (uint32_t i = 0; i < l.nparams; i++)
        params[i] = buf + offset[i];
    for (int form = 0; form < 2; form++) {
        sw_tmap_at_t out[MAX_OUT];
        size_t n = form ? sw_tmap_locate(t, &l, NULL, buf, buflen, out, max)
                        : sw_tmap_locate(t, &l, params, NULL, 0, out, max);
        FUZZ_CHECK(n <= max, "%zu found, at most %zu asked", n, max);
        /* Every window, in order, as sw_scan_descriptors gives them; only
         * as far as locate looked (it stops at max), so that the lookups
         * here mark no entry it did not. */
        size_t k = 0;
        for (uint32_t i = 0; i < l.nparams && k < max; i++)
            for (uint32_t off = 0; off + SW_TMAP_BYTES <= size[i] && k < max; off += 64) {
                if (form && offset[i] + off + SW_TMAP_BYTES > (buflen < at ? buflen : at))
                    break;
                sw_tmap_val_t v;
                if (!sw_tmap_lookup(t, buf + offset[i] + off, &v))
                    continue;
                check_found(m, buf + offset[i] + off, true, v);
                FUZZ_CHECK(k < n, "window %u+%u holds a descriptor locate missed", i, off);
                FUZZ_CHECK(out[k].index == i && out[k].offset == off && out[k].v.addr == v.addr &&
                               out[k].v.bytes == v.bytes,
                           "result %zu is %u+%u, expected %u+%u", k, out[k].index, out[k].offset,
                           i, off);
                k++;
            }
        FUZZ_CHECK(k == n, "locate found %zu, the windows hold %zu", n, k);
    }
    free(buf);
}

static void check_extent(fuzz_in_t *in)
{
    /* One read per statement: the order of two in one expression is
     * unspecified, and gcc's replay must read what clang's fuzzer wrote. */
    uint32_t rank = fuzz_u8(in) % 7, elem = fuzz_u32(in);
    elem >>= fuzz_u8(in) % 32;
    uint64_t dim[5], strides[4];
    for (int i = 0; i < 5; i++) {
        dim[i] = fuzz_u64(in);
        dim[i] >>= fuzz_u8(in) % 64; /* small values too */
    }
    for (int i = 0; i < 4; i++) {
        strides[i] = fuzz_u64(in);
        strides[i] >>= fuzz_u8(in) % 64;
    }
    uint64_t got = sw_tmap_extent(rank, dim, strides, elem);
    bool valid = elem && rank >= 1 && rank <= 5;
    for (uint32_t i = 0; valid && i < rank; i++)
        valid = dim[i] != 0;
    unsigned __int128 want = 0;
    if (valid) {
        want = (unsigned __int128)dim[0] * elem;
        for (uint32_t i = 1; i < rank && want <= UINT64_MAX; i++)
            want += (unsigned __int128)(dim[i] - 1) * strides[i - 1];
    }
    uint64_t expect = valid && want <= UINT64_MAX ? (uint64_t)want : 0;
    FUZZ_CHECK(got == expect, "extent %llu, expected %llu", (unsigned long long)got,
               (unsigned long long)expect);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    FUZZ_CHECK(!sw_tmap_new(0) && !sw_tmap_new((1u << 24) + 1), "a table out of range was made");
    size_t max = 1 + fuzz_u8(&in) % 32;
    model_t m;
    memset(&m, 0, sizeof m);
    m.npool = 1 + fuzz_u8(&in) % POOL;
    uint8_t base[SW_TMAP_BYTES];
    fuzz_bytes(&in, base, sizeof base);
    for (size_t i = 0; i < m.npool; i++) {
        memcpy(m.desc[i], base, sizeof base);
        uint8_t at = fuzz_u8(&in) % SW_TMAP_BYTES;
        m.desc[i][at] ^= fuzz_u8(&in);
    }
    sw_tmap_t *t = sw_tmap_new(max);
    FUZZ_CHECK(t, "sw_tmap_new(%zu)", max);
    sw_tmap_val_t v;
    FUZZ_CHECK(!sw_tmap_lookup(NULL, base, &v) && sw_tmap_count(NULL) == 0, "a NULL table");

    size_t nops = fuzz_u8(&in) % (MAX_OPS + 1);
    for (size_t op = 0; op < nops && in.n; op++) {
        uint8_t b = fuzz_u8(&in);
        const uint8_t *d = m.desc[(b >> 2) % m.npool];
        switch (b & 3) {
        case 0: { /* insert */
            sw_tmap_val_t nv = {.addr = fuzz_u16(&in) * 4096ull};
            nv.bytes = fuzz_u8(&in);
            sw_tmap_insert(t, d, nv);
            int k = model_find(&m, d);
            if (k < 0) {
                k = (int)m.nkeys++;
                memcpy(m.key[k], d, SW_TMAP_BYTES);
            }
            m.val[k] = nv;
            FUZZ_CHECK(sw_tmap_lookup(t, d, &v), "a descriptor just inserted is not found");
            check_found(&m, d, true, v);
            break;
        }
        case 1: { /* lookup */
            bool found = sw_tmap_lookup(t, d, &v);
            check_found(&m, d, found, v);
            /* Nothing is evicted before the table is full. */
            FUZZ_CHECK(found || model_find(&m, d) < 0 || m.nkeys > max,
                       "an inserted descriptor is gone from a table never full");
            break;
        }
        case 2:
            check_locate(&in, t, &m);
            break;
        default:
            check_extent(&in);
            break;
        }
        check_count(t, &m, max);
    }
    /* Every entry is a distinct inserted descriptor: count of them found. */
    size_t found = 0;
    for (size_t k = 0; k < m.nkeys; k++)
        found += sw_tmap_lookup(t, m.key[k], &v);
    FUZZ_CHECK(found == sw_tmap_count(t), "%zu inserted descriptors found, count %zu", found,
               sw_tmap_count(t));
    sw_tmap_free(t);
    FUZZ_CHECK(sw_tmap_locate(NULL, NULL, NULL, NULL, 0, NULL, 1) == 0, "locate in no table");
    return 0;
}
