// The optimiser's arithmetic on a CUDA device, over device pointers: one
// AdamW update of a tensor (nn::AdamW::update's per-element formula) and the
// global gradient norm for clipping. The loop over tensors, the bias
// correction and the learning rate are the caller's, as on the CPU
// (cuda/backend.cpp).
#pragma once

#include <cstdint>

namespace routelab::cuda {

// The constants of one update, rounded to float as nn::AdamW rounds them.
struct AdamWStep {
  float beta1, beta2, eps;
  float corr1, corr2;  // 1 - beta^t
  float lr;
  float decay;       // weight decay of this tensor (0 if not decayed)
  float grad_scale;  // clipping
};

// g = grads * grad_scale; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// params -= lr (m / corr1 / (sqrt(v / corr2) + eps) + decay params).
// Agrees with the CPU to float rounding (either side may fuse a multiply-add).
void adamw_update(float* params, float* m, float* v, const float* grads, int64_t n, const AdamWStep& s);

// sqrt(sum g^2) over n floats, in double, in one fixed order whatever the
// device: chunks of kNormChunk floats, each summed by kNormThreads threads
// (thread k takes elements k, k + kNormThreads, ... of the chunk) and a fixed
// tree, then the chunk sums added on the host in chunk order. Not the CPU's
// serial order, so the two agree to double rounding (~1e-16 relative).
constexpr int kNormThreads = 256;
constexpr int64_t kNormChunk = 16 * kNormThreads;
double global_norm(const float* g, int64_t n);

}  // namespace routelab::cuda
