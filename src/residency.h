/*
 * The residency layer: the table of tracked allocations and where each
 * chunk lives (place.c owns every move), the allocators, budgets, the
 * launch path, the streaming and remapping windows, TMA descriptors and
 * what passes through. Calls the device and driver layers only; the
 * layer above hands callbacks down (sw_place_before_move,
 * sw_alloc_pending_frees).
 */
#ifndef SW_RESIDENCY_H
#define SW_RESIDENCY_H

#include "device.h"

/* ---- untracked.c: what spillway does not manage, by route ---- */
typedef enum {
#define SW_ROUTE_ENUM(X, name, help) SW_ROUTE_##name,
    SW_PASSTHROUGH_ROUTES(SW_ROUTE_ENUM, _)
#undef SW_ROUTE_ENUM
    SW_ROUTE_COUNT
} sw_route_t;
/* Counts bytes handed out untracked by route; the first time a route is
 * taken it is named once, at info level. Can't fail. */
void sw_untracked(sw_route_t route, uint64_t bytes);
/* cuMemAllocManaged and cuMemAllocPitch: the driver's, counted. */
CUresult sw_alloc_managed(CUdeviceptr *dptr, size_t bytesize, unsigned int flags);
CUresult sw_alloc_pitch(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                        unsigned int elemsize);

/* ---- ordered.c: the stream-ordered allocator ----
 * cuMemAllocAsync/cuMemAllocFromPoolAsync of at least SPILLWAY_MIN_ALLOC
 * are tracked like cuMemAlloc; cuMemFreeAsync of tracked memory is
 * released once its stream has reached the free. The pool hooks keep
 * track of pools whose memory spillway must not replace. */
CUresult sw_mem_alloc_async(CUresult (*real)(CUdeviceptr *, size_t, CUstream), CUdeviceptr *dptr,
                            size_t bytesize, CUstream st);
CUresult sw_mem_alloc_from_pool(CUresult (*real)(CUdeviceptr *, size_t, CUmemoryPool, CUstream),
                                CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream st);
CUresult sw_mem_free_async(CUresult (*real)(CUdeviceptr, CUstream), CUdeviceptr dptr, CUstream st);
CUresult sw_mempool_created(CUresult r, const CUmemoryPool *pool, const CUmemPoolProps *props);
CUresult sw_mempool_destroy(CUmemoryPool pool);
CUresult sw_mempool_trim(CUmemoryPool pool, size_t keep);
/* Releases the stream-ordered frees whose streams have reached them;
 * with wait, waits for every pending one first. Returns how many were
 * released. Takes the gate itself: never call it holding the gate. */
size_t sw_ordered_reap(bool wait);
/* Whether any stream-ordered free is pending. */
bool sw_ordered_any(void);
/* Whether a stream-ordered free of the allocation based at va is pending
 * (a second free of it is the application's error). */
bool sw_ordered_pending(CUdeviceptr va);

/* ---- replay.c: what each graph's capture pointed at ----
 * A capture's launches are recorded while it runs alone: its begin
 * (sw_record_begun, with the driver's answer) and its end
 * (sw_record_over, with the graph made, or NULL) bracket them; each
 * launch on a capturing stream gives its words (sw_record_word) then ends
 * (sw_record_launch), which keeps those `keep` says yes to. Executable
 * graphs made from a recorded graph share its recording; the destroy and
 * instantiate hooks pass the driver's answer through. */
typedef struct sw_recording sw_recording_t;
void sw_record_begun(CUresult r);
bool sw_recording_on(void);
void sw_record_word(uint64_t word);
void sw_record_launch(bool (*keep)(uint64_t word, void *arg), void *arg);
void sw_record_over(CUgraph g);
CUresult sw_graph_instantiated(CUresult r, const CUgraphExec *e, CUgraph g);
CUresult sw_graph_gone(CUresult r, CUgraph g);
CUresult sw_exec_gone(CUresult r, CUgraphExec e);
/* g's recording, held until sw_recording_put, or NULL. */
sw_recording_t *sw_recording_of(CUgraphExec g);
void sw_recording_put(sw_recording_t *r);
/* Its launches, and the words of launch i. */
uint32_t sw_recording_launches(const sw_recording_t *r);
const uint64_t *sw_recording_words(const sw_recording_t *r, uint32_t i, uint32_t *n);

