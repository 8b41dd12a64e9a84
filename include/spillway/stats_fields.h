/*
 * The one list of spillway's statistics, part of the public stats format
 * (spillway/stats.h). It generates the stats struct, the shared-memory
 * layout, the JSON report, spillway-stat's table and spillway_stat's
 * names. GAUGE fields keep a current value and a peak; COUNTER fields only
 * grow. X(kind, name, unit, help), one per line. Adding, removing or
 * reordering a field changes the file's layout: bump SW_STATS_VERSION.
 */
#ifndef SW_STATS_FIELDS_H
#define SW_STATS_FIELDS_H

#define SW_STATS_VERSION 9

/* The routes by which memory reaches the application without spillway
 * tracking it: R(X, name, help), one per route. Each becomes a counter,
 * passthrough_bytes_<name>: the bytes ever handed out that way. */
#define SW_PASSTHROUGH_ROUTES(R, X)                                                      \
    R(X, small, "bytes allocated below SPILLWAY_MIN_ALLOC, untracked")                   \
    R(X, capture, "bytes allocated during a stream capture (graph memory), untracked")   \
    R(X, device, "bytes allocated on a device spillway does not track")                  \
    R(X, pool, "bytes from memory pools spillway cannot track (exportable, not device memory)") \
    R(X, vmm, "bytes of the application's own VMM handles spillway cannot move (exported, imported, host)") \
    R(X, managed, "bytes of managed memory (cuMemAllocManaged), untracked")              \
    R(X, pitch, "bytes of pitched allocations (cuMemAllocPitch), untracked")             \
    R(X, off, "bytes allocated while spillway was off: disabled, VMM unusable, a fork child")
#define SW_PASSTHROUGH_FIELD(X, name, help) X(COUNTER, passthrough_bytes_##name, "bytes", help)

#define SW_STATS_FIELDS(X)                                                              \
    X(GAUGE, tracked_bytes, "bytes", "bytes in allocations spillway tracks")             \
    X(GAUGE, device_bytes, "bytes", "tracked bytes resident on the GPU, streaming window included") \
    X(GAUGE, host_bytes, "bytes", "tracked bytes in pinned host memory (zero-copy)")     \
    X(GAUGE, host_copy_bytes, "bytes", "host copies kept of chunks on the GPU: unchanged, they go home by a remap") \
    X(GAUGE, tracked_allocs, "count", "live tracked allocations")                        \
    X(COUNTER, demotions, "count", "chunks moved from the GPU to host memory")           \
    X(COUNTER, promotions, "count", "chunks moved from host memory to the GPU")          \
    X(COUNTER, bytes_demoted, "bytes", "bytes moved to host memory")                     \
    X(COUNTER, bytes_promoted, "bytes", "bytes moved to the GPU")                        \
    X(COUNTER, oom_recoveries, "count", "allocations that succeeded after the driver said out of memory") \
    X(COUNTER, safety_syncs, "count", "device synchronizations made before unmapping")  \
    X(COUNTER, launches, "count", "kernel launches seen")                                \
    X(COUNTER, launches_touching_host, "count", "launches whose arguments point into host-resident chunks") \
    X(COUNTER, passthrough_allocs, "count", "allocations passed to the driver untouched") \
    X(COUNTER, failed_moves, "count", "demotions or promotions abandoned (chunk left as it was)") \
    X(COUNTER, prefetches, "count", "chunks copied to the GPU ahead of use") \
    X(COUNTER, prefetch_hits, "count", "launches that found a chunk they use already prefetched") \
    X(COUNTER, prefetch_late, "count", "chunks brought in only when a launch needed them (not predicted in time)") \
    X(COUNTER, bytes_written_back, "bytes", "bytes copied from the GPU to host memory: changed since promotion, or never copied") \
    X(COUNTER, bytes_zero_copy_estimated, "bytes", "bytes kernels read from host memory in place (estimated from arguments)") \
    X(GAUGE, learned_period, "launches", "the learned period of the launch loop, in launches") \
    X(GAUGE, pool_device_bytes, "bytes", "device handles moves released, kept for the next move (within the GPU budget)") \
    X(GAUGE, pool_host_bytes, "bytes", "host handles moves released, kept for the next move (within the host budget)") \
    X(COUNTER, handles_reused, "count", "moves and allocations given a pooled handle instead of a new one") \
    X(COUNTER, bytes_streamed, "bytes", "bytes copied into the streaming window for kernels whose arguments were rewritten") \
    X(GAUGE, window_bytes, "bytes", "streaming window bytes holding a copy (filled or being filled)") \
    X(COUNTER, rewritten_launches, "count", "launches whose arguments were rewritten to point at window copies") \
    X(COUNTER, launches_waited, "count", "rewritten launches issued before their window copy had landed (the GPU waits, the host does not)") \
    X(COUNTER, descriptors_recognised, "count", "TMA descriptors in launch arguments matched to a cuTensorMapEncode* call") \
    X(COUNTER, ordered_frees_deferred, "count", "stream-ordered frees of tracked memory, released once the stream reached them") \
    X(COUNTER, ranges_read_in_place, "count", "ranges the streaming window leaves in place: timed, a visit read them there faster than one served from a copy took") \
    SW_PASSTHROUGH_ROUTES(SW_PASSTHROUGH_FIELD, X) \
    SW_STATS_DEVICE(X, 0) SW_STATS_DEVICE(X, 1) SW_STATS_DEVICE(X, 2) SW_STATS_DEVICE(X, 3)     \
    SW_STATS_DEVICE(X, 4) SW_STATS_DEVICE(X, 5) SW_STATS_DEVICE(X, 6) SW_STATS_DEVICE(X, 7)

/* Per device d (0..7, the CUdevice ordinal): its share of device_bytes,
 * its budget and its share of bytes_streamed. Eight fixed groups rather
 * than a label, so the file keeps one flat, fixed layout; a device
 * spillway never tracked reads 0 in each. */
#define SW_STATS_DEVICE(X, d)                                                                 \
    X(GAUGE, dev##d##_device_bytes, "bytes", "tracked bytes resident on device " #d ", its streaming window included") \
    X(GAUGE, dev##d##_gpu_budget, "bytes", "device " #d "'s GPU budget; 0: none set (or not tracked)") \
    X(COUNTER, dev##d##_bytes_streamed, "bytes", "bytes copied into device " #d "'s streaming window")

typedef enum {
#define SW_STAT_ENUM(kind, name, unit, help) SW_STAT_##name,
    SW_STATS_FIELDS(SW_STAT_ENUM)
#undef SW_STAT_ENUM
    SW_STAT_COUNT
} sw_stat_id_t;

#endif
