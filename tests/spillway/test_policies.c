/*
 * test_policies.c: the residency policies (SPILLWAY_POLICY=learned, the
 * default, and lru) and prefetching (SPILLWAY_PREFETCH_BYTES) change which
 * chunks move and when, never what the program computes. Each run must
 * match its host reference bit for bit with no hazard or fault, under
 * device pressure or a budget, with and without jitter.
 *
 * Workloads: mlp (every layer every step, a fixed loop) and moe (a
 * mixture of experts: 24 experts of 4 MiB, 2 per step, drawn from a
 * seeded Zipf distribution), whose changing working set is what makes a
 * budgeted policy promote as well as demote.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swt.h"

#define MLP_MODEL "--layers", "10", "--width", "1024", "--steps", "3"
#define MOE_MODEL "--experts", "24", "--width", "1024", "--steps", "16"

/* The model with a policy and pressure; returns the run for more checks. */
static void run_policy(swt_run_t *r, const char *prog, const char *policy, bool budget,
                       const char *jitter, const char *prefetch)
{
    const char *mlp[] = {swt_path("SWT_MLP"), MLP_MODEL, NULL};
    const char *moe[] = {swt_path("SWT_MOE"), MOE_MODEL, NULL};
    bool is_moe = strcmp(prog, "moe") == 0;
    const char *env[] = {
        policy,
        jitter,
        prefetch ? prefetch : "SPILLWAY_PREFETCH_BYTES",
        /* mlp: 40 MiB of weights; moe: 96 MiB of experts. */
        budget ? "SIMGPU_MEM=1GiB" : is_moe ? "SIMGPU_MEM=40MiB" : "SIMGPU_MEM=16MiB",
        budget ? (is_moe ? "SPILLWAY_GPU_BUDGET=24MiB" : "SPILLWAY_GPU_BUDGET=12MiB")
               : "SPILLWAY_GPU_BUDGET",
        NULL,
    };
    swt_run(r, true, env, is_moe ? moe : mlp);
    swt_assert_match(r);
    ck_assert_msg(swt_sw(r, "demotions") > 0, "no demotion: %s", swt_describe(r));
    if (budget)
        ck_assert_msg(swt_sw(r, "device_bytes_peak") <= (is_moe ? 24 : 12) * SWT_MIB,
                      "over budget: %s", swt_describe(r));
}

#define POLICY_TEST(name, prog, policy, budget, jitter, prefetch) \
    START_TEST(name)                                              \
    {                                                             \
        swt_run_t r;                                              \
        run_policy(&r, prog, policy, budget, jitter, prefetch);   \
    }                                                             \
    END_TEST

POLICY_TEST(lru_runs_model_larger_than_device, "mlp", "SPILLWAY_POLICY=lru", false,
            "SIMGPU_JITTER=0", NULL)
POLICY_TEST(lru_keeps_model_within_budget_under_jitter, "mlp", "SPILLWAY_POLICY=lru", true,
            "SIMGPU_JITTER=200", NULL)
POLICY_TEST(learned_runs_experts_larger_than_device, "moe", "SPILLWAY_POLICY=learned", false,
            "SIMGPU_JITTER=0", NULL)
POLICY_TEST(learned_keeps_experts_within_budget_under_jitter, "moe", "SPILLWAY_POLICY=learned",
            true, "SIMGPU_JITTER=200", NULL)
POLICY_TEST(lru_runs_experts_larger_than_device_under_jitter, "moe", "SPILLWAY_POLICY=lru",
            false, "SIMGPU_JITTER=200", NULL)
POLICY_TEST(learned_without_prefetch_keeps_experts_within_budget, "moe",
            "SPILLWAY_POLICY=learned", true, "SIMGPU_JITTER=0", "SPILLWAY_PREFETCH_BYTES=0")

/* Under a budget with a changing working set, lru brings experts back. */
START_TEST(lru_promotes_experts_back_under_a_budget)
{
    swt_run_t r;
    run_policy(&r, "moe", "SPILLWAY_POLICY=lru", true, "SIMGPU_JITTER=200", NULL);
    ck_assert_msg(swt_sw(&r, "promotions") > 0, "nothing promoted: %s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "failed_moves") == 0, "%s", swt_describe(&r));
}
END_TEST

/* The learned policy keeps a promoted chunk's host copy: demoting it
 * unchanged is a remap, so fewer bytes are written back than demoted; LRU,
 * the baseline, copies every demotion. Experts are never written, so
 * every byte written back is a chunk with no copy yet. */
static void run_rewrite(swt_run_t *r, const char *policy)
{
    const char *argv[] = {swt_path("SWT_MOE"), "--experts", "16", "--width", "512", "--steps", "30",
                          NULL};
    const char *env[] = {policy, "SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=12MiB",
                         "SPILLWAY_MIN_ALLOC=1MiB", "SPILLWAY_PREFETCH_BYTES=0", NULL};
    swt_run(r, true, env, argv);
    swt_assert_match(r);
    ck_assert_msg(swt_sw(r, "promotions") > 0, "nothing promoted: %s", swt_describe(r));
    ck_assert_msg(swt_sw(r, "failed_moves") == 0, "%s", swt_describe(r));
}

START_TEST(learned_demotes_unchanged_chunks_by_a_remap)
{
    swt_run_t r;
    run_rewrite(&r, "SPILLWAY_POLICY=learned");
    uint64_t demoted = swt_sw(&r, "bytes_demoted"), written = swt_sw(&r, "bytes_written_back");
    ck_assert_msg(written < demoted, "every demotion copied (%llu of %llu bytes): %s",
                  (unsigned long long)written, (unsigned long long)demoted, swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "host_copy_bytes_peak") > 0, "%s", swt_describe(&r));
    /* The copies go with their chunks: none is left at exit. */
    ck_assert_msg(swt_sw(&r, "host_copy_bytes") == 0, "%s", swt_describe(&r));
}
END_TEST

/* The process's very first fingerprint counts too: the kernel was loaded
 * only after its output buffer had been read, so the first promotion's
 * fingerprint failed and its host copy was dropped. Three steps of a
 * small experts model make exactly one promotion. */