/* ---- place.c: the table, the host budget, moves, the launch clock ---- */
/* The table of tracked allocations; callers hold the gate (shared to
 * read, exclusive to change). NULL before the first tracked allocation. */
sw_table_t *sw_tracked(void);
/* Sets it, once, with the first device (alloc.c). */
void sw_place_table(sw_table_t *t);
/* The host budget in bytes (0 until resolved) and its setting. */
uint64_t sw_host_budget(void);
void sw_set_host_budget(uint64_t bytes);
/* fn runs on a chunk before it moves: the remapping window's, which
 * drops the chunk's mirror (remap.c). A callback handed down, so that
 * placement calls nothing above it. */
void sw_place_before_move(void (*fn)(sw_chunk_t *));
/* The machine's RAM in bytes. */
uint64_t sw_physical_ram(void);
/* Releases the host copy a device chunk kept, if any (a window chunk's
 * home is its data, not a copy: remap.c owns it). Can't fail. */
void sw_drop_copy(sw_chunk_t *c);
/* Whether the host budget has room for need bytes, after dropping host
 * copies kept of device chunks (a saving, not data) if it must. */
bool sw_host_room_for(uint64_t need);
/* Where a chunk lies is written only by the transitions below, each with
 * the byte counts it changes (device bytes per device, host bytes):
 * sw_place_born backs a new chunk's address (sw_vmm_back) on the device
 * or the host and counts it; sw_place_gone uncounts a chunk being freed
 * (a window chunk's bytes count as host bytes: its slot belongs to the
 * remapping window, counted once as device bytes when it is made);
 * sw_place_slotted and sw_place_unslotted record that c's address now
 * maps a slot of the remapping window (handle), its own handle kept as
 * home, and that it maps its home again; sw_place_count counts bytes that
 * belong to no chunk (a window, an application's unmapped handle). */
CUresult sw_place_born(sw_chunk_t *c, sw_where_t where);
void sw_place_gone(const sw_chunk_t *c);
void sw_place_slotted(sw_chunk_t *c, int slot, uint64_t handle);
void sw_place_unslotted(sw_chunk_t *c);
void sw_place_count(int dev, sw_where_t where, int64_t bytes);
/* Moves chunk c to `to`, after the device was synchronized under the
 * exclusive gate (sw_safe_sync). Keeps the byte counts. Failure leaves c
 * exactly as it was. The learned policy keeps a promoted chunk's host
 * copy, so that demoting it unchanged moves no byte. */
CUresult sw_move(sw_chunk_t *c, sw_where_t to);
/* A trade of places (core's sw_pack_t): m's chunks out go home, then its
 * chunks in come, each by sw_move; false, moving no more, at the first
 * that fails. */
bool sw_trade(const sw_pack_t *m);
/* keep() for the policies that trade places: c, used by the launch at
 * *now, stays where it is. */
bool sw_used_at(const sw_chunk_t *c, void *now);
/* The device synchronization that makes unmapping safe; counted. Gate
 * held exclusively. */
CUresult sw_safe_sync(void);
/* The number of the latest launch seen, and the next launch's number. */
uint64_t sw_launch_now(void);
uint64_t sw_launch_next(void);
/* The learned period: recomputed every 8 to 64 launches, less often while
 * it stays the same (up to a loop) or the table is large (place.c). */
uint64_t sw_period(uint64_t now);
/* `every` doubled `times` times, never past `loop`: the spacing of a
 * question that kept finding the same answer (the period, a trade). */
uint64_t sw_spacing_doubled(uint64_t every, unsigned times, uint64_t loop);
/* The same, where most of the memory with a known loop agrees on it
 * (sw_learn_period); else 0: the loop is still being learned. */
uint64_t sw_agreed_period(uint64_t now);

/* ---- ptrinfo.c: what an application asks about a pointer ---- */
/* Asked by the runtime wrappers too. */
bool sw_is_tracked_base(CUdeviceptr p);
/* What p is to the table, looked up under the shared gate: a tracked
 * base, inside a tracked allocation but not its base, or neither. */
