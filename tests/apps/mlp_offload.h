/*
 * mlp_offload.h: mlp --offload uva|prefetch (mlp_offload.c), the two ways
 * vLLM keeps a model bigger than the GPU, written by hand, so that
 * tools/bench-offload can run them beside spillway on the same program.
 *
 * mlp_gpu.c calls these instead of allocating and uploading the weights
 * itself, and around each layer's kernels.  Each int-returning call gives
 * an MLP_EXIT_* status and, on a CUDA error, has already printed
 * "mlp: CUDA error NAME in CALL (...)".  A NULL state (no --offload) makes
 * every hook a no-op.
 */
#ifndef SG_APPS_MLP_OFFLOAD_H
#define SG_APPS_MLP_OFFLOAD_H

#include "drv.h"
#include "mlp.h"

typedef struct mlp_offload mlp_offload_t;

/* Allocate every layer's weights: layers below o->resident by cuMemAlloc,
 * the others in pinned host memory (and, for prefetch, the side stream,
 * its events and the two device buffers).  weight[l] gets the address
 * layer l's kernels read.  d must have the mapped-host entries
 * (sg_drv_link_host() or sg_drv_load_host()) and outlive the state.  On
 * failure *out may still hold a partial state for mlp_offload_close(). */
int mlp_offload_open(mlp_offload_t **out, const sg_drv_t *d, const mlp_opts_t *o,
                     CUdeviceptr *weight);
/* Put every layer's weights in place: resident ones by cuMemcpyHtoD, the
 * others by the CPU into their pinned memory. */
int mlp_offload_upload(mlp_offload_t *f, const float *weights);
/* At the start of a step's kernels: prefetch starts copying the first
 * offloaded layer, so that it overlaps the resident layers. */
int mlp_offload_step_start(mlp_offload_t *f);
/* Before layer l's kernels on stream s: prefetch starts copying the next
 * offloaded layer and makes s wait until layer l's copy is in. */
int mlp_offload_before_layer(mlp_offload_t *f, uint32_t l, CUstream s);
/* After layer l's kernels on stream s: prefetch marks its buffer free. */
int mlp_offload_after_layer(mlp_offload_t *f, uint32_t l, CUstream s);
/* Free everything; NULL is fine; errors are ignored. */
void mlp_offload_close(mlp_offload_t *f);

/* mlp_gpu.c's, shared: prints "mlp: CUDA error NAME in CALL (what)" for
 * rc, the driver d's name for it, and returns MLP_EXIT_CUDA; and bytes in
 * MiB, for messages. */
__attribute__((format(printf, 4, 5)))
int mlp_cuda_fail(const sg_drv_t *d, CUresult rc, const char *call, const char *fmt, ...);
double mlp_mib(size_t bytes);

#endif
