/*
 * Which memory a launch may touch, as far as its arguments tell.
 *
 * Pointers can hide anywhere in a parameter (PyTorch passes arrays of
 * pointers inside one by-value struct), so every 8-byte-aligned word of
 * every parameter is a candidate; the caller filters them against the
 * table. Pointers stored in device memory cannot be seen at all, which is
 * why spillway's correctness never depends on this scan.
 */
#include "../sw.h"

#include <string.h>

/* The cuLaunchKernel `extra` keys (cuda.h values; the core does not
 * include cuda.h). */
#define PARAM_END ((void *)0x00)
#define PARAM_BUFFER_POINTER ((void *)0x01)
#define PARAM_BUFFER_SIZE ((void *)0x02)

bool sw_extra_buffer(void *const *extra, const void **buf, size_t *len)
{
    const void *b = NULL;
    const size_t *n = NULL;
    for (size_t i = 0; extra[i] != PARAM_END; i += 2) {
        if (extra[i] == PARAM_BUFFER_POINTER)
            b = extra[i + 1];
        else if (extra[i] == PARAM_BUFFER_SIZE)
            n = extra[i + 1];
        else
            return false;
    }
    if (!b || !n)
        return false;
    *buf = b;
    *len = *n;
    return true;
}

size_t sw_scan_args(const sw_layout_t *l, void *const *params, const void *buf, size_t buflen,
                    void (*hit)(uint64_t word, void *arg), void *arg)
{
    if (!params)
        return buf ? sw_scan_words(buf, buflen < l->total ? buflen : l->total, hit, arg) : 0;
    size_t words = 0;
    for (uint32_t i = 0; i < l->nparams; i++)
        if (params[i])
            words += sw_scan_words(params[i], l->size[i], hit, arg);
    return words;
}

size_t sw_scan_words(const void *buf, size_t len, void (*hit)(uint64_t word, void *arg), void *arg)
{
    size_t words = 0;
    uint64_t w;
    for (size_t off = 0; off + 8 <= len; off += 8) {
        memcpy(&w, (const unsigned char *)buf + off, 8);
        if (w) {
            hit(w, arg);
            words++;
        }
    }
    return words;
}

/* Rewriting copies the parameters, never the caller's memory: the
 * application may reuse its argument buffers as soon as the launch
 * returns, and a kernel launched again with the same buffers must see
 * its own pointers. */
size_t sw_rewrite_params(const sw_layout_t *l, void *const *params, void **out, unsigned char *store,
                         size_t storelen, bool (*map)(uint64_t word, uint64_t *to, void *arg),
                         void *arg)
{
    size_t changed = 0;
    for (uint32_t i = 0; i < l->nparams; i++) {
        out[i] = params[i];
        if (!params[i] || l->offset[i] + (size_t)l->size[i] > storelen)
            continue;
        unsigned char *copy = store + l->offset[i];
        bool copied = false;
        for (size_t off = 0; off + 8 <= l->size[i]; off += 8) {
            uint64_t w, to;
            memcpy(&w, (const unsigned char *)params[i] + off, 8);
            if (!w || !map(w, &to, arg))
                continue;
            if (!copied) {
                memcpy(copy, params[i], l->size[i]);
                out[i] = copy;
                copied = true;
            }
            memcpy(copy + off, &to, 8);
            changed++;
        }
    }
    return changed;
}

size_t sw_rewrite_buffer(const sw_layout_t *l, const void *buf, size_t len, unsigned char *out,
                         bool (*map)(uint64_t word, uint64_t *to, void *arg), void *arg)
{
    size_t changed = 0, scan = len < l->total ? len : l->total;
    memcpy(out, buf, len);
    for (size_t off = 0; off + 8 <= scan; off += 8) {
        uint64_t w, to;
        memcpy(&w, out + off, 8);
        if (w && map(w, &to, arg)) {
            memcpy(out + off, &to, 8);
            changed++;
        }
    }
    return changed;
}

/* A descriptor is aligned to 64 bytes in whatever holds it. */
#define DESC_ALIGN 64u

size_t sw_scan_descriptors(const sw_layout_t *l, void *const *params, const void *buf,
                           size_t buflen,
                           void (*fn)(uint32_t index, uint32_t offset, const void *window,
                                      void *arg),
                           void *arg)
{
    if (!params && !buf)
        return 0;
    size_t limit = buflen < l->total ? buflen : l->total, windows = 0;
    for (uint32_t i = 0; i < l->nparams; i++) {
        if (params && !params[i])
            continue;
        for (uint32_t off = 0; off + SW_TMAP_BYTES <= l->size[i]; off += DESC_ALIGN) {
            const unsigned char *w;
            if (params) {
                w = (const unsigned char *)params[i] + off;
            } else {
                /* The extra form: the buffer may end before the layout does. */
                if ((uint64_t)l->offset[i] + off + SW_TMAP_BYTES > limit)
                    break;
                w = (const unsigned char *)buf + l->offset[i] + off;
            }
            fn(i, off, w, arg);
            windows++;
        }
    }
    return windows;
}