typedef enum { SW_FREE_UNTRACKED, SW_FREE_INSIDE, SW_FREE_TRACKED } sw_free_kind_t;
sw_free_kind_t sw_free_kind(CUdeviceptr p);
CUresult sw_mem_get_range(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr);
CUresult sw_pointer_attr(void *data, CUpointer_attribute attribute, CUdeviceptr ptr);
CUresult sw_ipc_get_handle(CUipcMemHandle *h, CUdeviceptr dptr);
CUresult sw_pointer_attrs(unsigned int n, CUpointer_attribute *attributes, void **data,
                          CUdeviceptr ptr);

/* ---- alloc.c: tracked allocations ---- */
/* The stream-ordered allocator's pending frees, as alloc.c needs them:
 * reap (sw_ordered_reap), any (sw_ordered_any), pending
 * (sw_ordered_pending). ordered.c sits above alloc.c and hands them down
 * before it pends its first free. */
typedef struct {
    size_t (*reap)(bool wait);
    bool (*any)(void);
    bool (*pending)(CUdeviceptr va);
} sw_pending_frees_t;
void sw_alloc_pending_frees(const sw_pending_frees_t *f);
CUresult sw_mem_alloc(CUdeviceptr *dptr, size_t bytesize);
CUresult sw_mem_free(CUdeviceptr dptr);
/* fork.c's child handler: a child of a process that tracked memory forgets
 * it and passes every allocation through (the parent's CUDA state is not
 * the child's). One thread runs then; can't fail. */
void sw_alloc_fork_child(void);
/* Budgets a program sets before the first tracked allocation resolves the
 * options' ones (control.c), kept for it: SPILLWAY_BUDGET_KEEP, none set
 * or kept. */
void sw_budgets_pend(uint64_t gpu, uint64_t host);
void sw_budgets_pending(uint64_t *gpu, uint64_t *host);

/* ---- control.c ----
 * The control API's requests (api.c; codes and meanings: include/spillway.h).
 * sw_budgets_get: the effective budgets (SPILLWAY_BUDGET_NONE/UNKNOWN as
 * there), and whether they are resolved yet; can't fail.
 * sw_budgets_change: spillway_set_budgets; a shrunk GPU budget demotes
 * under the exclusive gate, never during a capture (EBUSY, nothing
 * changed). sw_hint_range: spillway_hint; a wrong range or hint changes
 * nothing. sw_phase: drops the learned schedule; can't fail. */
void sw_budgets_get(uint64_t *gpu, uint64_t *host, bool *resolved);
int sw_budgets_change(uint64_t gpu, uint64_t host);
int sw_hint_range(uint64_t ptr, uint64_t bytes, int hint);
void sw_phase(void);

/* The tracked path of every allocation route: tracks bytesize bytes at
 * *dptr, or declines with CUDA_ERROR_NOT_SUPPORTED and *route saying why
 * (nothing done: the caller passes the allocation to the driver). Out of
 * memory only when neither device nor host memory could take it, with
 * nothing leaked. Stream-ordered frees that have completed are released
 * first, and waited for when the memory is short (ordered.c). */
CUresult sw_try_track(CUdeviceptr *dptr, size_t bytesize, sw_route_t *route);
/* Allocates through `again` untracked, counted under route; when the
 * driver answers out of memory, tracked chunks make room (completed
 * stream-ordered frees first, then demotions) and it is asked again. */
typedef CUresult (*sw_alloc_again_t)(CUdeviceptr *dptr, size_t bytesize, void *ctx);
CUresult sw_passthrough(sw_route_t route, CUdeviceptr *dptr, size_t bytesize,
                        sw_alloc_again_t again, void *ctx);
/* Frees the tracked allocations based at v[0..n) with one synchronization
 * (the safety rule's). Those no longer tracked are skipped. On a failed
 * synchronization nothing is freed (the bytes stay mapped, nothing lost). */
CUresult sw_mem_free_tracked(const CUdeviceptr *v, size_t n);


