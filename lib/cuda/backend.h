// `--device cuda` for the training and evaluation loops: an nn::ModelBackend
// whose model (cuda/model.h), gradients and AdamW moments live on a CUDA
// device. Plain C++ (no CUDA header), so app/ can include it; defined only in
// CUDA builds (routelab_cuda).
// Under mpirun each rank takes device rank % device_count, and
// mean_grads_over_ranks() all-reduces the gradients on the devices with NCCL
// (ncclAvg) when routelab was built with it (ROUTELAB_WITH_NCCL), otherwise
// downloads them, takes dist::mean_over_ranks (the CPU's rank-order double
// sum) and uploads the mean. NCCL sums in its own (ring or tree) order in
// float: ranks agree with each other, and with the single-process mean to
// float rounding of an n-term sum (relative ~n 6e-8).
#pragma once

#include "nn/backend.h"

namespace routelab::cuda {

// Builds CUDA backends; `tf32` selects TF32 tensor-core matmuls.
nn::BackendFactory cuda_backend_factory(bool tf32);

}  // namespace routelab::cuda