START_TEST(learned_keeps_the_first_promotions_host_copy)
{
    const char *argv[] = {swt_path("SWT_MOE"), "--experts", "16", "--width", "512", "--steps",
                          "3", NULL};
    const char *env[] = {"SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=12MiB",
                         "SPILLWAY_MIN_ALLOC=1MiB", "SPILLWAY_PREFETCH_BYTES=0", NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_match(&r);
    ck_assert_msg(swt_sw(&r, "promotions") == 1, "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "host_copy_bytes_peak") > 0, "the host copy was dropped: %s",
                  swt_describe(&r));
}
END_TEST

START_TEST(lru_copies_every_demotion)
{
    swt_run_t r;
    run_rewrite(&r, "SPILLWAY_POLICY=lru");
    ck_assert_uint_eq(swt_sw(&r, "bytes_written_back"), swt_sw(&r, "bytes_demoted"));
    ck_assert_uint_eq(swt_sw(&r, "host_copy_bytes_peak"), 0);
}
END_TEST

/* The mlp's layers 2 and 5 are read through a pointer table in device
 * memory (sg_gemv_table_f32), which no argument shows; the table reaches
 * the device by cuMemcpyHtoD. Six layers of 16 MiB under a 64 MiB budget,
 * 32 MiB of it the window: two resident places. The window streams by
 * copies (bytes_streamed) or, with SPILLWAY_REWRITE=0, by remaps
 * (bytes_promoted). Once learned, the table
 * layers hold them and the other four stream through the window, so later
 * steps read nothing in place. Without the table's pointers (the control
 * this was checked against), one table layer stays on the host and each
 * step reads its 16 MiB in place. */
static uint64_t read_in_place_after(int steps)
{
    char n[16];
    snprintf(n, sizeof n, "%d", steps);
    const char *argv[] = {swt_path("SWT_MLP"), "--layers", "6", "--width", "2048", "--steps", n,
                          NULL};
    const char *env[] = {"SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=64MiB", "SPILLWAY_CHUNK=16MiB",
                         "SPILLWAY_PREFETCH_BYTES=32MiB", NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_match(&r);
    ck_assert_msg(swt_sw(&r, "bytes_promoted") + swt_sw(&r, "bytes_streamed") > 0,
                  "nothing streamed: %s", swt_describe(&r));
    return swt_sg(&r, "kernel_bytes_host");
}

START_TEST(learned_keeps_layers_behind_device_pointers_resident)
{
    uint64_t four = read_in_place_after(4), eight = read_in_place_after(8);
    ck_assert_msg(eight == four, "steps 5-8 read %llu bytes in place",
                  (unsigned long long)(eight - four));
}
END_TEST

/* Once the budget is full, LRU moves two chunks for each layer it
 * touches: a victim down and the layer up. Each move used to create its
 * new handle (cuMemCreate: 193 µs on an A100) and release the old one;
 * now a move takes the handle the previous move released. 10 layers of
 * 4 MiB, 3 on the GPU, 6 steps: about 90 moves. Only the allocations'
 * own chunks, the probe and the first demotion's host handle are
 * created: 12 (60 before pooling, 3 steps). What the pool holds still
 * fits the budgets, and all of it is released by the end. */
START_TEST(lru_moves_reuse_released_handles)
{
    const char *argv[] = {swt_path("SWT_MLP"), "--layers", "10", "--width", "1024", "--steps", "6",
                          NULL};
    const char *env[] = {"SPILLWAY_POLICY=lru", "SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=12MiB",
                         "SPILLWAY_HOST_BUDGET=32MiB", NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_match(&r);
    uint64_t moves = swt_sw(&r, "demotions") + swt_sw(&r, "promotions");
    uint64_t created = swt_calls(&r, "cuMemCreate");
    ck_assert_msg(moves >= 80, "%llu moves: %s", (unsigned long long)moves, swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "failed_moves") == 0, "%s", swt_describe(&r));
    ck_assert_msg(created * 4 <= moves, "%llu handles created for %llu moves: %s",
                  (unsigned long long)created, (unsigned long long)moves, swt_describe(&r));
    /* Real memory, as simgpu counts it: the device within the budget
     * (plus the mlp's untracked vectors, a few KiB; a pooled 4 MiB
     * handle held past its hold would show), the host within its own. */
    ck_assert_msg(swt_sg(&r, "device_bytes_peak") <= 12 * SWT_MIB + SWT_MIB, "%s",
                  swt_describe(&r));
    ck_assert_msg(swt_sg(&r, "host_vmm_bytes_peak") <= 32 * SWT_MIB, "%s", swt_describe(&r));
    /* Nothing pooled or leaked at exit: every handle made was released. */
    ck_assert_uint_eq(swt_calls(&r, "cuMemRelease"), created);
    ck_assert_uint_eq(swt_sg(&r, "device_bytes"), 0);
}
END_TEST

/* swt-stream (stream.c): kernels write the weights the window streams,
 * through rewritten arguments, on two streams, while host copies
 * overwrite some and device-to-host copies read others; every value must
 * come back as the host model says, with no race. Ten 4 MiB weights and
 * their 4 MiB update under a 40 MiB budget whose 10 MiB window holds two
 * at once, so an update reads one copy and writes another. */
static void run_stream(const char *jitter)
{
    const char *argv[] = {swt_path("SWT_STREAM"), NULL};
    const char *env[] = {"SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=40MiB", jitter, NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_status(&r, 0);
    ck_assert_msg(swt_file_has(r.out, "stream: ok"), "%s", swt_describe(&r));
    swt_assert_clean(&r);
    /* Streamed: by copies, or by remaps with SPILLWAY_REWRITE=0. */
    ck_assert_msg(swt_sw(&r, "bytes_streamed") + swt_sw(&r, "bytes_promoted") > 0,
                  "nothing streamed: %s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "bytes_written_back") > 0, "nothing went home: %s",
                  swt_describe(&r));
}

START_TEST(streamed_weights_written_by_kernels_and_copies_stay_right)
{
    run_stream("SIMGPU_JITTER=0");
}
END_TEST

START_TEST(streamed_weights_stay_right_under_jitter)
{
    run_stream("SIMGPU_JITTER=100");
}
END_TEST

/* A GEMM library writes its workspace at every call (cuBLAS's split-K
 * GEMVs do): memory every launch uses. Made before the weights, it is the
 * first chunk demoted when they fill the budget; the window then served
 * it at every launch and sent it home after each (the H200's one-buffer
 * decode, 2026-11-27: 77 ms a step where reading the weights in place
 * took 26). It must be promoted instead. Ten 16 MiB layers under a 64 MiB
 * budget, in one buffer cut to 32 MiB chunks (in the 2 MiB ones `auto`
 * cuts it to, colder chunks of weights go home first and the workspace
 * never leaves); mlp --workspace: 4 MiB, 4 KiB of it written after each
 * layer. The counters of steps 5 to 8 are those of 8 steps less those of
 * 4. */
static void run_workspace(swt_run_t *r, const char *layout, bool workspace, const char *steps)
{
    const char *argv[] = {swt_path("SWT_MLP"), "--layers", "10", "--width", "2048", "--steps",
                          steps, layout, workspace ? "--workspace" : NULL, "4", NULL};
    const char *env[] = {"SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=64MiB", "SPILLWAY_CHUNK=32MiB",
                         NULL};
    swt_run(r, true, env, argv);
    swt_assert_match(r);
    ck_assert_msg(swt_sw(r, "tracked_bytes_peak") > 64 * SWT_MIB, "%s", swt_describe(r));
}

/* Eager: no launch of steps 5-8 is served a window copy (the one buffer
 * is bigger than the window, so only the workspace could be). */
START_TEST(learned_keeps_a_workspace_every_launch_writes_resident)
{
    swt_run_t four, eight;
    run_workspace(&four, "--one-buffer", true, "4");
    run_workspace(&eight, "--one-buffer", true, "8");
    ck_assert_msg(swt_sw(&four, "promotions") > 0, "%s", swt_describe(&four));
    uint64_t served = swt_sw(&eight, "rewritten_launches") - swt_sw(&four, "rewritten_launches");
    ck_assert_msg(served == 0, "%llu launches of steps 5-8 served from the window: %s",
                  (unsigned long long)served, swt_describe(&eight));
}
END_TEST

/* A graph captured before any eager step: the capture copies the
 * workspace at every use, and nothing may move inside it. Promoted at the
 * first replay, those copies read device memory: a replay copies no more
 * over the link than the same graph without a workspace. */
START_TEST(learned_promotes_a_workspace_a_graph_writes_at_its_replay)
{
    swt_run_t r[4];
    run_workspace(&r[0], "--graph", true, "4");
    run_workspace(&r[1], "--graph", true, "8");
    run_workspace(&r[2], "--graph", false, "4");
    run_workspace(&r[3], "--graph", false, "8");
    uint64_t with = swt_sg(&r[1], "dma_h2d_bytes") - swt_sg(&r[0], "dma_h2d_bytes");
    uint64_t without = swt_sg(&r[3], "dma_h2d_bytes") - swt_sg(&r[2], "dma_h2d_bytes");
    ck_assert_msg(with <= without + SWT_MIB,
                  "replays 5-8 copied %llu bytes to the device with a workspace, %llu without",
                  (unsigned long long)with, (unsigned long long)without);
}
END_TEST

/* mlp over layers packed into 20 MiB segments (PyTorch's caching
 * allocator's layout), a third of them read only through a pointer table,
 * under `budget` in chunks of `chunk`, with the streaming window, whose
 * rules these are: `steps` steps, with --graph, --streams 2 and --train
 * as `mode` says. */
enum { EAGER = 0, GRAPH = 1, STREAMS = 2, TRAIN = 4 };

static void run_segments(swt_run_t *r, const char *layers, const char *width, const char *steps,
                         int mode, const char *budget, const char *chunk)
{
    const char *argv[16] = {swt_path("SWT_MLP"), "--layers", layers, "--width", width,
                            "--segments", "20", "--steps", steps};
    int n = 9;
    if (mode & GRAPH)
        argv[n++] = "--graph";
    if (mode & STREAMS) {
        argv[n++] = "--streams";
        argv[n++] = "2";
    }
    if (mode & TRAIN)
        argv[n++] = "--train";
    char b[64], c[64];
    snprintf(b, sizeof b, "SPILLWAY_GPU_BUDGET=%s", budget);
    snprintf(c, sizeof c, "SPILLWAY_CHUNK=%s", chunk);
    const char *env[] = {"SIMGPU_MEM=1GiB", b, "SPILLWAY_LOG=info", "SPILLWAY_REWRITE=1", c, NULL};
    swt_run(r, true, env, argv);
    swt_assert_match(r);
}

/* What steps 5-8 of a segment scenario did: the differences between the
 * counters of a run of 8 steps and one of 4. */
typedef struct {
    swt_run_t four, eight;
} later_t;

static void run_later(later_t *t, const char *layers, const char *width, int mode,
                      const char *budget, const char *chunk)
{
    run_segments(&t->four, layers, width, "4", mode, budget, chunk);
    run_segments(&t->eight, layers, width, "8", mode, budget, chunk);
}

static uint64_t sw_later(const later_t *t, const char *key)
{
    return swt_sw(&t->eight, key) - swt_sw(&t->four, key);
}

static uint64_t sg_later(const later_t *t, const char *key)
{
    return swt_sg(&t->eight, key) - swt_sg(&t->four, key);
}

/* Five layers a segment: a segment is visited by the launches of five
 * layers in a row, then not for a loop. The period is the loop's (two
 * launches a layer), as with a layer per allocation; measured chunk by
 * chunk it was 3. */
START_TEST(segments_learn_the_loops_period)
{
    swt_run_t r;
    run_segments(&r, "40", "1024", "4", EAGER, "80MiB", "32MiB");
    ck_assert_msg(swt_sw(&r, "learned_period") == 80, "%s", swt_describe(&r));
}
END_TEST

/* 160 MiB in eight segments (of one chunk each, and of ten), each holding
 * a layer only the table reaches: a copy of a segment would move all of
 * it while that layer reads home anyway, so launches read the segments in
 * place, and the window, which serves nothing, is given back to the
 * resident set. Steps 5-8 copy nothing into the window and read no more
 * in place than the model less the budget (80 MiB a step; with the window
 * kept, 100). */
START_TEST(segments_a_table_also_reaches_are_read_in_place_and_the_window_given_back)
{
    const char *chunks[] = {"32MiB", "2MiB"};
    for (int i = 0; i < 2; i++) {
        later_t t;
        run_later(&t, "40", "1024", EAGER, "80MiB", chunks[i]);
        ck_assert_msg(swt_file_has(t.eight.err, "served nothing for a loop"), "%s",
                      swt_describe(&t.eight));
        uint64_t streamed = sw_later(&t, "bytes_streamed");
        uint64_t in_place = sg_later(&t, "kernel_bytes_host");
        ck_assert_msg(streamed == 0, "chunks of %s: steps 5-8 streamed %llu bytes", chunks[i],
                      (unsigned long long)streamed);
        ck_assert_msg(in_place <= 4 * 80 * SWT_MIB,
                      "chunks of %s: steps 5-8 read %llu bytes in place: %s", chunks[i],
                      (unsigned long long)in_place, swt_describe(&t.eight));
    }
}
END_TEST

/* One 16 MiB layer a segment: its launches span the whole of it, and the
 * window streams the segments named by arguments. */
START_TEST(segments_their_launches_span_whole_are_streamed)
{
    later_t t;
    run_later(&t, "10", "2048", EAGER, "80MiB", "32MiB");
    ck_assert_msg(sw_later(&t, "bytes_streamed") > 0, "steps 5-8 streamed nothing: %s",
                  swt_describe(&t.eight));
}
END_TEST

/* A graph over the same segments, captured before any eager step: a
 * capture's copy serves one launch, so a segment five launches read would
 * be copied five times a replay. Its launches read it in place, the idle
 * window goes back at the replays, and replays 5-8 copy nothing to the
 * device and read no more in place than the model less the budget. */
START_TEST(segments_under_a_graph_are_read_in_place_not_copied_per_launch)
{
    later_t t;
    run_later(&t, "40", "1024", GRAPH, "80MiB", "32MiB");
    uint64_t h2d = sg_later(&t, "dma_h2d_bytes"), in_place = sg_later(&t, "kernel_bytes_host");
    ck_assert_msg(h2d <= 4 * SWT_MIB, "replays 5-8 copied %llu bytes to the device: %s",
                  (unsigned long long)h2d, swt_describe(&t.eight));
    ck_assert_msg(in_place <= 4 * 80 * SWT_MIB, "replays 5-8 read %llu bytes in place: %s",
                  (unsigned long long)in_place, swt_describe(&t.eight));
}
END_TEST

/* The bytes a run moved host to device: copies and kernels' reads in place. */
static uint64_t link_bytes(const swt_run_t *r)
{
    return swt_sg(r, "dma_h2d_bytes") + swt_sg(r, "kernel_bytes_host");
}

/* A graph captured before any eager step, over 12 layers of 4 MiB, the
 * odd ones packed into 20 MiB segments (the second holding one layer and
 * 16 MiB of slack no kernel reads), on two streams under 19 MiB; nothing
 * timed, the capture reads in place (sw_worth_capture). The replays show
 * the learner the graph's 24 launches, so it learns their loop and trades
 * the slack the capture found resident for layers: replays 5-8 move at
 * most 32 MiB each over the link, in place and copied (30), against the
 * 29 the model less the budget needs (36 and no period learned when
 * replays teach nothing; 34 and 40 with the one-range window before
 * 2026-11-29's capture rule). */
static void run_replays(swt_run_t *r, const char *steps)
{
    const char *argv[] = {swt_path("SWT_MLP"), "--layers", "12", "--width", "1024",
                          "--segments", "20", "--odd-segments", "--streams", "2",
                          "--graph", "--steps", steps, NULL};
    const char *env[] = {"SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=19MiB", "SPILLWAY_REWRITE=1",
                         NULL};
    swt_run(r, true, env, argv);
    swt_assert_match(r);
}

START_TEST(replays_of_a_graph_teach_the_learner_its_loop)
{
    swt_run_t four, eight;
    run_replays(&four, "4");
    run_replays(&eight, "8");
    ck_assert_msg(swt_sw(&eight, "learned_period") == 24, "%s", swt_describe(&eight));
    uint64_t link = link_bytes(&eight) - link_bytes(&four);
    ck_assert_msg(link <= 4 * 32 * SWT_MIB, "replays 5-8 moved %llu bytes over the link: %s",
                  (unsigned long long)link, swt_describe(&eight));
}
END_TEST

/* 20 layers of 4 MiB at batch 256 under 32 MiB, a graph captured after
 * three eager steps (the GEMMs timed slower in place than copied, so its
 * window is kept): the capture copies the layers on the host into the
 * window at each launch, and the GEMMs read the resident ones at home.
 * Replays show the learner only what they read at home, so residency
 * stays with those: replays 5-8 move at most 56 MiB each over the link
 * (53: the copies; 77 when the copied layers were shown too, drew
 * residency from the layers read at home and had those re-read over the
 * link, one tile row of 128 at a time). */
START_TEST(replays_of_a_graph_keep_residency_where_it_reads_at_home)
{
    swt_run_t r[2];
    const char *steps[] = {"4", "8"};
    for (int i = 0; i < 2; i++) {
        const char *argv[] = {swt_path("SWT_MLP"), "--layers", "20", "--width", "1024",
                              "--batch", "256", "--graph", "--eager", "3", "--steps",
                              steps[i], NULL};
        const char *env[] = {"SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=32MiB", "SPILLWAY_REWRITE=1",
                             NULL};
        swt_run(&r[i], true, env, argv);
        swt_assert_match(&r[i]);
    }
    ck_assert_msg(swt_sw(&r[1], "learned_period") == 40, "%s", swt_describe(&r[1]));
    uint64_t link = link_bytes(&r[1]) - link_bytes(&r[0]);
    ck_assert_msg(link <= 4 * 56 * SWT_MIB, "replays 5-8 moved %llu bytes over the link: %s",
                  (unsigned long long)link, swt_describe(&r[1]));
}
END_TEST

/* Training over segments of five 4 MiB layers (100 layers, two streams,
 * a budget of 160 MiB): each update writes one layer of a segment, and a
 * copy goes home whole after each launch that changes it. Such a segment
 * is read in place: steps 5-8 stream nothing (600 MiB a step before). */
START_TEST(segments_a_training_step_writes_are_read_in_place)
{
    later_t t;
    run_later(&t, "100", "1024", STREAMS | TRAIN, "160MiB", "32MiB");
    uint64_t streamed = sw_later(&t, "bytes_streamed");
    ck_assert_msg(streamed == 0, "steps 5-8 streamed %llu bytes: %s",
                  (unsigned long long)streamed, swt_describe(&t.eight));
}
END_TEST

/* Twenty 1 MiB layers a segment, on two streams, read in place: a
 * segment grows hot while its twenty layers run, hotter than the resident
 * one visited longest ago, which is the one the loop needs next. Once the
 * loop is learned nothing trades places: each trade cost a segment's copy
 * (67 MiB a step before). */
START_TEST(segments_in_a_cyclic_scan_trade_no_places_once_learned)
{
    later_t t;
    run_later(&t, "400", "512", STREAMS, "80MiB", "32MiB");
    uint64_t moved = sw_later(&t, "bytes_promoted");
    ck_assert_msg(moved == 0, "steps 5-8 promoted %llu bytes: %s", (unsigned long long)moved,
                  swt_describe(&t.eight));
}
END_TEST

/* With SPILLWAY_PREFETCH_BYTES unset, a given budget's window is made
 * when the budget first binds, fitted to two copies of the largest
 * allocation then known that fits in 25%: 12 layers of 8 MiB under an
 * 80 MiB budget get 16 MiB, not 20 (4 MiB no copy can use). The
 * streaming window's rule: the remapping one is sized as before. */
/* mlp, `layers` layers of `width` (a layer per allocation, or with
 * `layout`, e.g. --one-buffer), `steps` steps under `budget`, with the
 * streaming window; `more` one more variable or NULL. */
static void run_mlp(swt_run_t *r, const char *layers, const char *width, const char *layout,
                    const char *steps, const char *budget, const char *more)
{
    const char *argv[] = {swt_path("SWT_MLP"), "--layers", layers, "--width", width,
                          "--steps", steps, layout, NULL};
    char b[64];
    snprintf(b, sizeof b, "SPILLWAY_GPU_BUDGET=%s", budget);
    const char *env[] = {"SIMGPU_MEM=1GiB", b, "SPILLWAY_REWRITE=1", more, NULL};
    swt_run(r, true, env, argv);
    swt_assert_match(r);
}

/* A layer per allocation, a third of them read only through a pointer
 * table, under a budget of two fifths: by step 4 the table-only layers
 * have taken resident places from layers the window streams, which have
 * just moved to the host. From then on each streamed layer is copied
 * ahead of its launch (the chain knew no successor for a range new to
 * the host: its learned schedule gives one) and none is read in place
 * (the window's own record of a new range was empty: its chunks' learned
 * loop says it recurs). Steps 5-8: no late copy, no launch reading host
 * memory. */

START_TEST(layers_new_to_the_host_stream_ahead_from_their_first_use)
{
    swt_run_t four, eight;
    run_mlp(&four, "20", "1024", NULL, "4", "32MiB", NULL);
    run_mlp(&eight, "20", "1024", NULL, "8", "32MiB", NULL);
    uint64_t streamed = swt_sw(&eight, "bytes_streamed") - swt_sw(&four, "bytes_streamed");
    uint64_t late = swt_sw(&eight, "prefetch_late") - swt_sw(&four, "prefetch_late");
    uint64_t in_place =
        swt_sw(&eight, "launches_touching_host") - swt_sw(&four, "launches_touching_host");
    ck_assert_msg(streamed >= 4 * 12 * 4 * SWT_MIB, "steps 5-8 streamed %llu bytes: %s",
                  (unsigned long long)streamed, swt_describe(&eight));
    ck_assert_msg(late == 0 && in_place == 0,
                  "steps 5-8: %llu copies made late, %llu launches read host memory: %s",
                  (unsigned long long)late, (unsigned long long)in_place, swt_describe(&eight));
}
END_TEST

/* 40 layers of 4 MiB, each even one an allocation of its own, the odd
 * ones packed in pairs into 8 MiB segments, every layer named (no pointer
 * table), under 64 MiB: a segment's visit is L1, then L2 alone, then L3
 * in it again. The chain follows each use's own successor (L2's range
 * after L1, L4's after L3) and keeps the room of the copies it will read
 * before: each range is copied ahead. Following the segment's latest
 * successor alone, L2's range was copied late at every visit and a
 * segment's copy pushed out before its second read: 6 late copies a
 * step. Steps 9-12: none late, none read in place. */

START_TEST(a_segment_whose_layers_alternate_with_others_is_copied_ahead)
{
    swt_run_t eight, twelve;
    const char *layout = "--odd-segments";
    const char *argv8[] = {swt_path("SWT_MLP"), "--layers", "40", "--width", "1024",
                           "--segments", "8", layout, "--no-tables", "--steps", "8", NULL};
    const char *argv12[] = {swt_path("SWT_MLP"), "--layers", "40", "--width", "1024",
                            "--segments", "8", layout, "--no-tables", "--steps", "12", NULL};
    const char *env[] = {"SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=64MiB", "SPILLWAY_REWRITE=1", NULL};
    swt_run(&eight, true, env, argv8);
    swt_assert_match(&eight);
    swt_run(&twelve, true, env, argv12);
    swt_assert_match(&twelve);
    uint64_t streamed = swt_sw(&twelve, "bytes_streamed") - swt_sw(&eight, "bytes_streamed");
    uint64_t late = swt_sw(&twelve, "prefetch_late") - swt_sw(&eight, "prefetch_late");
    uint64_t in_place =
        swt_sw(&twelve, "launches_touching_host") - swt_sw(&eight, "launches_touching_host");
    ck_assert_msg(streamed >= 4 * 64 * SWT_MIB, "steps 9-12 streamed %llu bytes: %s",
                  (unsigned long long)streamed, swt_describe(&twelve));
    ck_assert_msg(late == 0 && in_place == 0,
                  "steps 9-12: %llu copies made late, %llu launches read host memory: %s",
                  (unsigned long long)late, (unsigned long long)in_place, swt_describe(&twelve));
}
END_TEST

/* 64 MiB layers, each two 32 MiB chunks, a third of them read only
 * through a pointer table, which points at their first chunk: such a
 * layer is adopted whole (both chunks take resident places), so once it
 * is, no launch reads host memory. With only the first chunk marked as
 * table-reached, half of each such layer was read in place every step.
 * The window is given two copies' room: by default it holds one beside
 * 320 MiB, each copy waits for its launch, and it is given back (reading
 * in place, 1.13x the link bound, against 1.33x streaming so). */

START_TEST(a_table_only_layer_of_two_chunks_is_adopted_whole)
{
    swt_run_t four, six;
    const char *two = "SPILLWAY_PREFETCH_BYTES=128MiB";
    run_mlp(&four, "9", "4096", NULL, "4", "320MiB", two);
    run_mlp(&six, "9", "4096", NULL, "6", "320MiB", two);
    uint64_t in_place =
        swt_sw(&six, "launches_touching_host") - swt_sw(&four, "launches_touching_host");
    ck_assert_msg(swt_sw(&six, "bytes_streamed") > swt_sw(&four, "bytes_streamed"),
                  "steps 5-6 streamed nothing: %s", swt_describe(&six));
    ck_assert_msg(in_place == 0, "steps 5-6: %llu launches read host memory: %s",
                  (unsigned long long)in_place, swt_describe(&six));
}
END_TEST

/* 40 layers of 1 MiB in one 40 MiB buffer under a 16 MiB budget. In
 * chunks of 32 MiB (and an 8 MiB tail) only the tail could be resident:
 * 32 MiB stayed on the host, 4 MiB of the budget unused. Left at its
 * default, the chunk is cut to a power of two the budget holds eight
 * times (2 MiB here), and the budget is used whole; SPILLWAY_CHUNK given
 * is kept as it is. */

START_TEST(a_budget_too_small_for_two_chunks_cuts_them_finer)
{
    swt_run_t cut, given;
    run_mlp(&cut, "40", "512", "--one-buffer", "4", "16MiB", NULL);
    run_mlp(&given, "40", "512", "--one-buffer", "4", "16MiB", "SPILLWAY_CHUNK=32MiB");
    ck_assert_msg(swt_sw(&cut, "host_bytes_peak") <= 24 * SWT_MIB &&
                      swt_sw(&cut, "dev0_device_bytes_peak") >= 15 * SWT_MIB,
                  "default chunk: %s", swt_describe(&cut));
    ck_assert_msg(swt_sw(&given, "host_bytes_peak") == 32 * SWT_MIB, "SPILLWAY_CHUNK=32MiB: %s",
                  swt_describe(&given));
}
END_TEST

/* Twelve layers of 7.56 MiB, four to a 32 MiB allocator segment, under
 * a 72 MiB budget. With each segment one chunk, two fit the budget and
 * its last 8 MiB held nothing (1.98x the link bound). Left at its
 * default, no chunk is bigger than an eighth of the budget (8 MiB here),
 * so the budget is used whole (1.31x) and steps 5-8 read less in place;
 * SPILLWAY_CHUNK given is kept. */
static void run_four_to_a_segment(swt_run_t *r, const char *steps, const char *chunk)
{
    const char *argv[] = {swt_path("SWT_MLP"), "--layers", "12", "--width", "1408",
                          "--segments", "32", "--steps", steps, NULL};
    const char *env[] = {"SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=72MiB", "SPILLWAY_REWRITE=1",
                         chunk, NULL};
    swt_run(r, true, env, argv);
    swt_assert_match(r);
}

START_TEST(no_chunk_is_bigger_than_an_eighth_of_the_budget)
{
    swt_run_t four, eight, given;
    run_four_to_a_segment(&four, "4", NULL);
    run_four_to_a_segment(&eight, "8", NULL);
    run_four_to_a_segment(&given, "8", "SPILLWAY_CHUNK=32MiB");
    ck_assert_msg(swt_sw(&eight, "dev0_device_bytes_peak") > 64 * SWT_MIB, "default chunk: %s",
                  swt_describe(&eight));
    ck_assert_msg(swt_sw(&given, "dev0_device_bytes_peak") == 64 * SWT_MIB,
                  "SPILLWAY_CHUNK=32MiB: %s", swt_describe(&given));
    /* the model less the budget is 18.75 MiB a step, and that is what
     * steps 5-8 read in place; two whole segments resident left 30.25 */
    uint64_t in_place = swt_sg(&eight, "kernel_bytes_host") - swt_sg(&four, "kernel_bytes_host");
    ck_assert_msg(in_place <= 4 * 19 * SWT_MIB, "steps 5-8 read %llu bytes in place: %s",
                  (unsigned long long)in_place, swt_describe(&eight));
}
END_TEST

/* 36 layers of 8 MiB, two to a 20 MiB allocator segment with 4 MiB of
 * slack, under 256 MiB: a budget whose eighth is the default chunk, as a
 * real GPU's is. Left at its default, a segment is cut into a 16 MiB
 * chunk of layers and its slack, so steps 5-8 read in place only the
 * layers the budget cannot hold (288 - 256 MiB a step); one chunk a
 * segment (SPILLWAY_CHUNK=32MiB) holds the slack resident too, twelve
 * segments in 240 MiB, and reads 96 MiB a step in place. */
START_TEST(a_segments_slack_is_a_chunk_of_its_own_under_a_gpus_budget)
{
    later_t t;
    swt_run_t given;
    run_later(&t, "36", "1448", EAGER, "256MiB", "auto");
    run_segments(&given, "36", "1448", "8", EAGER, "256MiB", "32MiB");
    uint64_t in_place = sg_later(&t, "kernel_bytes_host");
    ck_assert_msg(in_place <= 4 * 33 * SWT_MIB, "steps 5-8 read %llu bytes in place: %s",
                  (unsigned long long)in_place, swt_describe(&t.eight));
    ck_assert_msg(swt_sw(&given, "dev0_device_bytes_peak") == 240 * SWT_MIB,
                  "SPILLWAY_CHUNK=32MiB: %s", swt_describe(&given));
}
END_TEST

START_TEST(a_given_budgets_window_is_fitted_when_it_binds)
{
    const char *argv[] = {swt_path("SWT_MLP"), "--layers", "12", "--width", "1448", "--steps", "3",
                          NULL};
    const char *env[] = {"SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=80MiB", "SPILLWAY_LOG=info",
                         "SPILLWAY_REWRITE=1", NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_match(&r);
    ck_assert_msg(swt_file_has(r.err, "streaming window: 16777216 bytes"), "%s",
                  swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "bytes_streamed") > 0, "nothing streamed: %s", swt_describe(&r));
}
END_TEST

/* The budget first binds inside one allocation bigger than it (one
 * buffer of 80 MiB under 32 MiB): its only device chunk is the one being
 * made, so no room can be made for the window then. The window waits;
 * made anyway, it would hold the device 8 MiB over its budget. */
START_TEST(the_window_never_holds_a_device_over_its_budget)
{
    const char *argv[] = {swt_path("SWT_MLP"), "--layers", "20", "--width", "1024",
                          "--one-buffer", "--steps", "3", NULL};
    const char *env[] = {"SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=32MiB", NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_match(&r);
    ck_assert_msg(swt_sw(&r, "dev0_device_bytes_peak") <= 32 * SWT_MIB, "%s", swt_describe(&r));
    ck_assert_msg(swt_sg(&r, "device_bytes_peak") <= 33 * SWT_MIB, "%s", swt_describe(&r));
}
END_TEST

/* 16 layers of 4 MiB in 8 MiB segments on two streams under 26 MiB: a
 * quarter of the budget (6.5 MiB) holds no allocation the program made,
 * so no window is made. Made anyway, it served nothing, was given back a
 * loop later, and its room was filled by four more moves in step 5, each
 * waiting for the device (1.49x the link bound timed over steps 4-7,
 * 1.21x without). Steps 5-8 move no chunk and stream nothing. */
START_TEST(no_window_is_made_where_no_allocation_fits_it)
{
    swt_run_t four, eight;
    run_mlp(&four, "16", "1024", "--segments=8", "4", "26MiB", NULL);
    run_mlp(&eight, "16", "1024", "--segments=8", "8", "26MiB", NULL);
    uint64_t moves = swt_sw(&eight, "promotions") + swt_sw(&eight, "demotions") -
                     swt_sw(&four, "promotions") - swt_sw(&four, "demotions");
    ck_assert_msg(moves == 0, "steps 5-8 moved %llu chunks: %s", (unsigned long long)moves,
                  swt_describe(&eight));
    ck_assert_msg(swt_sw(&eight, "bytes_streamed") == 0, "%s", swt_describe(&eight));
}
END_TEST

/* mlp with `args` (NULL-ended) under `budget` (SPILLWAY_GPU_BUDGET=...),
 * with the streaming window and its messages: the window rules' runs. */
static void run_windowed(swt_run_t *r, const char *budget, const char *const *args)
{
    const char *argv[24] = {swt_path("SWT_MLP")};
    for (size_t i = 0; args[i] && i + 2 < sizeof argv / sizeof *argv; i++)
        argv[i + 1] = args[i];
    const char *env[] = {"SIMGPU_MEM=1GiB", budget, "SPILLWAY_REWRITE=1", "SPILLWAY_LOG=info",
                         NULL};
    swt_run(r, true, env, argv);
    swt_assert_match(r);
}

/* 16 layers of 4 MiB on two streams under 26 MiB, the odd ones packed in
 * pairs into 8 MiB segments: a third of them only the pointer table
 * reaches, so the segments holding one are read in place. The window (8
 * MiB) copies about 4.5 times its size a loop, and keeping its room
 * resident saves more: it is given back in the second loop known, before
 * step 4. Steps 5-8 then stream nothing and move no chunk (kept, the
 * window made steps 4-7 1.44x the link bound; given back, 1.21x). */
static void run_odd(swt_run_t *r, const char *steps)
{
    const char *args[] = {"--layers", "16", "--width", "1024", "--segments", "8",
                          "--odd-segments", "--streams", "2", "--steps", steps, NULL};
    run_windowed(r, "SPILLWAY_GPU_BUDGET=26MiB", args);
}

START_TEST(a_window_copying_less_than_five_times_its_size_a_loop_is_given_back)
{
    swt_run_t four, eight;
    run_odd(&four, "4");
    run_odd(&eight, "8");
    ck_assert_msg(swt_file_has(four.err, "copied too little in a loop"), "%s",
                  swt_describe(&four));
    uint64_t moves = swt_sw(&eight, "promotions") + swt_sw(&eight, "demotions") -
                     swt_sw(&four, "promotions") - swt_sw(&four, "demotions");
    uint64_t streamed = swt_sw(&eight, "bytes_streamed") - swt_sw(&four, "bytes_streamed");
    ck_assert_msg(moves == 0 && streamed == 0, "steps 5-8 moved %llu chunks, streamed %llu: %s",
                  (unsigned long long)moves, (unsigned long long)streamed, swt_describe(&eight));
}
END_TEST

/* The same model: the window is fitted to two copies of a 4 MiB layer (8
 * MiB, a quarter of the budget holding no 8 MiB segment), so it copies
 * nothing bigger than a layer. An 8 MiB segment would fill it alone, and
 * each copy would wait for the launches of the one before it (at batch 16,
 * compute about equal to copy: 2.04x the all-resident step, 1.20x now).
 * Every copy is of one 4 MiB layer, before the window is given back. */
START_TEST(a_window_fitted_to_two_copies_streams_nothing_bigger_than_one)
{
    swt_run_t r;
    run_odd(&r, "4");
    uint64_t copies = swt_sw(&r, "prefetches") + swt_sw(&r, "prefetch_late");
    uint64_t streamed = swt_sw(&r, "bytes_streamed");
    ck_assert_msg(copies > 0 && streamed == copies * 4 * SWT_MIB, "%llu copies of %llu bytes: %s",
                  (unsigned long long)copies, (unsigned long long)streamed, swt_describe(&r));
}
END_TEST

/* A window given room for one copy, or one and a half, of the 4 MiB
 * layers it streams (16 layers under 32 MiB, two streams): each copy
 * ahead goes into the room the copy before it holds, its part there
 * waiting for that copy's launch. Before, none could be made ahead, and
 * every copy waited at its launch for the one before (simgpu, 20 layers
 * under 32 MiB: one copy 1149.2 us a step, now 1093.2; 16 MiB layers
 * under 128 MiB in 16 and 24 MiB, 4259.7 and 4577.9 us, now 4177.9 and
 * 4392.6). In steps 5-8 at least three copies in four are made ahead,
 * and every step matches its reference. Three layouts: a layer per
 * allocation in two chunk sizes, and 20 MiB segments (no pointer
 * tables), whose five layers keep their copy until the last has read it
 * (each segment copied once a step). */
static void run_small_window(swt_run_t *r, const char *window, const char *chunk,
                             const char *budget, const char *const *model, const char *steps)
{
    const char *argv[24] = {swt_path("SWT_MLP")};
    size_t n = 1;
    for (size_t i = 0; model[i]; i++)
        argv[n++] = model[i];
    argv[n++] = "--steps";
    argv[n++] = steps;
    const char *env[] = {"SIMGPU_MEM=1GiB", budget, "SPILLWAY_REWRITE=1", window, chunk, NULL};
    swt_run(r, true, env, argv);
    swt_assert_match(r);
}

START_TEST(a_window_smaller_than_two_copies_copies_ahead)
{
    static const char *const layers[] = {"--layers", "16", "--width", "1024",
                                         "--streams", "2", NULL};
    static const char *const segments[] = {"--layers", "20", "--width", "1024", "--segments",
                                           "20", "--no-tables", NULL};
    static const struct {
        const char *window, *chunk, *budget;
        const char *const *model;
        uint64_t copy;
    } cases[] = {
        {"SPILLWAY_PREFETCH_BYTES=4MiB", "SPILLWAY_CHUNK=auto", "SPILLWAY_GPU_BUDGET=32MiB",
         layers, 4},
        {"SPILLWAY_PREFETCH_BYTES=6MiB", "SPILLWAY_CHUNK=auto", "SPILLWAY_GPU_BUDGET=32MiB",
         layers, 4},
        {"SPILLWAY_PREFETCH_BYTES=6MiB", "SPILLWAY_CHUNK=2MiB", "SPILLWAY_GPU_BUDGET=32MiB",
         layers, 4},
        {"SPILLWAY_PREFETCH_BYTES=20MiB", "SPILLWAY_CHUNK=auto", "SPILLWAY_GPU_BUDGET=48MiB",
         segments, 20},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        swt_run_t four, eight;
        run_small_window(&four, cases[i].window, cases[i].chunk, cases[i].budget,
                         cases[i].model, "4");
        run_small_window(&eight, cases[i].window, cases[i].chunk, cases[i].budget,
                         cases[i].model, "8");
        uint64_t ahead = swt_sw(&eight, "prefetches") - swt_sw(&four, "prefetches");
        uint64_t late = swt_sw(&eight, "prefetch_late") - swt_sw(&four, "prefetch_late");
        uint64_t bytes = swt_sw(&eight, "bytes_streamed") - swt_sw(&four, "bytes_streamed");
        ck_assert_msg(ahead > 0 && ahead >= 3 * late, "%s %s: steps 5-8 made %llu copies "
                      "ahead, %llu at their launch: %s", cases[i].window, cases[i].chunk,
                      (unsigned long long)ahead, (unsigned long long)late, swt_describe(&eight));
        uint64_t copy = cases[i].copy * SWT_MIB;
        ck_assert_msg(bytes >= (ahead + late) * copy - (ahead + late) * copy / 8 &&
                          bytes <= (ahead + late) * copy + (ahead + late) * copy / 8,
                      "%s: %llu bytes in %llu copies of about %llu: %s", cases[i].window,
                      (unsigned long long)bytes, (unsigned long long)(ahead + late),
                      (unsigned long long)copy, swt_describe(&eight));
    }
}
END_TEST

/* 20 layers of 16 MiB on two streams under 128 MiB, default options: the
 * window is fitted to two copies, then, once the launches it served in a
 * loop took less than SW_WORTH_ONE_COPY of one copy's time (0.60),
 * made anew at one copy, its other 16 MiB a resident layer's, before
 * step 4 (steps 4-7 4190.1 us a step against 4277.1 with two copies'
 * room; simgpu, 2026-11-30). So steps 5-6 copy a layer less a step than
 * with the window given at two copies. 20 layers of 4 MiB under 32 MiB,
 * whose launches take longer than a copy, keep two (1072.4 against
 * 1093.2 us with one). */
static void run_sized(swt_run_t *r, const char *width, const char *budget, const char *window,
                      const char *steps)
{
    const char *argv[] = {swt_path("SWT_MLP"), "--layers", "20", "--width", width, "--streams",
                          "2", "--steps", steps, NULL};
    const char *env[] = {"SIMGPU_MEM=1GiB", budget, "SPILLWAY_REWRITE=1", "SPILLWAY_LOG=info",
                         window, NULL};
    swt_run(r, true, env, argv);
    swt_assert_match(r);
}

START_TEST(a_window_whose_launches_are_short_beside_a_copy_is_made_one_copy)
{
    const char *b16 = "SPILLWAY_GPU_BUDGET=128MiB", *two = "SPILLWAY_PREFETCH_BYTES=32MiB";
    swt_run_t one4, one6, two4, two6, small;
    run_sized(&one4, "2048", b16, "SPILLWAY_PREFETCH_BYTES", "4");
    run_sized(&one6, "2048", b16, "SPILLWAY_PREFETCH_BYTES", "6");
    run_sized(&two4, "2048", b16, two, "4");
    run_sized(&two6, "2048", b16, two, "6");
    ck_assert_msg(swt_file_has(one4.err, "the streaming window is one copy of the longest range "
                                         "it copies now, 16777216 bytes"),
                  "%s", swt_describe(&one4));
    ck_assert_msg(!swt_file_has(two6.err, "is one copy"), "a window given: %s", swt_describe(&two6));
    uint64_t one = swt_sw(&one6, "bytes_streamed") - swt_sw(&one4, "bytes_streamed");
    uint64_t both = swt_sw(&two6, "bytes_streamed") - swt_sw(&two4, "bytes_streamed");
    ck_assert_msg(one + 2 * 16 * SWT_MIB == both, "steps 5-6 streamed %llu bytes in one copy's "
                  "room, %llu in two: %s", (unsigned long long)one, (unsigned long long)both,
                  swt_describe(&one6));
    run_sized(&small, "1024", "SPILLWAY_GPU_BUDGET=32MiB", "SPILLWAY_PREFETCH_BYTES", "6");
    ck_assert_msg(!swt_file_has(small.err, "is one copy") &&
                      swt_file_has(small.err, "streaming window: 8388608 bytes"),
                  "4 MiB layers: %s", swt_describe(&small));
}
END_TEST

/* 28 layers of 3.0625 MiB under 34 MiB: a window of two copies, 6.125
 * MiB, leaves 27.875 MiB to the resident set, which holds whole 2 MiB
 * granules: 13 of them. Made anew at 6 MiB once its first loop is judged,
 * it leaves 14, and each copy's last 0.125 MiB waits for the launch
 * before. So from step 9 a step carries at least 1.5 MiB less over the
 * link than with 6.125 MiB given (2.1 MiB less; simgpu, 2026-11-30). */
static void run_granules(swt_run_t *r, const char *window, const char *steps)
{
    const char *argv[] = {swt_path("SWT_MLP"), "--layers", "28", "--width", "896", "--streams",
                          "2", "--steps", steps, NULL};
    const char *env[] = {"SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=34MiB", "SPILLWAY_REWRITE=1",
                         "SPILLWAY_LOG=info", window, NULL};
    swt_run(r, true, env, argv);
    swt_assert_match(r);
}

START_TEST(a_window_is_trimmed_so_that_the_resident_set_has_whole_granules)
{
    const char *two = "SPILLWAY_PREFETCH_BYTES=6272KiB";
    swt_run_t trim8, trim12, two8, two12;
    run_granules(&trim8, "SPILLWAY_PREFETCH_BYTES", "8");
    run_granules(&trim12, "SPILLWAY_PREFETCH_BYTES", "12");
    run_granules(&two8, two, "8");
    run_granules(&two12, two, "12");
    ck_assert_msg(swt_file_has(trim8.err, "streaming window: 6291456 bytes, made anew") &&
                      !swt_file_has(trim12.err, "copied too little") &&
                      !swt_file_has(trim12.err, "served nothing"),
                  "%s", swt_describe(&trim12));
    ck_assert_msg(swt_file_has(two8.err, "streaming window: 6422528 bytes"), "%s",
                  swt_describe(&two8));
    uint64_t trimmed = link_bytes(&trim12) - link_bytes(&trim8);
    uint64_t whole = link_bytes(&two12) - link_bytes(&two8);
    ck_assert_msg(trimmed + 4 * 3 * SWT_MIB / 2 <= whole,
                  "steps 9-12 carried %llu bytes over the link trimmed, %llu not: %s",
                  (unsigned long long)trimmed, (unsigned long long)whole,
                  swt_describe(&trim12));
    ck_assert_uint_ge(swt_sw(&trim12, "bytes_streamed") - swt_sw(&trim8, "bytes_streamed"),
                      4 * 15 * 3136 * 1024ull);
}
END_TEST

/* The loop after the window is made anew, short of two copies by a trim,
 * and after the trades that spread the resident set: some layers keep a 2
 * MiB granule resident and stream the rest, and the chain of copies ahead
 * knows nothing after them yet. Two things made two copies of the fourth
 * step at their launches (24 layers of 5.06 MiB under 48 MiB and 28 of
 * 3.06 MiB under 34 MiB, two streams: that step took 1746.6 and 1259.8 us
 * against 1624.7 and 1141.0 from the sixth; simgpu, 2026-12-01):
 * - where the chain ends, the tensor used soonest was sought only among
 *   those whose first chunk is on the host, so a layer partly resident was
 *   copied at its launch;
 * - a range read in place in the first step and at the second's start,
 *   before any loop was known, counted that as one visit of two launches,
 *   so the rest of the copy after it waited for a second launch that
 *   never came, and that copy was made again at its own launch.
 * Now the fourth step makes every copy ahead. */
static void run_remade(swt_run_t *r, const char *budget, const char *width, const char *layers,
                       const char *steps)
{
    const char *args[] = {"--layers", layers, "--width", width, "--streams", "2",
                          "--steps", steps, NULL};
    run_windowed(r, budget, args);
}

START_TEST(the_loop_after_the_window_is_made_anew_copies_every_range_ahead)
{
    static const char *const shapes[][3] = {{"SPILLWAY_GPU_BUDGET=48MiB", "1152", "24"},
                                            {"SPILLWAY_GPU_BUDGET=34MiB", "896", "28"}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        swt_run_t three, four;
        run_remade(&three, shapes[i][0], shapes[i][1], shapes[i][2], "3");
        run_remade(&four, shapes[i][0], shapes[i][1], shapes[i][2], "4");
        ck_assert_msg(swt_file_has(three.err, "made anew"), "%s", swt_describe(&three));
        uint64_t late = swt_sw(&four, "prefetch_late") - swt_sw(&three, "prefetch_late");
        uint64_t ahead = swt_sw(&four, "prefetches") - swt_sw(&three, "prefetches");
        ck_assert_msg(late == 0 && ahead >= 14,
                      "%s layers: the fourth step made %llu copies at their launches, %llu "
                      "ahead: %s",
                      shapes[i][1], (unsigned long long)late, (unsigned long long)ahead,
                      swt_describe(&four));
    }
}
END_TEST

/* The mean step time mlp --time printed (virtual ns). */
static double step_ns_of(swt_run_t *r)
{
    char *out = swt_slurp(r->out);
    const char *at = out ? strstr(out, "step_ns=") : NULL;
    ck_assert_msg(at, "no step time: %s", swt_describe(r));
    double ns = strtod(at + strlen("step_ns="), NULL);
    free(out);
    return ns;
}

/* A prefill in the H200's proportions at a test's size: 20 layers of
 * 8 MiB (1448^2 floats) in 2 MiB chunks under 64 MiB, each GEMM at batch
 * 16 about 0.4 of its copy's time (1.2 TFLOPS), steps 5-8 timed. Fitted
 * to two copies (16 MiB), the window is made anew at one copy and a lead
 * of whole chunks, 1.25 times the part of a copy the GEMM before it
 * takes: each copy's lead goes while that GEMM runs, its rest after, and
 * the room given up is a resident chunk (2102.1 us a step against 2139.0
 * with 16 MiB given; simgpu, 2026-12-01). */
static void run_led(swt_run_t *r, const char *window)
{
    const char *argv[] = {swt_path("SWT_MLP"), "--layers", "20", "--width", "1448", "--batch",
                          "16", "--steps", "9", "--time", "5", NULL};
    const char *env[] = {"SIMGPU_MEM=1GiB", "SIMGPU_TFLOPS=1.2", "SPILLWAY_GPU_BUDGET=64MiB",
                         "SPILLWAY_CHUNK=2MiB", "SPILLWAY_REWRITE=1", "SPILLWAY_LOG=info",
                         window, NULL};
    swt_run(r, true, env, argv);
    swt_assert_match(r);
}

START_TEST(a_window_whose_launches_are_shorter_than_a_part_of_a_copy_is_made_one_and_a_lead)
{
    swt_run_t led, two;
    run_led(&led, "SPILLWAY_PREFETCH_BYTES");
    run_led(&two, "SPILLWAY_PREFETCH_BYTES=16MiB");
    ck_assert_msg(swt_file_has(led.err, "the streaming window is one copy of the longest range "
                                        "it copies and a lead of"),
                  "%s", swt_describe(&led));
    ck_assert_msg(!swt_file_has(two.err, "made anew"), "a window given: %s", swt_describe(&two));
    double led_ns = step_ns_of(&led), two_ns = step_ns_of(&two);
    ck_assert_msg(led_ns < 0.99 * two_ns, "steps 5-8: %.0f ns a step with a lead, %.0f with two "
                  "copies: %s", led_ns, two_ns, swt_describe(&led));
}
END_TEST

/* 64 layers of 4 MiB under 128 MiB, each layer's matrix kernel run once
 * before the steps (--load-pass: one launch a layer, the steps' two), as
 * a kernel initialising every weight on the device does. The first loop
 * gaps then spread from 64 to 127 launches where the loop is 128, and a
 * window judged in them was given back as "serving nothing" in the first
 * step: steps 5-8 streamed nothing and read half the model in place
 * (1.22x the link bound over steps 4-7; 1.10x kept). On the H200 the same
 * pass (gpu-offload-bench's weights initialised by a kernel) gave 1.41x
 * in place against 1.06x streamed. Judged only once most bytes agree on
 * the loop, the window is kept and streams at least two layers a step. */
static void run_load_pass(swt_run_t *r, const char *steps)
{
    const char *args[] = {"--layers", "64", "--width", "1024", "--load-pass", "--steps", steps,
                          NULL};
    run_windowed(r, "SPILLWAY_GPU_BUDGET=128MiB", args);
}

/* The window of run(4 steps) and run(8) was kept, and steps 5-8 streamed
 * at least `least` bytes. */
static void assert_kept_streaming(void (*run)(swt_run_t *, const char *), uint64_t least)
{
    swt_run_t four, eight;
    run(&four, "4");
    run(&eight, "8");
    ck_assert_msg(!swt_file_has(eight.err, "streaming window served nothing") &&
                      !swt_file_has(eight.err, "copied too little in a loop"),
                  "%s", swt_describe(&eight));
    uint64_t streamed = swt_sw(&eight, "bytes_streamed") - swt_sw(&four, "bytes_streamed");
    ck_assert_msg(streamed >= least, "steps 5-8 streamed %llu bytes: %s",
                  (unsigned long long)streamed, swt_describe(&eight));
}

START_TEST(a_load_pass_before_the_loop_does_not_cost_the_window)
{
    assert_kept_streaming(run_load_pass, 4 * 2 * 4 * SWT_MIB);
}
END_TEST

/* The same with short loops: 20 layers of 4 MiB under 32 MiB at batch 16
 * (a GEMM and its bias a layer, the load pass one launch a layer). The
 * first loop learned from the pass was 21 launches where the loop is 40,
 * and a period kept 64 launches was still 21 in the second step: judged
 * in it, the window copied "too little" and was given back, steps 5-8
 * streamed nothing and read 48 MiB a step in place (the H200's 32 x 128
 * MiB decode also lost its window after its load pass, 2026-11-28).
 * Computed twice a loop, the
 * period follows, and steps 5-8 stream more than the model less the
 * budget (48 MiB a step). */
static void run_short_load_pass(swt_run_t *r, const char *steps)
{
    const char *args[] = {"--layers", "20", "--width", "1024", "--batch", "16", "--load-pass",
                          "--steps", steps, NULL};
    run_windowed(r, "SPILLWAY_GPU_BUDGET=32MiB", args);
}

START_TEST(a_load_pass_before_short_loops_does_not_cost_the_window)
{
    assert_kept_streaming(run_short_load_pass, 4 * 48 * SWT_MIB);
}
END_TEST

/* 16 layers of 16 MiB in 4 MiB chunks under 100 MiB: the first steps'
 * moves leave a layer partly on the device (as the H200's prefill left
 * 128 MiB layers in 32 MiB chunks half resident, 2026-11-28, and read them
 * in place). Such a range is copied whole, its resident chunks device to
 * device, and in training its copies go home the same way: the results
 * stay the program's own. */
START_TEST(a_range_partly_on_the_device_is_copied_whole_and_stays_right)
{
    const char *modes[] = {"--load-pass", "--train"};
    for (int i = 0; i < 2; i++) {
        const char *argv[] = {swt_path("SWT_MLP"), "--layers", "16", "--width", "2048",
                              modes[i], "--steps", "6", NULL};
        const char *env[] = {"SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=100MiB",
                             "SPILLWAY_CHUNK=4MiB", "SPILLWAY_REWRITE=1", "SPILLWAY_LOG=debug",
                             NULL};
        swt_run_t r;
        swt_run(&r, true, env, argv);
        swt_assert_match(&r);
        ck_assert_msg(swt_file_has(r.err, "is partly on the device"), "%s: %s", modes[i],
                      swt_describe(&r));
        ck_assert_msg(swt_sw(&r, "bytes_streamed") > 0, "%s: %s", modes[i], swt_describe(&r));
    }
}
END_TEST

/* Layers whose size the granularity rounds up: 24 of 3.06 MiB (896 x
 * 896 floats, two 2 MiB chunks each, the second about half empty) on two
 * streams under 29 MiB, and 24 of 5.06 MiB (4 MiB and 2 MiB chunks, or
 * three of 2 MiB) under 48 MiB. Once the loop is learned full host chunks
 * take the places of half-empty resident ones (sw_policy_pack), and the
 * results stay right at each chunk size. Whole layers resident, the
 * first moved 619.5 MiB over the link in 10 steps (simgpu, 2026-11-28:
 * copies and reads in place), packed 587.0. */
START_TEST(layers_the_granularity_rounds_up_keep_full_chunks_resident)
{
    static const struct {
        const char *width, *budget, *chunk;
        uint64_t budget_mib;
    } runs[] = {
        {"896", "SPILLWAY_GPU_BUDGET=29MiB", "SPILLWAY_CHUNK=auto", 29},
        {"1152", "SPILLWAY_GPU_BUDGET=48MiB", "SPILLWAY_CHUNK=2MiB", 48},
        {"1152", "SPILLWAY_GPU_BUDGET=48MiB", "SPILLWAY_CHUNK=4MiB", 48},
    };
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        const char *argv[] = {swt_path("SWT_MLP"), "--layers", "24", "--width", runs[i].width,
                              "--streams", "2", "--steps", "10", NULL};
        const char *env[] = {"SIMGPU_MEM=1GiB", runs[i].budget, runs[i].chunk,
                             "SPILLWAY_REWRITE=1", "SPILLWAY_LOG=debug", NULL};
        swt_run_t r;
        swt_run(&r, true, env, argv);
        swt_assert_match(&r);
        ck_assert_msg(swt_file_has(r.err, "more: fuller"), "%s %s: %s", runs[i].width,
                      runs[i].chunk, swt_describe(&r));
        ck_assert_msg(swt_sw(&r, "device_bytes_peak") <= runs[i].budget_mib * SWT_MIB, "%s",
                      swt_describe(&r));
        if (i == 0) {
            uint64_t link = link_bytes(&r);
            ck_assert_msg(link < 600 * SWT_MIB, "%llu MiB over the link: %s",
                          (unsigned long long)(link / SWT_MIB), swt_describe(&r));
        }
    }
}
END_TEST

/* The bench's MoE: 32 experts of 4 MiB, two a step picked by a Zipf
 * router, under 51 MiB. The memory's gaps never agree on a loop, so the
 * window is never judged by one; kept, it copied an expert now and then,
 * at its launch (66.8 us a step on simgpu against 58.7 with no window,
 * 2026-11-28). Four of the loops the gaps suggest without agreement, and
 * it is given back; the experts stay right. */
START_TEST(a_window_in_a_program_with_no_loop_is_given_back)
{
    const char *argv[] = {swt_path("SWT_MOE"), "--experts", "32", "--active", "2", "--width",
                          "1024", "--steps", "140", NULL};
    const char *env[] = {"SIMGPU_MEM=307MiB", "SPILLWAY_GPU_BUDGET=51MiB", "SPILLWAY_REWRITE=1",
                         "SPILLWAY_LOG=info", NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_match(&r);
    ck_assert_msg(swt_file_has(r.err, "found no loop the memory agrees on"), "%s",
                  swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "device_bytes_peak") <= 51 * SWT_MIB, "%s", swt_describe(&r));
}
END_TEST

/* 32 layers of 4 MiB under 64 MiB, after a 16 MiB workspace every layer
 * writes a little of (as cuBLAS's): the window is fitted, when the budget
 * binds, to the largest allocation that fits a quarter of it, the
 * workspace, which it never copies (it stays resident). Once a loop is
 * agreed it is made anew at two of the layers it copies, 8 MiB, and the
 * other 8 MiB hold weights: steps 4-7 went from 1.26x to 1.15x the link
 * bound (on the H200, 64 x 32 MiB layers beside a 64 MiB allocation: a
 * window of 128 MiB 1.10x, of 64 MiB 1.06x). */
START_TEST(a_window_bigger_than_two_of_its_copies_is_made_anew_at_that_size)
{
    const char *args[] = {"--layers", "32", "--width", "1024", "--workspace", "16", "--steps",
                          "6", NULL};
    swt_run_t r;
    run_windowed(&r, "SPILLWAY_GPU_BUDGET=64MiB", args);
    ck_assert_msg(swt_file_has(r.err, "streaming window: 16777216 bytes") &&
                      swt_file_has(r.err, "two copies of the longest range it copies now, "
                                          "8388608 bytes"),
                  "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "dev0_device_bytes_peak") <= 64 * SWT_MIB, "%s", swt_describe(&r));
}
END_TEST

/* 12 layers of 16 MiB on two streams under 77 MiB, the odd ones two to a
 * 40 MiB segment: the window (16 MiB) copies about three times its size a
 * loop. Counted over the 16-launch questions unscaled, 1.5 loops of 24
 * launches passed for one and the window was kept (1.54x the link bound
 * over steps 4-7); scaled to one loop, it is given back (1.39x). */
START_TEST(a_window_is_judged_by_what_it_copies_in_one_loop)
{
    const char *args[] = {"--layers", "12", "--width", "2048", "--segments", "40",
                          "--odd-segments", "--streams", "2", "--steps", "7", NULL};
    swt_run_t r;
    run_windowed(&r, "SPILLWAY_GPU_BUDGET=77MiB", args);
    ck_assert_msg(swt_file_has(r.err, "copied too little in a loop"), "%s",
                  swt_describe(&r));
}
END_TEST

/* 20 layers of 4 MiB at batch 256 under 32 MiB, one step captured after
 * three eager ones, in which the GEMMs were timed slower reading their
 * weights in place than copying them (once per tile row of 128): the
 * window fitted to two copies (8 MiB) is one copy's before the capture,
 * since a capture's copies go one at a time, and the 4 MiB it gives up
 * hold a weight chunk at once. The graph still streams, in that one
 * range, and the device stays in its budget. (1.49 ms a replay; read in
 * place, 2.22.) */
START_TEST(a_capture_is_served_by_a_window_of_one_range)
{
    const char *args[] = {"--layers", "20", "--width", "1024", "--batch", "256", "--graph",
                          "--eager", "3", "--steps", "5", NULL};
    swt_run_t r;
    run_windowed(&r, "SPILLWAY_GPU_BUDGET=32MiB", args);
    ck_assert_msg(swt_file_has(r.err, "streaming window: 8388608 bytes") &&
                      swt_file_has(r.err, "a capture's copies go one at a time: the streaming "
                                          "window is one range, 4194304 bytes: 4194304 are the "
                                          "resident set's"),
                  "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "bytes_streamed") > 0 &&
                      swt_sw(&r, "dev0_device_bytes_peak") <= 32 * SWT_MIB,
                  "%s", swt_describe(&r));
}
END_TEST

/* The same model at one vector a step, captured before any eager step:
 * nothing was timed slower in place than copied (a kernel reading each
 * weight once loses nothing so), so the window is given back before the
 * capture, its 8 MiB the resident set's at once, and the graph reads in
 * place: 20 x 16 MiB under 128 MiB, 1.22x the link bound with one
 * range, 1.13x with none; the 48 layouts 1.24-1.55x, 1.15-1.29x. */
START_TEST(a_capture_with_no_range_slower_in_place_reads_in_place)
{
    const char *args[] = {"--layers", "20", "--width", "1024", "--graph", "--steps", "4", NULL};
    swt_run_t r;
    run_windowed(&r, "SPILLWAY_GPU_BUDGET=32MiB", args);
    ck_assert_msg(swt_file_has(r.err, "no range it copies was timed slower read in place than "
                                      "copied: the capture reads in place, the streaming "
                                      "window's 8388608 bytes are the resident set's"),
                  "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "bytes_streamed") == 0 && swt_sw(&r, "promotions") >= 2 &&
                      swt_sw(&r, "dev0_device_bytes_peak") <= 32 * SWT_MIB,
                  "%s", swt_describe(&r));
}
END_TEST

/* 32 layers of 600 x 600 floats (1.37 MiB), each alone in a 2 MiB
 * allocator segment, under 32 MiB: a copy carries the segment's 0.63 MiB
 * no kernel reads (a kernel may read its whole allocation). Timed on the
 * GPU, a step's launch reading one in place at batch 1 (30.8 us on
 * simgpu) beats its copy (38.1 us), so after the first copies nothing
 * more is copied: steps 5-8 stream nothing. (The bench's 25 layers of 16
 * MiB in 20 MiB segments: 1.54x the link bound over steps 4-7 copied,
 * 1.34x now, 1.28x from step 5.) */
static void run_slack(swt_run_t *r, const char *batch, const char *steps)
{
    const char *args[] = {"--layers", "32", "--width", "600", "--segments", "2",
                          "--batch", batch, "--steps", steps, NULL};
    run_windowed(r, "SPILLWAY_GPU_BUDGET=32MiB", args);
}

START_TEST(a_segment_read_faster_in_place_than_copied_is_read_in_place)
{
    swt_run_t four, eight;
    run_slack(&four, "1", "4");
    run_slack(&eight, "1", "8");
    ck_assert_msg(swt_file_has(four.err, "is read in place: a visit reads it there in"), "%s",
                  swt_describe(&four));
    ck_assert_msg(swt_sw(&four, "ranges_read_in_place") > 0, "%s", swt_describe(&four));
    ck_assert_msg(swt_sw(&four, "bytes_streamed") > 0, "%s", swt_describe(&four));
    uint64_t streamed = swt_sw(&eight, "bytes_streamed") - swt_sw(&four, "bytes_streamed");
    ck_assert_msg(streamed == 0, "steps 5-8 streamed %llu bytes: %s", (unsigned long long)streamed,
                  swt_describe(&eight));
}
END_TEST

/* 128 layers of 2 MiB, eight to a 16 MiB segment, every one named (no
 * pointer table), under 128 MiB: a segment's visit is eight launches, more
 * than a range once remembered, and a segment just moved to the host has
 * no record at all, so such segments were read in place (0 bytes streamed
 * in steps 5-8). They recur visit by visit, or by their chunks' learned
 * loop, and stream (160 MiB a step). */
static void run_many(swt_run_t *r, const char *layers, const char *width, const char *segment,
                     const char *streams, const char *budget, const char *steps)
{
    const char *args[] = {"--layers", layers, "--widths", width, "--segments", segment,
                          "--no-tables", "--streams", streams, "--steps", steps, NULL};
    run_windowed(r, budget, args);
}

START_TEST(segments_of_many_named_tensors_are_streamed)
{
    swt_run_t four, eight;
    run_many(&four, "128", "1024,512", "16", "1", "SPILLWAY_GPU_BUDGET=128MiB", "4");
    run_many(&eight, "128", "1024,512", "16", "1", "SPILLWAY_GPU_BUDGET=128MiB", "8");
    uint64_t streamed = swt_sw(&eight, "bytes_streamed") - swt_sw(&four, "bytes_streamed");
    ck_assert_msg(streamed >= 4 * 8 * SWT_MIB, "steps 5-8 streamed %llu bytes: %s",
                  (unsigned long long)streamed, swt_describe(&eight));
}
END_TEST

/* 128 layers of 2 MiB, an allocation each, every one named, on two
 * streams, under 160 MiB (the link bound: 96 MiB at simgpu's 55 GB/s,
 * 1830 us a step). Allocation order left the first layers resident: each
 * step ran them in one stretch while the window, two copies ahead, let
 * the link idle, 1.17x the bound. The trades spreading the resident
 * layers among the streamed ones keep it busy. */
START_TEST(resident_layers_spread_among_streamed_ones_keep_the_link_busy)
{
    const char *args[] = {"--layers", "128", "--widths", "1024,512", "--no-tables", "--streams",
                          "2", "--steps", "8", "--time", "4", NULL};
    swt_run_t r;
    run_windowed(&r, "SPILLWAY_GPU_BUDGET=160MiB", args);
    double step_ns = step_ns_of(&r);
    double bound_ns = (double)(96 * SWT_MIB) / 55.0;
    ck_assert_msg(step_ns < 1.10 * bound_ns, "steps 5-8: %.0f ns, %.3fx the bound: %s", step_ns,
                  step_ns / bound_ns, swt_describe(&r));
}
END_TEST

/* mlp's prefill in the H200's proportions: 20 layers of 16 MiB under 128
 * MiB, a GEMM at batch 16 taking a third of its layer's copy (1.3
 * TFLOPS), steps 4-7 timed, in chunks of `chunk`; with `train`, each
 * weight updated in place after the forward pass. */
static void run_prefill(swt_run_t *r, const char *chunk, bool train)
{
    char chunk_env[64];
    snprintf(chunk_env, sizeof chunk_env, "SPILLWAY_CHUNK=%s", chunk);
    const char *argv[] = {swt_path("SWT_MLP"), "--layers", "20", "--width", "2048", "--batch",
                          "16", "--steps", "7", "--time", "3", train ? "--train" : NULL, NULL};
    const char *env[] = {"SIMGPU_MEM=1GiB", "SIMGPU_TFLOPS=1.3", "SPILLWAY_GPU_BUDGET=128MiB",
                         chunk_env, "SPILLWAY_REWRITE=1", "SPILLWAY_LOG=debug", NULL};
    swt_run(r, true, env, argv);
    swt_assert_match(r);
}

/* A prefill whose layers are bigger than a chunk: SPILLWAY_CHUNK=4MiB
 * cuts each in four. Allocation order left the first six layers
 * resident; their compute ran as one stretch the link sat out, 1.29x the
 * bound (192 MiB at 55 GB/s). Spread whole, four chunks a trade, the
 * resident layers' compute runs beside copies: 1.17x, the floor of a
 * window of two layers (14 copied where 12 must be). */
START_TEST(resident_tensors_of_several_chunks_spread_whole)
{
    swt_run_t r;
    run_prefill(&r, "4MiB", false);
    ck_assert_msg(swt_file_has(r.err, "and 3 more resident instead of") &&
                      swt_file_has(r.err, "spread among the streamed"),
                  "no trade of four chunks: %s", swt_describe(&r));
    double step_ns = step_ns_of(&r);
    double bound_ns = (double)(192 * SWT_MIB) / 55.0;
    ck_assert_msg(step_ns < 1.22 * bound_ns, "steps 4-7: %.0f ns, %.3fx the bound: %s", step_ns,
                  step_ns / bound_ns, swt_describe(&r));
}
END_TEST

/* The same prefill training, a layer one 16 MiB chunk: each weight is
 * visited twice a step, the period learned is about half a step, and the
 * chunks' own loops straddle it (27 to 33 launches about 29 to 32).
 * Spreading by it, trades undid each other every loop, twelve in seven
 * steps: 16.0 ms a step against 9.7 without them. A ragged loop is not
 * spread. */
START_TEST(a_loop_its_chunks_straddle_is_not_spread)
{
    swt_run_t r;
    run_prefill(&r, "16MiB", true);
    ck_assert_msg(!swt_file_has(r.err, "spread among the streamed"), "spread: %s",
                  swt_describe(&r));
    double step_ns = step_ns_of(&r);
    ck_assert_msg(step_ns < 12e6, "steps 4-7: %.0f ns: %s", step_ns, swt_describe(&r));
}
END_TEST

/* 400 layers of 1 MiB in 20 MiB segments, every one named, on two
 * streams, under 120 MiB: the window holds one 20 MiB copy, so each copy
 * waits for the readers of the one before, and its twenty launches each
 * pay a way home after it. Served, a step took 2.54x the link bound; the
 * copy and the ways home weighed together against reading in place, the
 * window is given back and steps 5-8 stream nothing (1.41x). */
START_TEST(a_window_of_one_copy_weighs_the_copy_and_its_ways_home_together)
{
    swt_run_t four, eight;
    run_many(&four, "400", "512", "20", "2", "SPILLWAY_GPU_BUDGET=120MiB", "4");
    run_many(&eight, "400", "512", "20", "2", "SPILLWAY_GPU_BUDGET=120MiB", "8");
    ck_assert_msg(swt_file_has(four.err, "streaming window released"), "%s",
                  swt_describe(&four));
    uint64_t streamed = swt_sw(&eight, "bytes_streamed") - swt_sw(&four, "bytes_streamed");
    ck_assert_msg(streamed == 0, "steps 5-8 streamed %llu bytes: %s", (unsigned long long)streamed,
                  swt_describe(&eight));
}
END_TEST

/* The same segments at batch 129: the GEMM reads each weight twice (once
 * per 128-row tile), so a launch in place takes longer than the copy, and
 * every step keeps streaming. */
START_TEST(a_segment_its_kernel_re_reads_stays_copied)
{
    swt_run_t four, six;
    run_slack(&four, "129", "4");
    run_slack(&six, "129", "6");
    ck_assert_msg(!swt_file_has(six.err, "is read in place: a visit") &&
                      !swt_file_has(six.err, "streaming window released"),
                  "%s", swt_describe(&six));
    ck_assert_msg(swt_sw(&six, "ranges_read_in_place") == 0, "%s", swt_describe(&six));
    uint64_t streamed = swt_sw(&six, "bytes_streamed") - swt_sw(&four, "bytes_streamed");
    ck_assert_msg(streamed >= 2 * 8 * 2 * SWT_MIB, "steps 5-6 streamed %llu bytes: %s",
                  (unsigned long long)streamed, swt_describe(&six));
}
END_TEST

/* The same run with the first eight timings failing (cuEventElapsedTime
 * answers an error): each is a sample lost, never a sample of 0 ms, which
 * would read the range in place on no evidence. The others still decide,
 * and the weights stay right. */
START_TEST(a_timing_that_fails_is_a_sample_lost)
{
    const char *argv[] = {swt_path("SWT_MLP"), "--layers", "32", "--width", "600", "--segments",
                          "2", "--steps", "8", NULL};
    const char *env[] = {"SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=32MiB", "SPILLWAY_REWRITE=1",
                         "SPILLWAY_LOG=info",
                         "SIMGPU_FAIL=cuEventElapsedTime:1,cuEventElapsedTime:2,"
                         "cuEventElapsedTime:3,cuEventElapsedTime:4,cuEventElapsedTime:5,"
                         "cuEventElapsedTime:6,cuEventElapsedTime:7,cuEventElapsedTime:8",
                         NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_match(&r);
    ck_assert_msg(swt_file_has(r.err, "is read in place: a visit reads it there in 30.8 us"),
                  "%s", swt_describe(&r));
    ck_assert_msg(!swt_file_has(r.err, "there in 0.0 us"), "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "dev0_device_bytes_peak") <= 32 * SWT_MIB, "%s", swt_describe(&r));
}
END_TEST

/* 16 such layers under 20 MiB at batch 129: the window (4 MiB) copies
 * about four times its size a loop, under the five that repay its room
 * where kernels read in place at the link's rate, and was given back
 * (441.9 us a step over steps 4-7 on simgpu). Its ranges take about twice
 * as long read in place as copied, so each copy saves a copy's time and
 * the bar is lower: the window is kept, and streams every step (339.9 us). */
START_TEST(a_window_whose_kernels_re_read_in_place_repays_its_room_sooner)
{
    const char *four_args[] = {"--layers", "16", "--width", "600", "--segments", "2",
                               "--batch", "129", "--steps", "4", NULL};
    const char *six_args[] = {"--layers", "16", "--width", "600", "--segments", "2",
                              "--batch", "129", "--steps", "6", NULL};
    swt_run_t four, six;
    run_windowed(&four, "SPILLWAY_GPU_BUDGET=20MiB", four_args);
    run_windowed(&six, "SPILLWAY_GPU_BUDGET=20MiB", six_args);
    ck_assert_msg(swt_file_has(six.err, "it repays its room from") &&
                      !swt_file_has(six.err, "streaming window released"),
                  "%s", swt_describe(&six));
    uint64_t streamed = swt_sw(&six, "bytes_streamed") - swt_sw(&four, "bytes_streamed");
    ck_assert_msg(streamed >= 2 * 4 * 2 * SWT_MIB, "steps 5-6 streamed %llu bytes: %s",
                  (unsigned long long)streamed, swt_describe(&six));
}
END_TEST

Suite *policies_suite(void)
{
    Suite *s = suite_create("policies");
    TCase *tc = tcase_create("policy");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, lru_runs_model_larger_than_device);
    tcase_add_test(tc, lru_keeps_model_within_budget_under_jitter);
    tcase_add_test(tc, learned_runs_experts_larger_than_device);
    tcase_add_test(tc, learned_keeps_experts_within_budget_under_jitter);
    tcase_add_test(tc, lru_runs_experts_larger_than_device_under_jitter);
    tcase_add_test(tc, learned_without_prefetch_keeps_experts_within_budget);
    tcase_add_test(tc, lru_promotes_experts_back_under_a_budget);
    tcase_add_test(tc, learned_demotes_unchanged_chunks_by_a_remap);
    tcase_add_test(tc, learned_keeps_the_first_promotions_host_copy);
    tcase_add_test(tc, lru_copies_every_demotion);
    tcase_add_test(tc, learned_keeps_layers_behind_device_pointers_resident);
    tcase_add_test(tc, lru_moves_reuse_released_handles);
    tcase_add_test(tc, streamed_weights_written_by_kernels_and_copies_stay_right);
    tcase_add_test(tc, streamed_weights_stay_right_under_jitter);
    tcase_add_test(tc, learned_keeps_a_workspace_every_launch_writes_resident);
    tcase_add_test(tc, learned_promotes_a_workspace_a_graph_writes_at_its_replay);
    tcase_add_test(tc, layers_new_to_the_host_stream_ahead_from_their_first_use);
    tcase_add_test(tc, a_segment_whose_layers_alternate_with_others_is_copied_ahead);
    tcase_add_test(tc, a_table_only_layer_of_two_chunks_is_adopted_whole);
    tcase_add_test(tc, a_budget_too_small_for_two_chunks_cuts_them_finer);
    tcase_add_test(tc, no_chunk_is_bigger_than_an_eighth_of_the_budget);
    tcase_add_test(tc, a_segments_slack_is_a_chunk_of_its_own_under_a_gpus_budget);
    tcase_add_test(tc, a_given_budgets_window_is_fitted_when_it_binds);
    tcase_add_test(tc, the_window_never_holds_a_device_over_its_budget);
    tcase_add_test(tc, no_window_is_made_where_no_allocation_fits_it);
    tcase_add_test(tc, a_window_copying_less_than_five_times_its_size_a_loop_is_given_back);
    tcase_add_test(tc, a_window_fitted_to_two_copies_streams_nothing_bigger_than_one);
    tcase_add_test(tc, a_window_is_trimmed_so_that_the_resident_set_has_whole_granules);
    tcase_add_test(tc, the_loop_after_the_window_is_made_anew_copies_every_range_ahead);
    tcase_add_test(tc, a_window_whose_launches_are_shorter_than_a_part_of_a_copy_is_made_one_and_a_lead);
    tcase_add_test(tc, a_window_smaller_than_two_copies_copies_ahead);
    tcase_add_test(tc, a_window_whose_launches_are_short_beside_a_copy_is_made_one_copy);
    tcase_add_test(tc, a_load_pass_before_the_loop_does_not_cost_the_window);
    tcase_add_test(tc, a_load_pass_before_short_loops_does_not_cost_the_window);
    tcase_add_test(tc, a_range_partly_on_the_device_is_copied_whole_and_stays_right);
    tcase_add_test(tc, a_window_in_a_program_with_no_loop_is_given_back);
    tcase_add_test(tc, layers_the_granularity_rounds_up_keep_full_chunks_resident);
    tcase_add_test(tc, a_window_bigger_than_two_of_its_copies_is_made_anew_at_that_size);
    tcase_add_test(tc, a_window_is_judged_by_what_it_copies_in_one_loop);
    tcase_add_test(tc, a_capture_is_served_by_a_window_of_one_range);
    tcase_add_test(tc, a_capture_with_no_range_slower_in_place_reads_in_place);
    tcase_add_test(tc, a_segment_read_faster_in_place_than_copied_is_read_in_place);
    tcase_add_test(tc, a_segment_its_kernel_re_reads_stays_copied);
    tcase_add_test(tc, a_timing_that_fails_is_a_sample_lost);
    tcase_add_test(tc, a_window_whose_kernels_re_read_in_place_repays_its_room_sooner);
    tcase_add_test(tc, segments_learn_the_loops_period);
    tcase_add_test(tc, segments_a_table_also_reaches_are_read_in_place_and_the_window_given_back);
    tcase_add_test(tc, segments_their_launches_span_whole_are_streamed);
    tcase_add_test(tc, segments_under_a_graph_are_read_in_place_not_copied_per_launch);
    tcase_add_test(tc, replays_of_a_graph_teach_the_learner_its_loop);
    tcase_add_test(tc, replays_of_a_graph_keep_residency_where_it_reads_at_home);
    tcase_add_test(tc, segments_in_a_cyclic_scan_trade_no_places_once_learned);
    tcase_add_test(tc, segments_a_training_step_writes_are_read_in_place);
    suite_add_tcase(s, tc);
    /* Segments of many tensors, and what a served launch costs after it. */
    TCase *many = tcase_create("many");
    tcase_set_timeout(many, 120);
    tcase_add_test(many, segments_of_many_named_tensors_are_streamed);
    tcase_add_test(many, a_window_of_one_copy_weighs_the_copy_and_its_ways_home_together);
    tcase_add_test(many, resident_layers_spread_among_streamed_ones_keep_the_link_busy);
    tcase_add_test(many, resident_tensors_of_several_chunks_spread_whole);
    tcase_add_test(many, a_loop_its_chunks_straddle_is_not_spread);
    suite_add_tcase(s, many);
    return s;
}