/* ---- appvmm.c: the application's own VMM handles ----
 * The hooks of cuMemCreate, cuMemMap, cuMemUnmap, cuMemRelease,
 * cuMemRetainAllocationHandle, cuMemGetAllocationPropertiesFromHandle and
 * cuMemExportToShareableHandle. Each answers as the driver would; a
 * handle spillway stands in for is moved like any tracked chunk while it
 * is mapped once, whole. */
CUresult sw_app_create(CUmemGenericAllocationHandle *out, size_t size,
                       const CUmemAllocationProp *prop, unsigned long long flags);
CUresult sw_app_map(CUdeviceptr va, size_t size, size_t offset, CUmemGenericAllocationHandle key,
                    unsigned long long flags);
CUresult sw_app_unmap(CUdeviceptr va, size_t size);
CUresult sw_app_release(CUmemGenericAllocationHandle key);
CUresult sw_app_retain(CUmemGenericAllocationHandle *out, void *addr);
CUresult sw_app_props(CUmemAllocationProp *prop, CUmemGenericAllocationHandle key);
CUresult sw_app_export(void *shareable, CUmemGenericAllocationHandle key,
                       CUmemAllocationHandleType type, unsigned long long flags);
CUresult sw_app_bind_mem(CUmemGenericAllocationHandle mc, size_t mc_off,
                         CUmemGenericAllocationHandle key, size_t off, size_t size,
                         unsigned long long flags);
CUresult sw_app_bind_addr(CUmemGenericAllocationHandle mc, size_t mc_off, CUdeviceptr ptr,
                          size_t size, unsigned long long flags);
CUresult sw_app_dmabuf(void *handle, CUdeviceptr ptr, size_t size, CUmemRangeHandleType type,
                       unsigned long long flags);
/* What appvmm.c needs of alloc.c; gate held exclusively for all.
 * sw_alloc_ready: the VMM and budget state, resolved on first use, and
 * the current device (*dev); NULL when spillway is off or cannot track
 * there. sw_room_for: room under dev's budget for size bytes, demoting
 * dev's chunks to make it; false when even that cannot. sw_demote_some:
 * demotes about need bytes of dev's; the bytes freed.
 * sw_alloc_register: puts a built allocation in the table (-1: out of
 * memory or overlap, nothing changed); sw_alloc_unregister: takes it out,
 * its window copies and host copies dropped, its handles kept. */
const sw_vmm_info_t *sw_alloc_ready(int *dev);
bool sw_room_for(int dev, uint64_t size, bool *synced);
uint64_t sw_demote_some(int dev, uint64_t need, bool *synced);
int sw_alloc_register(sw_alloc_t *a);
void sw_alloc_unregister(sw_alloc_t *a);

/* ---- the window: one interface, two strategies (winroom.c picks) ----
 * Beside the resident set, out of the GPU budget, a window brings host
 * memory to kernels at device speed. SPILLWAY_REWRITE picks how, once:
 *   streaming (window*.c, the default): a window per device; whole
 *     allocations are copied into it on spillway's stream, and the
 *     arguments of each launch that reads them are rewritten, at the
 *     launch's scan (serve.c), to the copies;
 *   remapping (remap.c): slots on the first device, filled at commit
 *     points, where a launch touches host chunks, and each chunk's own
 *     address remapped to its slot: no argument is rewritten, for a
 *     program rewriting cannot make safe (README, Known limits).
 * make: dev's window, once its budget binds: the streaming window of
 *   `size` bytes for ranges up to `slot` (winroom.c fits both), the
 *   remapping one of SPILLWAY_PREFETCH_BYTES of `budget` in whole slots,
 *   on the first device alone. The bytes it took (0: none made).
 * commits: whether host chunks a launch touches are the window's to bring
 *   in, at a commit point (commit), rather than residency's (promote.c).
 * commit: that point, for launch `now`, touching the host chunks at
 *   need[0..n); gate held exclusively.
 * forget: a is being freed, after the free's synchronization, before its
 *   chunks are released: its copies, slots and mirror go, nothing home.
 * The streaming strategy's steps on the launch path (sw_window_use and
 * the rest, below) do nothing where no streaming window was made. */
