/*
 * The api layer, the top: the wrappers hooks.def generates (with the
 * macros their calls are written in), the runtime wrappers, start-up and
 * graph nodes given arguments after a capture.
 */
#ifndef SW_API_H
#define SW_API_H

#include "residency.h"

/* The real function called with the gate held shared, as every hooked
 * call that issues device work is (driver.h, "the gate"). SW_GATED_IO: a
 * copy or memset on stream st that reads [s, +sn) and writes [d, +dn)
 * (0 lengths: none), whose window copies of those ranges go home first
 * (window_touch.c); SW_GATED_IO_ALL: ranges unknown, all go home. Each
 * notes its stream, as a launch does: a fill must wait for every stream
 * that may have written home, however it was made (streams.c). */
#define SW_GATED_IO(sym, args, st, d, dn, s, sn)         \
    ({                                                   \
        bool gated_ = sw_gate_rd();                      \
        if (gated_)                                      \
            sw_streams_note(st);                         \
        if (gated_ && sw_window_busy()) {                \
            sw_window_touch((d), (dn), (st));            \
            sw_window_touch((s), (sn), (st));            \
        }                                                \
        CUresult r_ = SW_REAL(sym) ? SW_REAL(sym) args   \
                                   : CUDA_ERROR_NOT_FOUND; \
        if (gated_)                                      \
            sw_gate_unrd();                              \
        r_;                                              \
    })
#define SW_GATED_IO_ALL(sym, args, st)                   \
    ({                                                   \
        bool gated_ = sw_gate_rd();                      \
        if (gated_) {                                    \
            sw_streams_note(st);                         \
            sw_window_flush(st);                         \
        }                                                \
        CUresult r_ = SW_REAL(sym) ? SW_REAL(sym) args   \
                                   : CUDA_ERROR_NOT_FOUND; \
        if (gated_)                                      \
            sw_gate_unrd();                              \
        r_;                                              \
    })
/* The same for cuStreamBatchMemOp: the words its n operations reach. */
#define SW_GATED_MEMOPS(sym, args, st, n, ops)           \
    ({                                                   \
        bool gated_ = sw_gate_rd();                      \
        if (gated_)                                      \
            sw_streams_note(st);                         \
        if (gated_ && sw_window_busy())                  \
            sw_window_touch_memops((n), (ops), (st));    \
        CUresult r_ = SW_REAL(sym) ? SW_REAL(sym) args   \
                                   : CUDA_ERROR_NOT_FOUND; \
        if (gated_)                                      \
            sw_gate_unrd();                              \
        r_;                                              \
    })
#define SW_GATED(sym, args)                              \
    ({                                                   \
        bool gated_ = sw_gate_rd();                      \
        CUresult r_ = SW_REAL(sym) ? SW_REAL(sym) args   \
                                   : CUDA_ERROR_NOT_FOUND; \
        if (gated_)                                      \
            sw_gate_unrd();                              \
        r_;                                              \
    })

/* The real function when `check` says CUDA_SUCCESS, else check's answer
 * (graphnodes.c). */
#define SW_NODE_CHECKED(check, sym, args)                            \
    ({                                                               \
        CUresult c_ = (check);                                       \
        c_ == CUDA_SUCCESS ? SW_CALL(sym, args) : c_;                \
    })
/* sw_graph_kernel_check for kernel node parameters p (NULL: the driver's
 * answer), whose CUkernel is `kern` (NULL in the first version). */
#define SW_KERNEL_NODE(call, p, was, kern)                                         \
    ((p) ? sw_graph_kernel_check(#call, (p)->func, (kern),                         \
                                 (p)->kernelParams, (p)->extra, (was))             \
         : CUDA_SUCCESS)

/* A capture begins with writers excluded, so that no move that checked
 * sw_capturing() under the exclusive gate can synchronize inside it. */
#define SW_CAPTURE_BEGIN(sym, args)                                     \
    ({                                                                  \
        sw_capture_prepare(hStream);                                    \
        sw_gate_lock_writers();                                         \
        CUresult r_ = SW_REAL(sym) ? SW_REAL(sym) args : CUDA_ERROR_NOT_FOUND; \
        sw_capture_begun(r_);                                           \
        sw_record_begun(r_);                                            \
        sw_window_captured(hStream, r_);                                \
        sw_gate_unlock_writers();                                       \
        r_;                                                             \
    })
/* ---- hooks.c: the wrappers, and routes to them ---- */
/* Swaps a real driver pointer for spillway's wrapper of exactly that
 * variant; other pointers are returned unchanged. */
void *sw_route(void *real_fn);
CUresult sw_route_result(CUresult r, void **pfn);

/* ---- init.c ---- */
CUresult sw_on_init(unsigned int flags);
/* Started once after the driver's cuInit succeeded: logging, stats. */
void sw_start(void);

/* ---- graphnodes.c: kernel nodes given arguments after a capture ---- */
/* CUDA_SUCCESS when a kernel node's new arguments (func, or kern when
 * func is NULL; kernelParams or extra) hold no streaming-window address
 * that node `was` (NULL: a new node) does not hold already; else
 * CUDA_ERROR_INVALID_VALUE, said in the log naming `call`. */
CUresult sw_graph_kernel_check(const char *call, CUfunction func, CUkernel kern, void **params,
                               void **extra, CUgraphNode was);
/* The same for a generic node's parameters; other node types pass. */
CUresult sw_graph_node_check(const char *call, const CUgraphNodeParams *p, CUgraphNode was);

/* ---- runtime.c: the shared CUDA runtime ---- */
/* cuMemGetInfo, and what the runtime's cudaMemGetInfo adds: the host
 * budget too under SPILLWAY_MEMINFO=virtual, once per query. */
CUresult sw_mem_get_info(size_t *free, size_t *total);
void sw_meminfo_adjust(size_t *free, size_t *total);
enum { SW_RT_LEGACY, SW_RT_PTSZ };
/* The address an exported runtime wrapper returns to: the code that called
 * it, whose own runtime is the one to forward to. */
#define SW_CALLER __builtin_return_address(0)
cudaError_t sw_rt_malloc(const void *caller, void **p, size_t size);
cudaError_t sw_rt_free(const void *caller, void *p);
cudaError_t sw_rt_mem_get_info(const void *caller, size_t *free, size_t *total);
cudaError_t sw_rt_launch(const void *caller, int variant, const void *func, dim3 grid, dim3 block,
                         void **args, size_t shmem, cudaStream_t stream);
cudaError_t sw_rt_launch_ex(const void *caller, int variant, const cudaLaunchConfig_t *config,
                            const void *func, void **args);

#endif
