// spillway's own kernel: a 128-bit fingerprint of a chunk, computed on the
// GPU. The caller zeroes out[0..1] first.
//
//   out[k] = sum over 8-byte words i (the tail zero-padded) of
//            mix_k(w_i, i), mod 2^64,                      k = 0, 1
//
// mix_0 and mix_1 are two different full-avalanche 64-bit finalizers
// (MurmurHash3's fmix64 and SplitMix64's), each keyed by the word's index
// and each a bijection of w for a fixed i.
//
// WHAT IT PROMISES. spillway skips copying a chunk home when its
// fingerprint is the same as when its host copy was made:
//   - a change confined to one 8-byte word (any bits of it) always changes
//     both sums, since it changes exactly one term of each: exact;
//   - any other change is missed only if both 64-bit sums cancel at once.
//     Each term of each lane is a strong keyed hash of (word, index), so a
//     change of k >= 2 words moves the two lanes by sums of k pseudo-random
//     64-bit differences, drawn by two unrelated functions: for data not
//     built against these public functions, a miss has probability about
//     2^-128 per comparison. The hash is not cryptographic: memory crafted
//     to collide could defeat it, and nothing else in spillway defends
//     against the application either.
// The sum before this (one multiply per word) had no avalanche: flipping
// bit 63 of a word moved its term by exactly 2^63 +- 2^32, so two sign
// flips cancelled half the time. Strong mixing is what makes an order-free
// sum safe here; the sum is what lets threads add terms in any order (warp
// reduction, then atomicAdd), so the result does not depend on the launch
// geometry.
//
// simgpu implements the same function as a built-in kernel of this name,
// bit for bit. tools/gen-fingerprint-ptx.sh turns this into
// src/fingerprint_ptx.h.

typedef unsigned long long u64;

__device__ static u64 mix0(u64 w, u64 i)
{
    w += (i + 1) * 0x9E3779B97F4A7C15ull;
    w ^= w >> 33;
    w *= 0xFF51AFD7ED558CCDull;
    w ^= w >> 33;
    w *= 0xC4CEB9FE1A85EC53ull;
    return w ^ (w >> 33);
}

__device__ static u64 mix1(u64 w, u64 i)
{
    w ^= (i + 1) * 0xD6E8FEB86659FD93ull;
    w ^= w >> 30;
    w *= 0xBF58476D1CE4E5B9ull;
    w ^= w >> 27;
    w *= 0x94D049BB133111EBull;
    return w ^ (w >> 31);
}

// The streaming window's guard for pointers a kernel derives from its
// arguments and stores (window.c, "Escaped pointers"): after a launch whose
// arguments were pointed at window copies, every 8-byte word of the spans
// it could have written that holds an address inside one of those copies
// is put back to the same offset in that copy's home, and the home's unit
// is flagged, so that the host stops serving it from copies. The layout is
// sw_unwindow_t in src/device.h, and simgpu's built-in of this name
// (tests/simgpu/sg_kernels.c), field for field.
#define UNWINDOW_SPANS 8
#define UNWINDOW_COPIES 16

struct unwindow_args {
    u64 lo[UNWINDOW_SPANS], len[UNWINDOW_SPANS];
    u64 copy[UNWINDOW_COPIES], copy_len[UNWINDOW_COPIES], home[UNWINDOW_COPIES];
    unsigned unit[UNWINDOW_COPIES];
    unsigned nspans, ncopies;
    unsigned *found;
};

// v, or where it is an address in a copy, the same offset in its home
// (its unit flagged).
__device__ static u64 put_back(const unwindow_args &a, u64 v)
{
    for (unsigned k = 0; k < a.ncopies; k++)
        if (v - a.copy[k] < a.copy_len[k]) {
            a.found[a.unit[k]] = 1;
            return a.home[k] + (v - a.copy[k]);
        }
    return v;
}

// The whole words of span s: [*first, *end).
__device__ static void span_words(const unwindow_args &a, unsigned s, u64 *first, u64 *end)
{
    *first = (a.lo[s] + 7) & ~7ull;
    *end = (a.lo[s] + a.len[s]) & ~7ull;
}