typedef struct {
    uint64_t (*make)(int dev, uint64_t size, uint64_t slot, uint64_t budget);
    bool (*commits)(void);
    void (*commit)(const uint64_t *need, int n, uint64_t now);
    void (*forget)(sw_alloc_t *a);
} sw_window_kind_t;
const sw_window_kind_t *sw_window_kind(void);
/* The remapping strategy's steps, reached through sw_window_kind alone
 * (remap.c): a pool of device slots, filled from chunks' host copies. */
bool sw_remap_on(void);
uint64_t sw_remap_setup(uint64_t budget);
void sw_remap_commit(const uint64_t *need, int n, uint64_t now);
void sw_remap_forget(sw_alloc_t *a);


/* ---- window*.c: the streaming windows (SPILLWAY_REWRITE=1, the default) ----
 * One per device: its memory, made once; host ranges of its chunks are
 * copied into it on spillway's stream and launches in its context are
 * rewritten to read the copies. Every function takes the windows' own
 * locks; callers hold the gate (shared is enough). */
#define SW_WINDOW_MAX_USES 16 /* copies one launch may read */
/* Some device has a window. */
bool sw_window_on(void);
uint64_t sw_window_size(int dev); /* 0: dev has none */
/* The device whose window serves launches in the current context; -1
 * when none does (another context, or no window there). */
int sw_window_here(void);
/* A window's size is a multiple of this, rounded down by
 * sw_window_setup: copies of such multiples keep offsets aligned. */
#define SW_WINDOW_ALIGN (64u << 10)
/* Makes dev's window of `size` bytes (winroom.c chooses it out of dev's GPU
 * budget), in the current context (dev's), for the allocations of t,
 * streaming none bigger than `slot` bytes: the bytes it took (0: none
 * made). */
uint64_t sw_window_setup(int dev, uint64_t size, uint64_t slot, const sw_table_t *t);
/* Frees dev's window: its bytes (0: none, or a graph holds copies in it,
 * or a capture is on). Gate held exclusively, and the device synchronized
 * since the last work was issued (the safety rule's synchronization). */
uint64_t sw_window_release(int dev);
/* Makes dev's window `size` bytes, streaming none bigger than `slot`,
 * keeping what it learned of its ranges (their order, costs and home
 * fingerprints): its copies go (home is current), its memory is freed
 * and made anew. Conditions and holds as for sw_window_release. Its
 * bytes now; 0 where it cannot be: unchanged, or, where its new memory
 * could not be had, released (sw_window_size says which).
 * `short_launches`: made one copy because the launches it serves are
 * short beside a copy, so that its copies in two parts, each waiting
 * for the launch before it, count as made ahead (window_copy.c). `lead`:
 * made one copy and a lead of that many bytes (sw_worth_t.lead), the
 * part of each copy that outlasts the launch its rest waits for; 0: none. */
uint64_t sw_window_resize(int dev, uint64_t size, uint64_t slot, bool short_launches,
                          uint64_t lead);
/* Whether dev's window is worth its room, in the loop of `period` (0:
 * none agreed on) or, with none, the one the memory's gaps suggest
 * (`guess`): sw_worth_judge (core/worth.c) over what it copied and
 * served; SW_WINDOW_IDLE too after a graph launch while no graph held a
 * copy and nothing else was served since. */
sw_window_worth_t sw_window_worth(int dev, uint64_t now, uint64_t period, uint64_t guess);
/* Chunks of dev moved between the resident set and the host at launch
 * now, while its window counted a loop of `period`: the ranges sent home
 * are copied late at their first visits, before the window learns their
 * order, so where the window repaid its room so far (sw_worth_on_pace)
 * its count starts again as in a new period (sw_worth_moved). One that
 * did not, or cannot tell yet, is judged as it would have been. */
