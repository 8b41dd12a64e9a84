/*
 * TMA descriptors spillway saw made: their exact 128 bytes -> the global
 * address they were made for (sw.h says why exact bytes, and the clock).
 *
 * The entries are one array, allocated whole, filled in order and then
 * recycled in place; each hash bucket chains its entries by index. The
 * array's slots [0, count) are always in use, so the clock hand walks
 * them all once the table is full.
 */
#include "../sw.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NONE (-1)

typedef struct {
    unsigned char key[SW_TMAP_BYTES];
    uint64_t hash;
    sw_tmap_val_t v;
    int32_t next;    /* the next entry of its bucket, NONE at the end */
    uint8_t ref;     /* looked up since the clock hand last passed */
} entry_t;

struct sw_tmap {
    pthread_rwlock_t lock;
    entry_t *e;      /* max entries; [0, count) in use */
    int32_t *bucket; /* nbuckets heads */
    uint32_t max, nbuckets, hand;
    size_t count;    /* read without the lock by sw_tmap_count */
};

/* Every byte counts: two descriptors that differ anywhere (an address
 * scrambled into any field) hash apart. */
static uint64_t hash_of(const void *desc)
{
    const unsigned char *p = desc;
    uint64_t h = 0x9e3779b97f4a7c15ull, w;
    for (unsigned i = 0; i < SW_TMAP_BYTES; i += 8) {
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h;
}

sw_tmap_t *sw_tmap_new(size_t max)
{
    if (max < 1 || max > (1u << 24))
        return NULL;
    sw_tmap_t *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->max = (uint32_t)max;
    t->nbuckets = 1;
    while (t->nbuckets < 2 * t->max) /* chains of about half an entry */
        t->nbuckets *= 2;
    t->e = calloc(max, sizeof *t->e);
    t->bucket = malloc(t->nbuckets * sizeof *t->bucket);
    if (!t->e || !t->bucket || pthread_rwlock_init(&t->lock, NULL) != 0) {
        free(t->e);
        free(t->bucket);
        free(t);
        return NULL;
    }
    for (uint32_t b = 0; b < t->nbuckets; b++)
        t->bucket[b] = NONE;
    return t;
}

void sw_tmap_free(sw_tmap_t *t)
{
    if (!t)
        return;
    pthread_rwlock_destroy(&t->lock);
    free(t->e);
    free(t->bucket);
    free(t);
}

/* The entry holding exactly desc (of hash h), or NULL. Lock held. */
static entry_t *find(const sw_tmap_t *t, const void *desc, uint64_t h)
{
    for (int32_t i = t->bucket[h & (t->nbuckets - 1)]; i != NONE; i = t->e[i].next)
        if (t->e[i].hash == h && memcmp(t->e[i].key, desc, SW_TMAP_BYTES) == 0)
            return &t->e[i];
    return NULL;
}

/* Takes entry i out of its bucket's chain. Lock held exclusively. */
static void unlink_entry(sw_tmap_t *t, int32_t i)
{
    int32_t *link = &t->bucket[t->e[i].hash & (t->nbuckets - 1)];
    while (*link != i)
        link = &t->e[*link].next;
    *link = t->e[i].next;
}

/* The clock: passes over entries looked up since its last pass (clearing
 * their mark), and returns the first that was not. Ends within one turn
 * and a step, since it clears as it goes. Table full; lock held
 * exclusively. */
static int32_t victim(sw_tmap_t *t)
{
    while (t->e[t->hand].ref) {
        t->e[t->hand].ref = 0;
        t->hand = (t->hand + 1) % t->max;
    }
    int32_t v = (int32_t)t->hand;
    t->hand = (t->hand + 1) % t->max;
    return v;
}

void sw_tmap_insert(sw_tmap_t *t, const void *desc, sw_tmap_val_t v)
{
    uint64_t h = hash_of(desc);
    pthread_rwlock_wrlock(&t->lock);
    entry_t *e = find(t, desc, h);
    if (e) {
        e->v = v;
        e->ref = 1;
        pthread_rwlock_unlock(&t->lock);
        return;
    }
    int32_t i;
    if (t->count < t->max) {
        i = (int32_t)t->count;
        __atomic_store_n(&t->count, t->count + 1, __ATOMIC_RELEASE);
    } else {
        i = victim(t);
        unlink_entry(t, i);
    }
    e = &t->e[i];
    memcpy(e->key, desc, SW_TMAP_BYTES);
    e->hash = h;
    e->v = v;
    /* Unmarked: one that is never looked up goes at the hand's next pass. */
    e->ref = 0;
    int32_t *head = &t->bucket[h & (t->nbuckets - 1)];
    e->next = *head;
    *head = i;
    pthread_rwlock_unlock(&t->lock);
}

/* A hit marks the entry for the clock. Many lookups share the lock, so
 * the mark is an atomic store; the clock reads and clears it only under
 * the exclusive lock. */
static bool lookup_locked(sw_tmap_t *t, const void *desc, sw_tmap_val_t *v)
{
    entry_t *e = find(t, desc, hash_of(desc));
    if (!e)
        return false;
    if (!__atomic_load_n(&e->ref, __ATOMIC_RELAXED))
        __atomic_store_n(&e->ref, 1, __ATOMIC_RELAXED);
    *v = e->v;
    return true;
}

bool sw_tmap_lookup(sw_tmap_t *t, const void *desc, sw_tmap_val_t *v)
{
    if (!sw_tmap_count(t))
        return false;
    pthread_rwlock_rdlock(&t->lock);
    bool found = lookup_locked(t, desc, v);
    pthread_rwlock_unlock(&t->lock);
    return found;
}

size_t sw_tmap_count(const sw_tmap_t *t)
{
    return t ? __atomic_load_n(&t->count, __ATOMIC_ACQUIRE) : 0;
}

typedef struct {
    sw_tmap_t *t;
    sw_tmap_at_t *out;
    size_t n, max;
} locate_t;

static void locate_one(uint32_t index, uint32_t offset, const void *window, void *arg)
{
    locate_t *c = arg;
    sw_tmap_val_t v;
    if (c->n < c->max && lookup_locked(c->t, window, &v))
        c->out[c->n++] = (sw_tmap_at_t){.index = index, .offset = offset, .v = v};
}

size_t sw_tmap_locate(sw_tmap_t *t, const sw_layout_t *l, void *const *params, const void *buf,
                      size_t buflen, sw_tmap_at_t *out, size_t max)
{
    /* Most programs never encode a descriptor: no lock, no hashing. */
    if (!sw_tmap_count(t) || !max)
        return 0;
    locate_t c = {.t = t, .out = out, .max = max};
    pthread_rwlock_rdlock(&t->lock);
    sw_scan_descriptors(l, params, buf, buflen, locate_one, &c);
    pthread_rwlock_unlock(&t->lock);
    return c.n;
}

uint64_t sw_tmap_extent(uint32_t rank, const uint64_t *dim, const uint64_t *strides,
                        uint32_t elem_bytes)
{
    if (!elem_bytes || rank < 1 || rank > 5)
        return 0;
    uint64_t total, step;
    if (!dim[0] || __builtin_mul_overflow(dim[0], (uint64_t)elem_bytes, &total))
        return 0;
    for (uint32_t i = 1; i < rank; i++) {
        if (!dim[i] || __builtin_mul_overflow(dim[i] - 1, strides[i - 1], &step) ||
            __builtin_add_overflow(total, step, &total))
            return 0;
    }
    return total;
}
