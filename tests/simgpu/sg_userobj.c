/*
 * User objects: cuUserObjectCreate, cuUserObjectRetain,
 * cuUserObjectRelease, cuGraphRetainUserObject, cuGraphReleaseUserObject.
 *
 * A user object is a reference count and a destructor. The caller and
 * graphs hold references; the destructor runs once, when the count
 * reaches zero. The driver requires CU_USER_OBJECT_NO_DESTRUCTOR_SYNC: no
 * CUDA call waits for a destructor, which runs on a thread of the
 * driver's and may not call CUDA. Here it runs on simgpu's service stream
 * (sg_service), never under the caller's locks; cuCtxSynchronize happens
 * to wait for it.
 *
 * A graph's references go when the graph is destroyed (cuGraphDestroy
 * calls sg_user_objects_graph_gone). Not modelled: an executable graph
 * does not take references of its own at instantiation as the driver's
 * does, so a destructor may run while an exec made from a destroyed graph
 * is still launched.
 */
#include "sg.h"

#include <limits.h>
#include <stdlib.h>

typedef struct {
    void *ptr;
    CUhostFn destroy;
    uint64_t refs;
} uobj_t;

/* The references one graph holds on one object. */
typedef struct held {
    struct held *next;
    CUgraph graph;
    uobj_t *obj;
    unsigned count;
} held_t;

static held_t *helds; /* under g.lock */

static bool count_ok(unsigned count)
{
    return count > 0 && count <= INT_MAX;
}

/* Drops count references; at zero the destructor is queued. g.lock held. */
static void drop(uobj_t *o, uint64_t count)
{
    o->refs -= count;
    if (o->refs > 0)
        return;
    sg_handle_del(o);
    sg_op_t *op = sg_op_new(SG_OP_HOST_FUNC, "user object destructor");
    if (op) { /* else the destructor never runs: a leak, as a failed free */
        op->fn = o->destroy;
        op->user = o->ptr;
        sg_service(op);
    }
    free(o);
}

SG_EXPORT CUresult cuUserObjectCreate(CUuserObject *object_out, void *ptr, CUhostFn destroy,
                                      unsigned int initialRefcount, unsigned int flags)
{
    SG_ENTER(cuUserObjectCreate, API);
    if (!object_out || !destroy || !count_ok(initialRefcount) ||
        flags != CU_USER_OBJECT_NO_DESTRUCTOR_SYNC)
        return CUDA_ERROR_INVALID_VALUE;
    uobj_t *o = malloc(sizeof *o);
    if (!o)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *o = (uobj_t){ptr, destroy, initialRefcount};
    sg_lock();
    sg_handle_add(o, SG_H_USER_OBJECT);
    sg_unlock();
    *object_out = (CUuserObject)o;
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuUserObjectRetain(CUuserObject object, unsigned int count)
{
    SG_ENTER(cuUserObjectRetain, API);
    if (!count_ok(count))
        return CUDA_ERROR_INVALID_VALUE;
    sg_lock();
    bool ok = sg_handle_kind(object) == SG_H_USER_OBJECT;
    if (ok)
        ((uobj_t *)object)->refs += count;
    sg_unlock();
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Releasing references the caller does not hold is undefined in the
 * driver; simgpu refuses it (CUDA_ERROR_INVALID_VALUE) rather than run a
 * destructor early. */
SG_EXPORT CUresult cuUserObjectRelease(CUuserObject object, unsigned int count)
{
    SG_ENTER(cuUserObjectRelease, API);
    if (!count_ok(count))
        return CUDA_ERROR_INVALID_VALUE;
    sg_lock();
    uobj_t *o = (uobj_t *)object;
    bool ok = sg_handle_kind(object) == SG_H_USER_OBJECT && o->refs >= count;
    if (ok)
        drop(o, count);
    sg_unlock();
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static held_t *find_held(CUgraph graph, const uobj_t *o)
{
    for (held_t *h = helds; h; h = h->next)
        if (h->graph == graph && h->obj == o)
            return h;
    return NULL;
}

static void unlink_held(held_t *h)
{
    for (held_t **p = &helds; *p; p = &(*p)->next)
        if (*p == h) {
            *p = h->next;
            break;
        }
    free(h);
}

/* CU_GRAPH_USER_OBJECT_MOVE moves count of the caller's references to the
 * graph instead of making new ones. */
SG_EXPORT CUresult cuGraphRetainUserObject(CUgraph graph, CUuserObject object, unsigned int count,
                                           unsigned int flags)
{
    SG_ENTER(cuGraphRetainUserObject, API);
    if (!count_ok(count) || (flags & ~(unsigned)CU_GRAPH_USER_OBJECT_MOVE))
        return CUDA_ERROR_INVALID_VALUE;
    sg_lock();
    uobj_t *o = (uobj_t *)object;
    CUresult r = CUDA_SUCCESS;
    held_t *h = NULL;
    if (sg_handle_kind(graph) != SG_H_GRAPH || sg_handle_kind(object) != SG_H_USER_OBJECT ||
        ((flags & CU_GRAPH_USER_OBJECT_MOVE) && o->refs < count))
        r = CUDA_ERROR_INVALID_VALUE;
    else if (!(h = find_held(graph, o)) && !(h = calloc(1, sizeof *h)))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS) {
        if (!h->obj) {
            *h = (held_t){helds, graph, o, 0};
            helds = h;
        }
        h->count += count;
        if (!(flags & CU_GRAPH_USER_OBJECT_MOVE))
            o->refs += count;
    }
    sg_unlock();
    return r;
}

SG_EXPORT CUresult cuGraphReleaseUserObject(CUgraph graph, CUuserObject object, unsigned int count)
{
    SG_ENTER(cuGraphReleaseUserObject, API);
    if (!count_ok(count))
        return CUDA_ERROR_INVALID_VALUE;
    sg_lock();
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    held_t *h;
    if (sg_handle_kind(graph) == SG_H_GRAPH && sg_handle_kind(object) == SG_H_USER_OBJECT &&
        (h = find_held(graph, (uobj_t *)object)) && h->count >= count) {
        h->count -= count;
        drop((uobj_t *)object, count);
        if (h->count == 0)
            unlink_held(h);
        r = CUDA_SUCCESS;
    }
    sg_unlock();
    return r;
}

void sg_user_objects_graph_gone(CUgraph hg)
{
    for (held_t *h = helds, *next; h; h = next) {
        next = h->next;
        if (h->graph == hg) {
            drop(h->obj, h->count);
            unlink_held(h);
        }
    }
}