void sw_window_residency_moved(int dev, uint64_t now, uint64_t period);
/* What dev's window's last loop judged found (core/worth.c), where
 * sw_window_worth says SW_WINDOW_OVERSIZED: .fits, the longest range
 * that loop copied, rounded up to SW_WINDOW_ALIGN (a slot), .copies of
 * which (and .lead) take less room (.room) than the window (it was
 * fitted, when the budget bound, to the largest allocation then known,
 * which need not be one it streams: under cuBLAS on the H200, a 64 MiB
 * allocation beside 32 MiB layers). .per_loop: what it copied, as its
 * repaying counts it, scaled to one loop; .bar: the bytes it had to
 * reach. All 0 but .copies (2) with no window. */
sw_worth_t sw_window_last_loop(int dev);
/* Whether dev's window is to be made anew, at *room bytes (0: given
 * back), before a capture it would serve: one range's room where its
 * ranges read slower in place than copied, else none (sw_worth_capture;
 * a capture's copies go one at a time, each after what was captured
 * before it). false where it has that room already, or a graph holds its
 * copies (their addresses are in the graph), or a capture uses it. */
bool sw_window_capture_room(int dev, uint64_t *room);
/* ---- winroom.c: the streaming window's room in each device's budget ----
 * sw_winroom_fitted: the window's size is spillway's to fit (no
 * SPILLWAY_PREFETCH_BYTES given). sw_winroom_bytes: the window's bytes
 * out of dev's budget, *slot the longest range it streams.
 * sw_winroom_make: makes dev's window, once, if it has a budget.
 * sw_winroom_release_picked: gives a window back that a picked budget
 * made (again: the next binding makes it anew); its bytes.
 * sw_winroom_keep: keep() for demotions and fills on device *dev: a
 * chunk in a remapping slot, or another device's. Gate held exclusively
 * for all but sw_winroom_keep. */
bool sw_winroom_fitted(void);
uint64_t sw_winroom_bytes(int dev, uint64_t budget, uint64_t *slot);
void sw_winroom_make(int dev);
uint64_t sw_winroom_release_picked(int dev, bool again, bool *synced);
bool sw_winroom_keep(const sw_chunk_t *c, void *dev);
/* Gives the window of the current context's device back, for good, when
 * spillway sized it and it is not worth its room (sw_window_worth), or
 * makes it anew at two of its longest copies where that is smaller: the
 * room it leaves is the resident set's then. Asked at a graph launch (replay),
 * else every 16 launches. Not in a capture; the gate held shared or not. */
void sw_window_reclaim(bool replay);
/* Before a capture on s begins: the window of the current context's
 * device, if spillway sized it and no graph holds its copies yet, is made
 * anew at one range or given back (sw_window_capture_room), the rest of
 * its room the resident set's; then every window sends its copies home
 * (sw_window_capture_begins). */
void sw_capture_prepare(CUstream s);
/* Whether [start, +len) may be streamed by dev's window: every chunk dev's
 * and on the host. */
bool sw_window_streamable(int dev, uint64_t start, uint64_t len);
/* Launch `now` on s, in dev's context, names the host range [start, +len),
 * streamable, its tensors spanning `parts` of it (sw_parts), in a loop of
 * `period` launches (0: unknown): true and
 * *copy (the copy's address, for start) when it may read the window copy
 * instead; *written then says whether its readers were found changing
 * the range's copies (each use then costs a copy home too). s then waits
 * for the copy on the GPU; the caller launches and calls
 * sw_window_read(s) before releasing the gate. false: read in place
 * (any copy of an overlapping range dropped first, s ordered after it):
 * also for a range that does not recur with the loop (by the window's
 * record of its uses, or, for an allocation of one tensor, by its chunks'
 * learned loop), since a copy it does not repay is a copy wasted. */
bool sw_window_use(int dev, uint64_t start, uint64_t len, uint64_t parts, uint64_t now,
                   uint64_t period, CUstream s, uint64_t *copy, bool *written);
/* The launch will not read the copy of the range at start after all
 * (its arguments could not be pointed at it): the copy goes home, with s
 * after it, and is not counted as read. */
void sw_window_unuse(uint64_t start, CUstream s);
/* The spans the launch sw_window_use is serving could write, besides the
 * ranges it names (SW_UNWINDOW_SPANS at most): after it, a window address
 * found stored in them is put back to its home (sw_window_read). */
void sw_window_spans(const uint64_t *lo, const uint64_t *len, int n);
/* Whether dev's window can put stored window addresses back: without
 * that, a launch that could store one is not served. */
