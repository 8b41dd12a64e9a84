/*
 * fork. CUDA does not survive fork: the driver's threads and contexts stay
 * in the parent, and a child that calls CUDA after its parent initialized
 * it gets the driver's error (CUDA_ERROR_NOT_INITIALIZED; simgpu models
 * this). Everything spillway knows about the parent's memory (the table,
 * the window, the stats file, the exit report) is the parent's too: the
 * child must neither act on it nor answer from it.
 *
 *   prepare  takes the gate exclusively (driver.c): no other thread is then
 *            half-way through a move or a change of the table, and none
 *            holds the writer mutex, so the child inherits neither. Then
 *            stats.c's locks, in that order: a writer holding the gate may
 *            be waiting for stats.c's batch lock, never the other way.
 *   parent   releases them, in the reverse order.
 *   child    releases them (the forking thread owns them in the child
 *            too); stats.c stops mirroring into the parent's stats file;
 *            then, if the parent had tracked memory, the child forgets it
 *            (sw_alloc_fork_child): nothing counts as tracked and every
 *            allocation passes through, so each call reaches the driver and
 *            the child gets the driver's own answer, promptly.
 *
 * The other locks need no handler: layouts.c's, marks.c's, promote.c's,
 * remap.c's, replay.c's and the TMA descriptor table's (tensormap.c) are
 * taken only after the driver answered a call with success, which a child
 * whose parent used CUDA never gets. The exit report is the parent's: only the
 * process that started spillway writes it (stats.c).
 * A child of a parent that never initialized CUDA is an ordinary CUDA
 * process, and spillway works in it as in any.
 *
 * Registered at load time (pthread_atfork, in the constructor), so a fork
 * at any point after that is covered.
 */
#include "api.h"

static void prepare(void)
{
    sw_gate_wr();
    sw_stats_fork_prepare();
}

static void parent(void)
{
    sw_stats_fork_parent();
    sw_gate_unwr();
}

static void child(void)
{
    sw_stats_fork_child();
    sw_gate_unwr();
    sw_alloc_fork_child();
}

__attribute__((constructor)) static void register_fork_handlers(void)
{
    pthread_atfork(prepare, parent, child);
}