// Whether the word at address at lies in one of the spans.
__device__ static bool in_spans(const unwindow_args &a, u64 at)
{
    for (unsigned s = 0; s < a.nspans; s++) {
        u64 first, end;
        span_words(a, s, &first, &end);
        if (at >= first && at < end)
            return true;
    }
    return false;
}

// [*lo, *hi): where the words of the spans inside [src, +bytes) lie (none:
// lo == hi), so that the fingerprint looks for them only there.
__device__ static void spans_within(const unwindow_args &a, u64 src, u64 bytes, u64 *lo, u64 *hi)
{
    *lo = *hi = src;
    for (unsigned s = 0; s < a.nspans; s++) {
        u64 first, end;
        span_words(a, s, &first, &end);
        if (first >= end || first >= src + bytes || end <= src)
            continue;
        if (*lo == *hi || first < *lo)
            *lo = first;
        if (end > *hi)
            *hi = end;
    }
}

// Puts back the spans' words, strided over the grid, but those in
// [skip, +skip_len): the fingerprint of that range puts back its own.
__device__ static void unwindow(const unwindow_args &a, u64 skip, u64 skip_len)
{
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (unsigned s = 0; s < a.nspans; s++) {
        u64 first, end;
        span_words(a, s, &first, &end);
        u64 *w = (u64 *)first;
        u64 n = end > first ? (end - first) / 8 : 0;
        for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
            if ((u64)(w + i) - skip < skip_len)
                continue;
            // Written only when put back: a span may reach words another
            // stream writes (a neighbour's output in one buffer).
            u64 v = w[i], back = put_back(a, v);
            if (back != v)
                w[i] = back;
        }
    }
}

extern "C" __global__ void spillway_unwindow(const __grid_constant__ unwindow_args a)
{
    unwindow(a, 0, 0);
}

// Adds this thread's share of the fingerprint of [src, +bytes) into
// out[0..1]: its words, strided over the grid, the tail zero-padded by
// the first thread, summed over the warp first. With look, a word in its
// spans is put back first, by the thread that hashes it, so that no other
// thread writes a word while this one reads it.
__device__ static void add_fingerprint(const void *src, u64 bytes, u64 *out,
                                       const unwindow_args *look)
{
    u64 *w = (u64 *)src;
    u64 n = bytes / 8, s0 = 0, s1 = 0, lo = 0, hi = 0;
    if (look)
        spans_within(*look, (u64)src, bytes, &lo, &hi);
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        u64 v = w[i];
        if ((u64)(w + i) - lo < hi - lo && in_spans(*look, (u64)(w + i))) {
            u64 back = put_back(*look, v);
            if (back != v)
                w[i] = v = back;
        }
        s0 += mix0(v, i);
        s1 += mix1(v, i);
    }
    if (blockIdx.x == 0 && threadIdx.x == 0 && (bytes & 7)) {
        u64 tail = 0;
        const unsigned char *t = (const unsigned char *)src + 8 * n;
        for (u64 k = 0; k < (bytes & 7); k++)
            tail |= (u64)t[k] << (8 * k);
        s0 += mix0(tail, n);
        s1 += mix1(tail, n);
    }
    for (int off = 16; off > 0; off >>= 1) {
        s0 += __shfl_down_sync(0xffffffffu, s0, off);
        s1 += __shfl_down_sync(0xffffffffu, s1, off);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(&out[0], s0);
        atomicAdd(&out[1], s1);
    }
}

extern "C" __global__ void spillway_fingerprint(const void *src, u64 bytes, u64 *out)
{
    add_fingerprint(src, bytes, out, nullptr);
}

