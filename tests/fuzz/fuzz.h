/*
 * What the fuzz harnesses share: a reader that turns the fuzzer's bytes
 * into values, and the check that fails a run.
 *
 * Each harness is one LLVMFuzzerTestOneInput. It is built twice: by
 * tools/fuzz.sh with clang's libFuzzer and sanitizers, which search for
 * inputs, and by meson with replay.c as main, which runs every file of
 * its corpus and crashes directories as a regression test. So a check
 * must fail the same way under both: FUZZ_CHECK prints and aborts (not
 * assert(3), which NDEBUG would silence), libFuzzer records the input as
 * a crash, and the replay test dies.
 */
#ifndef FUZZ_H
#define FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(cond, ...)                                                       \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                           \
            fputc('\n', stderr);                                                    \
            abort();                                                                \
        }                                                                           \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input, consumed from the front. Past its end every read gives
 * zeros, so a short input is still a whole (if dull) case: the fuzzer's
 * mutations stay meaningful whatever they cut. Take one value per
 * statement: C leaves the order of two reads in one expression or one
 * initializer list unspecified, and the gcc replay must read an input as
 * the clang fuzzer did. */
typedef struct {
    const uint8_t *p;
    size_t n;
} fuzz_in_t;

static inline void fuzz_bytes(fuzz_in_t *in, void *out, size_t len)
{
    size_t take = len < in->n ? len : in->n;
    if (take)
        memcpy(out, in->p, take);
    if (len > take)
        memset((uint8_t *)out + take, 0, len - take);
    in->p += take;
    in->n -= take;
}

static inline uint8_t fuzz_u8(fuzz_in_t *in)
{
    uint8_t v;
    fuzz_bytes(in, &v, 1);
    return v;
}

static inline uint16_t fuzz_u16(fuzz_in_t *in)
{
    uint16_t v;
    fuzz_bytes(in, &v, 2);
    return v;
}

static inline uint32_t fuzz_u32(fuzz_in_t *in)
{
    uint32_t v;
    fuzz_bytes(in, &v, 4);
    return v;
}

static inline uint64_t fuzz_u64(fuzz_in_t *in)
{
    uint64_t v;
    fuzz_bytes(in, &v, 8);
    return v;
}

#endif