bool sw_window_guarded(int dev);
/* After the launch (`issued`: the driver took it): puts back window
 * addresses it stored in its spans, records that s reads the copies
 * sw_window_use gave this thread, and stops the timer of a range it read
 * in place. Cheap when there are none. */
void sw_window_read(CUstream s, bool issued);
/* Whether any window has had a range (a hint, read without the lock). */
bool sw_window_busy(void);
/* Whether addr lies in a streaming window's memory. */
bool sw_window_holds(uint64_t addr);
/* Work on s is about to read or write home in [lo, +len) in place (a copy,
 * a memset, a launch not rewritten, a move): overlapping copies go home
 * first, with s after them, and home's fingerprint is forgotten. */
void sw_window_touch(uint64_t lo, uint64_t len, CUstream s);
/* sw_window_touch for the words n stream memory operations reach. */
void sw_window_touch_memops(unsigned n, const CUstreamBatchMemOpParams *ops, CUstream s);
/* The same for every copy (a graph launch, a capture, a 2D or 3D copy:
 * work whose ranges spillway does not know). */
void sw_window_flush(CUstream s);
/* [lo, +len) is being freed, after a synchronization: its copies and
 * ranges are dropped, nothing goes home. */
void sw_window_forget(uint64_t lo, uint64_t len);
/* Captures (window_capture.c): before a capture begins on s, every
 * copy goes home; once it has begun (r: the begin's result), the window
 * serves launches on s by copies issued into the capture; before it ends,
 * those copies go home inside it and spillway's capture stream rejoins s;
 * sw_window_capture_ends says true when a step the graph needs could not
 * be issued into it (the capture was made to fail, see break_capture).
 * sw_window_replay launches graph g on s after the window's earlier work
 * and the previous replay. */
void sw_window_capture_begins(CUstream s);
void sw_window_captured(CUstream s, CUresult r);
bool sw_window_capture_ends(CUstream s);
CUresult sw_window_replay(CUresult (*launch)(CUgraphExec, CUstream), CUgraphExec g, CUstream s);

/* The link the cost-model verdicts assume (docs/cuda-facts.md §4: H2D DMA and
 * zero-copy on PCIe Gen5; §3: unmap + map + set access, twice, on an
 * A100), until tests/gpu measures this machine's. */
#define SW_LINK_DEFAULT {.h2d_gbps = 50, .zerocopy_gbps = 35, .move_ns = 127000}

/* ---- launch.c, layouts.c, marks.c, promote.c: the launch path ---- */
/* The shared CUDA runtime may reach the driver through wrapped public
 * entry points or through private ones. Its wrappers (runtime.c)
 * therefore do the work themselves and mark this thread while they call
 * into the runtime, so that a driver wrapper reached from inside does not
 * do it a second time. */
typedef struct {
    bool inside;   /* a runtime wrapper is calling the real runtime */
    bool gated;    /* ... holding the gate shared */
    bool handled;  /* the work was done (scan, meminfo adjustment) */
} sw_rt_state_t;
sw_rt_state_t *sw_rt_state(void);
enum { SW_HANDLE_FUNC = 1, SW_HANDLE_KERNEL = 2 };
/* A function or kernel handle *h of `kind` from module or library owner. */
CUresult sw_note_handle(CUresult r, void **h, int kind, void *owner);
/* The CUfunction of a CUkernel: it belongs to the kernel's library. */
CUresult sw_note_kernel_function(CUresult r, CUfunction *f, CUkernel k);
/* Unloads module or library `owner` with `unload`, under the gate held
 * exclusively, and forgets the parameter layouts of its handles. */
CUresult sw_unload(CUresult (*unload)(void *), void *owner);
typedef CUresult (*sw_launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                 unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*sw_launch_ex_fn)(const CUlaunchConfig *, CUfunction, void **, void **);
CUresult sw_launch(sw_launch_fn real, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                   unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream s,
                   void **params, void **extra);
typedef CUresult (*sw_coop_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, unsigned, CUstream, void **);
CUresult sw_launch_cooperative(sw_coop_fn real, CUfunction f, unsigned gx, unsigned gy,
                               unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                               CUstream s, void **params);