// The streaming window's write-back (window.c): copies a window copy home
// only if the kernels that read it changed it, without the host looking.
// fp_home is the fingerprint of the bytes home holds, fp_now that of the
// window copy, both taken by spillway_fingerprint; every block decides
// alone from the two, so none may change them here (spillway updates
// fp_home with a copy after this kernel). *changed is set for the host to
// read later: the range is then written back unconditionally from then on.
extern "C" __global__ void spillway_copy_if_changed(const void *src, void *dst, u64 bytes,
                                                    const u64 *fp_home, const u64 *fp_now,
                                                    unsigned *changed)
{
    if (fp_home[0] == fp_now[0] && fp_home[1] == fp_now[1])
        return;
    if (blockIdx.x == 0 && threadIdx.x == 0)
        *changed = 1;
    const u64 *s = (const u64 *)src;
    u64 *d = (u64 *)dst;
    u64 n = bytes / 8;
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        d[i] = s[i];
    if (blockIdx.x == 0 && threadIdx.x == 0)
        for (u64 k = 8 * n; k < bytes; k++)
            ((unsigned char *)dst)[k] = ((const unsigned char *)src)[k];
}

// The streaming window's way home after a launch, in one kernel where the
// copy was never found changed (window.c, ORDER): spillway_fingerprint of
// the copy into acc[0..1], then the last block to finish compares it with
// fp_home and, on a difference, copies the copy home, sets *changed and
// takes the copy's fingerprint as home's; it leaves acc[0..2] zero for the
// next launch. One kernel where three and a memset ran: a segment of
// twenty tensors pays it after each of their twenty launches. The last
// block copies alone, slowly (a few GB/s), but only once: *changed tells
// the host that the range is written, and its later ways home copy with
// the whole grid (spillway_copy_if_changed). acc[2] counts the blocks done.
__device__ static void way_home(const void *src, void *dst, u64 bytes, u64 *fp_home, u64 *acc,
                                unsigned *changed, const unwindow_args *look)
{
    __shared__ bool last;
    add_fingerprint(src, bytes, acc, look);
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0)
        last = atomicAdd(&acc[2], 1ull) == gridDim.x - 1;
    __syncthreads();
    if (!last)
        return;
    __threadfence();
    u64 now0 = *(volatile u64 *)&acc[0], now1 = *(volatile u64 *)&acc[1];
    bool same = fp_home[0] == now0 && fp_home[1] == now1;
    if (!same) {
        const u64 *w = (const u64 *)src;
        u64 *d = (u64 *)dst, n = bytes / 8;
        for (u64 i = threadIdx.x; i < n; i += blockDim.x)
            d[i] = w[i];
        if (threadIdx.x == 0)
            for (u64 k = 8 * n; k < bytes; k++)
                ((unsigned char *)dst)[k] = ((const unsigned char *)src)[k];
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        if (!same) {
            *changed = 1;
            fp_home[0] = now0;
            fp_home[1] = now1;
        }
        acc[0] = acc[1] = acc[2] = 0;
    }
}

extern "C" __global__ void spillway_way_home(const void *src, void *dst, u64 bytes,
                                             u64 *fp_home, u64 *acc, unsigned *changed)
{
    way_home(src, dst, bytes, fp_home, acc, changed, nullptr);
}

// Both checks that follow a served launch, in one kernel where its first
// copy goes home by spillway_way_home: one launch fewer after each served
// launch (a segment of twenty tensors is served twenty times a step). The
// spans' words inside that copy (the served tensor's own first 64 KiB is
// one) are put back by the threads that hash them, the others first; each
// block counts itself done after both, so the last block's copy home
// holds every word put back. The host fuses them only where the copy is
// whole words (its tail word is no span's to put back) and no span
// reaches its home, which the copy home overwrites (window_use.c).
struct unwindow_home_args {
    unwindow_args uw;
    const void *src;
    void *dst;
    u64 bytes;
    u64 *fp_home, *acc;
    unsigned *changed;
};

extern "C" __global__ void spillway_unwindow_home(const __grid_constant__ unwindow_home_args a)
{
    unwindow(a.uw, (u64)a.src, a.bytes);
    way_home(a.src, a.dst, a.bytes, a.fp_home, a.acc, a.changed, &a.uw);
}
