/*
 * The gate: a reader-writer lock tuned for its use. Readers (every launch,
 * copy and memset while anything is tracked) are many, short and must be
 * cheap; writers (allocation, tracked free, moving chunks, module unload,
 * capture begin) are rare and slow.
 *
 *   reader  readers += 1; no writer?  ──► in (one atomic add, one load)
 *                         writer      ──► readers -= 1, sleep on `writer`
 *   writer  writer_lock; writer = 1; sleep on `readers` until it is 0
 *
 * Both sides use sequentially consistent atomics: each must see the
 * other's announcement (a Dekker-style handshake). Waiting is a short spin
 * and then a futex sleep on the word the other side changes, so a waiter
 * uses no CPU and wakes as soon as the gate opens.
 *
 * Reentrancy: a thread that holds the gate and enters it again (a hook
 * reached from inside another, such as a runtime launch whose lazy module
 * load issues a copy) must not queue behind a waiting writer that waits
 * for it. Each thread counts its own holds: a nested shared or exclusive
 * hold costs nothing; a thread that holds it shared and asks for it
 * exclusively lets its shared holds go, takes it exclusively, and takes
 * them back when it lets go (what it read under the shared hold may have
 * changed: callers look things up again after writing).
 *
 * Writers alone: sw_gate_lock_writers excludes writers but not readers,
 * for a change that must not fall inside an exclusive hold but need not
 * wait for launches to drain (a capture beginning: launch.c).
 *
 * No CUDA here: tests/unit/test_gate.c exercises it with plain threads.
 */
#include "../sw.h"

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_mutex_t writer_lock = PTHREAD_MUTEX_INITIALIZER;
static int writer;   /* a writer holds or is about to hold the gate (futex word) */
static int readers;  /* shared holders, counted once per thread (futex word) */
static int sleepers; /* readers asleep on `writer` */

static __thread int held_rd, held_wr, set_aside;
static __thread int held_writers; /* sw_gate_lock_writers holds, nested */

static void futex_wait(int *word, int val)
{
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(int *word, int n)
{
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

/* A reader that met a writer: sleeps until the writer lets go. */
static void wait_for_writer(void)
{
    for (int spins = 0; spins < 64; spins++) {
        if (!__atomic_load_n(&writer, __ATOMIC_SEQ_CST))
            return;
        sw_cpu_relax();
    }
    __atomic_add_fetch(&sleepers, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&writer, __ATOMIC_SEQ_CST))
        futex_wait(&writer, 1); /* returns at once if writer is already 0 */
    __atomic_sub_fetch(&sleepers, 1, __ATOMIC_SEQ_CST);
}

/* The last reader out wakes a writer that waits for it. */
static void leave_shared(void)
{
    if (__atomic_sub_fetch(&readers, 1, __ATOMIC_SEQ_CST) == 0 &&
        __atomic_load_n(&writer, __ATOMIC_SEQ_CST))
        futex_wake(&readers, 1);
}

static void enter_shared(void)
{
    for (;;) {
        __atomic_add_fetch(&readers, 1, __ATOMIC_SEQ_CST);
        if (!__atomic_load_n(&writer, __ATOMIC_SEQ_CST))
            return;
        leave_shared();
        wait_for_writer();
    }
}

void sw_gate_rd_always(void)
{
    if (held_rd++ || held_wr)
        return;
    enter_shared();
}

void sw_gate_unrd(void)
{
    if (--held_rd || held_wr)
        return;
    leave_shared();
}

void sw_gate_wr(void)
{
    if (held_wr++)
        return;
    /* An upgrade: this thread's own shared hold would keep it waiting on
     * itself. */
    set_aside = held_rd;
    held_rd = 0;
    if (set_aside)
        leave_shared();
    if (!held_writers)
        pthread_mutex_lock(&writer_lock);
    __atomic_store_n(&writer, 1, __ATOMIC_SEQ_CST);
    int spins = 0, n;
    while ((n = __atomic_load_n(&readers, __ATOMIC_SEQ_CST)) != 0) {
        if (spins++ < 64)
            sw_cpu_relax();
        else
            futex_wait(&readers, n); /* returns at once if readers changed */
    }
}

void sw_gate_unwr(void)
{
    if (--held_wr)
        return;
    __atomic_store_n(&writer, 0, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&sleepers, __ATOMIC_SEQ_CST))
        futex_wake(&writer, INT_MAX);
    if (!held_writers)
        pthread_mutex_unlock(&writer_lock);
    if (set_aside) {
        held_rd = set_aside;
        set_aside = 0;
        enter_shared();
    }
}

void sw_gate_lock_writers(void)
{
    if (held_wr || held_writers++)
        return;
    pthread_mutex_lock(&writer_lock);
}

void sw_gate_unlock_writers(void)
{
    if (held_wr || --held_writers)
        return;
    pthread_mutex_unlock(&writer_lock);
}

bool sw_gate_held(void)
{
    return held_rd > 0 || held_wr > 0;
}

bool sw_gate_held_wr(void)
{
    return held_wr > 0;
}