CUresult sw_launch_ex(sw_launch_ex_fn real, const CUlaunchConfig *config, CUfunction f,
                      void **params, void **extra);
typedef CUresult (*sw_multi_fn)(CUDA_LAUNCH_PARAMS *, unsigned, unsigned);
CUresult sw_launch_multi_device(sw_multi_fn real, CUDA_LAUNCH_PARAMS *list, unsigned n,
                                unsigned flags);
/* Scans a launch's arguments and stamps the chunks hit; gate held shared.
 * Ranges the streaming window serves are rewritten: *params or *extra then
 * point at a per-thread copy of the arguments, good until this thread's
 * next launch, and the caller calls sw_window_read(s) after launching. */
void sw_mark(CUfunction f, void ***params, void ***extra, CUstream s);
/* Moves the chunks found hot enough to displace colder ones where they
 * could not move at once (in a capture, or while a launch was being served
 * a copy of them): called before a launch or a graph launch, and does
 * nothing while a capture runs; gate not held, or held shared. */
void sw_promote_deferred(void);
/* Shows the learner the launches a replay of executable graph g repeats,
 * as recorded at its capture (replay.c), and moves what they make worth
 * moving, as their launches would have: called before each graph launch,
 * outside any capture; gate not held. */
void sw_graph_learn(CUgraphExec g);
/* A copy of n bytes from host memory src to the device: a small one may
 * be a table of pointers, so every tracked chunk one of its words points
 * into is marked `pointed` (learned policy only). Takes the gate shared. */
void sw_note_pointers(const void *src, size_t n);
/* The parameter layout of a function or kernel handle; NULL: unknown. */
const sw_layout_t *sw_layout(CUfunction f);
/* Ends a capture with `end` (cuStreamEndCapture or its _ptsz form, as
 * per_thread says), and uncounts it when the stream is no longer
 * capturing afterwards, whatever the result. */
CUresult sw_capture_end(CUresult (*end)(CUstream, CUgraph *), CUstream s, CUgraph *g,
                        bool per_thread);
/* ---- tensormap.c: TMA descriptors spillway saw made ----
 * The table (core/tmap.c) of every descriptor a cuTensorMapEncode* or
 * cuTensorMapReplaceAddress call returned, with its global address; NULL
 * until the first one. Launches look descriptors up in it with
 * sw_tmap_locate (launch.c; so may a rewriter, to find where in the
 * arguments each recognised descriptor lies). */
sw_tmap_t *sw_tmaps(void);
/* The encode hooks: r is the real encode's result. On success records
 * desc -> (addr, the tensor's extent from rank, dim and strides in bytes,
 * 0 when unknown); returns r. Can't fail: a table that cannot be made
 * only logs, and the descriptor is then not recognised. */
CUresult sw_tmap_encoded(CUresult r, const CUtensorMap *desc, CUtensorMapDataType type,
                         cuuint32_t rank, const void *addr, const cuuint64_t *dim,
                         const cuuint64_t *strides);
/* The cuTensorMapReplaceAddress hook: calls real (NULL: returns
 * CUDA_ERROR_NOT_FOUND) and, on success, records the new bytes -> addr,
 * with the size recorded for the old bytes. Returns real's result. */
CUresult sw_tmap_replace(CUresult (*real)(CUtensorMap *, void *), CUtensorMap *desc, void *addr);
/* For a rewriter: desc (128 bytes, any alignment) made to point at
 * new_addr, written to out (128 bytes, 64-byte aligned) by the real
 * cuTensorMapReplaceAddress on a private copy; the result is not
 * recorded. Returns CUDA_SUCCESS; or, with out untouched,
 * CUDA_ERROR_INVALID_VALUE for a NULL or misaligned argument,
 * CUDA_ERROR_NOT_FOUND where the driver lacks cuTensorMapReplaceAddress,
 * or the driver's error (new_addr misaligned for the tensor, desc not a
 * descriptor). */
CUresult sw_tmap_retarget(const void *desc, uint64_t new_addr, void *out);

#endif
