// CUDA kernels of Householder transport; the contract is in cuda/householder.h,
// the blocked algorithm in cuda/householder_chunks.h and the row algorithm in
// cuda/householder_rows.h (both shared with the host tests), the per-step
// arithmetic in nn/householder_step.h (shared with the CPU).
#include "cuda/householder.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "cuda/attention.h"
#include "cuda/common.cuh"
#include "cuda/householder_chunks.h"
#include "cuda/householder_rows.h"
#include "nn/householder.h"
#include "nn/householder_step.h"

namespace routelab::cuda {

namespace {

// A row vector across one warp: lane l holds coordinates l, l + 32, ...,
// l + 32 (NC - 1); those at or past d are held as 0.
template <int NC>
struct WarpRowOps {
  struct Vec {
    float x[NC];
  };
  int d, lane;

  __device__ int coord(int r) const { return lane + kWarpSize * r; }
  __device__ Vec zero() const {
    Vec v;
#pragma unroll
    for (int r = 0; r < NC; ++r) v.x[r] = 0.0f;
    return v;
  }
  __device__ Vec load(const float* p) const {
    Vec v;
#pragma unroll
    for (int r = 0; r < NC; ++r) v.x[r] = coord(r) < d ? p[coord(r)] : 0.0f;
    return v;
  }
  __device__ void store(float* p, const Vec& v) const {
#pragma unroll
    for (int r = 0; r < NC; ++r)
      if (coord(r) < d) p[coord(r)] = v.x[r];
  }
  __device__ void add_to(float* p, float a, const Vec& v) const {
#pragma unroll
    for (int r = 0; r < NC; ++r)
      if (coord(r) < d) p[coord(r)] += a * v.x[r];
  }
  __device__ float dot(const float* p, const Vec& v) const {
    float s = 0.0f;
#pragma unroll
    for (int r = 0; r < NC; ++r)
      if (coord(r) < d) s += p[coord(r)] * v.x[r];
    return warp_sum(s);
  }
  __device__ float dot(const Vec& a, const Vec& b) const {
    float s = 0.0f;
#pragma unroll
    for (int r = 0; r < NC; ++r) s += a.x[r] * b.x[r];
    return warp_sum(s);
  }
  __device__ void axpy(Vec& v, float a, const float* p) const {
#pragma unroll
    for (int r = 0; r < NC; ++r)
      if (coord(r) < d) v.x[r] += a * p[coord(r)];
  }
  __device__ void set(float* p, float v) const {
    if (lane == 0) *p = v;
  }
  __device__ void add(float* p, float v) const {
    if (lane == 0) *p += v;
  }
  // The row's causal softmax, lanes striding over S[0..n).
  __device__ void softmax(float* S, int64_t n) const {
    float mx = -INFINITY, sum = 0.0f;
    for (int64_t j = lane; j < n; j += kWarpSize) mx = fmaxf(mx, S[j]);
    mx = warp_max(mx);
    for (int64_t j = lane; j < n; j += kWarpSize) sum += (S[j] = expf(S[j] - mx));
    sum = warp_sum(sum);
    for (int64_t j = lane; j < n; j += kWarpSize) S[j] /= sum;
    __syncwarp();
  }
  __device__ void sync() const { __syncwarp(); }
};

// Blocks of kWarpsPerBlock warps; `workers` warps per head, so head bh gets
// blocks bh W / kWarpsPerBlock onward.
constexpr int kWarpsPerBlock = 4;

struct WarpPlace {
  int64_t bh;
  int worker;
};
__device__ inline WarpPlace warp_place(int workers) {
  const int blocks_per_head = workers / kWarpsPerBlock;
  return {int64_t(blockIdx.x) / blocks_per_head, int(blockIdx.x % blocks_per_head) * kWarpsPerBlock + int(threadIdx.y)};
}

template <int NC>
__global__ void householder_forward_kernel(float* o, const float* q, const float* k, const float* v, const float* w,
                                           const float* beta, bool values, AttentionShape s, float* scratch,
                                           int workers) {
  const WarpPlace at = warp_place(workers);
  const WarpRowOps<NC> ops{s.hd, int(threadIdx.x)};
  const HouseholderHead h = householder_head(q, k, v, w, beta, at.bh, s);
  float* S = scratch + (at.bh * workers + at.worker) * householder_work_floats(s.T, s.hd, false);
  for (int64_t i = at.worker; i < s.T; i += workers)
    householder_row_forward(ops, h, i, values, S, o + (at.bh * s.T + i) * s.hd);
}

template <int NC>
__global__ void householder_backward_kernel(float* dq, const float* d_o, const float* q, const float* k,
                                            const float* v, const float* w, const float* beta, bool values,
                                            AttentionShape s, float* scratch, int workers) {
  const WarpPlace at = warp_place(workers);
  const WarpRowOps<NC> ops{s.hd, int(threadIdx.x)};
  const HouseholderHead h = householder_head(q, k, v, w, beta, at.bh, s);
  const std::size_t floats = householder_work_floats(s.T, s.hd, true);
  const HouseholderWork wk = householder_work(scratch + (at.bh * workers + at.worker) * floats, s.T, s.hd, true);
  for (int64_t i = at.worker; i < s.T; i += workers) {
    const int64_t row = (at.bh * s.T + i) * s.hd;
    householder_row_backward(ops, h, i, values, d_o + row, dq + row, wk);
  }
}

// dk, dv, dw (T hd per head) and dbeta (T per head) += the workers' partials,
// one thread per element, in worker order.
__global__ void householder_partials_kernel(float* dk, float* dv, float* dw, float* dbeta, const float* scratch,
                                            AttentionShape s, int workers) {
  const int64_t n = int64_t(s.T) * s.hd, per_head = 3 * n + s.T;
  const std::size_t floats = householder_work_floats(s.T, s.hd, true);
  for (int64_t i = grid_first(); i < int64_t(s.B) * s.H * per_head; i += grid_stride()) {
    const int64_t bh = i / per_head, r = i % per_head;
    const HouseholderWork first = householder_work(const_cast<float*>(scratch) + bh * workers * floats, s.T, s.hd, true);
    if (r < n)
      householder_partials_sum(dk + bh * n, first.dk, workers, floats, std::size_t(r));
    else if (r < 2 * n)
      householder_partials_sum(dv + bh * n, first.dv, workers, floats, std::size_t(r - n));
    else if (r < 3 * n)
      householder_partials_sum(dw + bh * n, first.dw, workers, floats, std::size_t(r - 2 * n));
    else
      householder_partials_sum(dbeta + bh * s.T, first.dbeta, workers, floats, std::size_t(r - 3 * n));
  }
}

// The blocked path: a team is one block of kThreads threads.
struct BlockTeam {
  __device__ int rank() const { return int(threadIdx.x); }
  __device__ int size() const { return int(blockDim.x); }
  __device__ void sync() const { __syncthreads(); }
};

// A launch covers heads bh0, bh0 + 1, ...; its scratch holds theirs only
// (local head g = bh - bh0), so a long sequence's heads go a group at a time.

// Block g M + n builds chunk n of head bh0 + g in `areas` (M chunk_floats a head).
__global__ void __launch_bounds__(kThreads)
    chunk_build_kernel(const float* q, const float* k, const float* v, const float* w, const float* beta, bool values,
                       AttentionShape s, ChunkPlan p, int64_t bh0, float* areas) {
  const int64_t g = blockIdx.x / p.M;
  const int n = int(blockIdx.x % p.M);
  chunk_build(BlockTeam{}, p, householder_head(q, k, v, w, beta, bh0 + g, s), areas + g * p.M * chunk_floats(p), n,
              values);
}

// Block g workers + worker runs query chunks worker, worker + workers, ...
// of head bh0 + g.
__global__ void __launch_bounds__(kThreads)
    chunk_forward_kernel(float* o, const float* q, const float* k, const float* v, const float* w, const float* beta,
                         const float* cum, bool values, AttentionShape s, ChunkPlan p, int64_t bh0, float* areas,
                         float* work, int workers) {
  const int64_t g = blockIdx.x / workers, bh = bh0 + g;
  const int worker = int(blockIdx.x % workers);
  const std::size_t floats = chunk_work_floats(p, false);
  const ChunkWork wk = chunk_work(p, work + (g * workers + worker) * floats, false);
  const HouseholderHead h = householder_head(q, k, v, w, beta, bh, s, cum);
  for (int m = worker; m < p.M; m += workers)
    chunk_forward(BlockTeam{}, p, h, areas + g * p.M * chunk_floats(p), m, values, wk, o + bh * s.T * s.hd);
}

// Block g: the whole backward of head bh0 + g, its chunk gradients (zeroed)
// in work.
__global__ void __launch_bounds__(kThreads)
    chunk_backward_kernel(float* dq, float* dk, float* dv, float* dw, float* dbeta, float* dcum, const float* d_o,
                          const float* q, const float* k, const float* v, const float* w, const float* beta,
                          const float* cum, bool values, AttentionShape s, ChunkPlan p, int64_t bh0, float* areas,
                          float* work) {
  const int64_t g = blockIdx.x, bh = bh0 + g, at = bh * s.T * s.hd;
  const ChunkWork wk = chunk_work(p, work + g * chunk_work_floats(p, true), true);
  chunk_head_backward(BlockTeam{}, p, householder_head(q, k, v, w, beta, bh, s, cum),
                      areas + g * p.M * chunk_floats(p), values, wk, d_o + at, dq + at, dk + at, dv + at, dw + at,
                      dbeta + bh * s.T, cum ? dcum + bh * s.T : nullptr);
}

// One thread per step (b, t, h): bth = (b T + t) H + h, bht = (b H + h) T + t.
__global__ void householder_steps_forward_kernel(float* w, float* beta, const float* z, const float* beta_logit,
                                                 AttentionShape s) {
  for (int64_t bth = grid_first(); bth < int64_t(s.B) * s.T * s.H; bth += grid_stride()) {
    const int64_t bt = bth / s.H, h = bth % s.H, bht = ((bt / s.T) * s.H + h) * s.T + bt % s.T;
    nn::householder_step_forward(w + bht * s.hd, beta + bht, z + bth * s.hd, beta_logit ? beta_logit + bth : nullptr,
                                 s.hd);
  }
}

__global__ void householder_steps_backward_kernel(float* dz, float* dbeta_logit, const float* dw, const float* dbeta,
                                                  const float* z, const float* beta, AttentionShape s) {
  for (int64_t bth = grid_first(); bth < int64_t(s.B) * s.T * s.H; bth += grid_stride()) {
    const int64_t bt = bth / s.H, h = bth % s.H, bht = ((bt / s.T) * s.H + h) * s.T + bt % s.T;
    nn::householder_step_backward(dz + bth * s.hd, dbeta_logit ? dbeta_logit + bth : nullptr, dw + bht * s.hd,
                                  dbeta ? dbeta[bht] : 0.0f, z + bth * s.hd, beta[bht], s.hd);
  }
}


// Warps per head: enough to fill the device (about 2^14 warps in all), no
// more than the head has rows, and scratch under about 1 GiB; a multiple of
// kWarpsPerBlock, at least one block.
int householder_workers(const AttentionShape& s, bool backward) {
  const int64_t heads = int64_t(s.B) * s.H;
  const int64_t bytes = int64_t(householder_work_floats(s.T, s.hd, backward)) * int64_t(sizeof(float));
  int64_t w = std::min<int64_t>({(int64_t(1) << 14) / heads, (int64_t(1) << 30) / (heads * bytes), s.T});
  w = (std::max<int64_t>(w, 1) + kWarpsPerBlock - 1) / kWarpsPerBlock * kWarpsPerBlock;
  if (heads * (w / kWarpsPerBlock) > INT32_MAX)
    throw std::invalid_argument("cuda householder: " + std::to_string(heads) + " heads exceed one launch's grid");
  return int(w);
}

template <class Launch>
void by_head_width(int hd, Launch&& launch) {
  if (hd <= kWarpSize)
    launch(std::integral_constant<int, 1>());
  else if (hd <= 2 * kWarpSize)
    launch(std::integral_constant<int, 2>());
  else
    launch(std::integral_constant<int, 4>());
  check_launch();
}

float* scratch_of(DeviceBuffer<float>& scratch, std::size_t n) {
  if (scratch.size() < n) {
    scratch = DeviceBuffer<float>();
    scratch = DeviceBuffer<float>(n);
  }
  return scratch.data();
}

void rows_forward(float* o, const float* q, const float* k, const float* v, const float* w, const float* beta,
                  bool values, AttentionShape s, DeviceBuffer<float>& scratch) {
  const int64_t heads = int64_t(s.B) * s.H;
  const int workers = householder_workers(s, false);
  float* S = scratch_of(scratch, std::size_t(heads) * workers * householder_work_floats(s.T, s.hd, false));
  const unsigned blocks = unsigned(heads * (workers / kWarpsPerBlock));
  const dim3 block(kWarpSize, kWarpsPerBlock);
  by_head_width(s.hd, [&](auto nc) {
    householder_forward_kernel<decltype(nc)::value><<<blocks, block>>>(o, q, k, v, w, beta, values, s, S, workers);
  });
}

void rows_backward(float* dq, float* dk, float* dv, float* dw, float* dbeta, const float* d_o, const float* q,
                   const float* k, const float* v, const float* w, const float* beta, bool values, AttentionShape s,
                   DeviceBuffer<float>& scratch) {
  const int64_t heads = int64_t(s.B) * s.H;
  const int workers = householder_workers(s, true);
  const std::size_t n = std::size_t(heads) * workers * householder_work_floats(s.T, s.hd, true);
  float* work = scratch_of(scratch, n);
  CUDA_CHECK(cudaMemset(work, 0, n * sizeof(float)));  // the partial sums start at 0
  const unsigned blocks = unsigned(heads * (workers / kWarpsPerBlock));
  const dim3 block(kWarpSize, kWarpsPerBlock);
  by_head_width(s.hd, [&](auto nc) {
    householder_backward_kernel<decltype(nc)::value>
        <<<blocks, block>>>(dq, d_o, q, k, v, w, beta, values, s, work, workers);
  });
  const int64_t sums = heads * (3 * int64_t(s.T) * s.hd + s.T);
  householder_partials_kernel<<<grid_blocks(sums), kThreads>>>(dk, dv, dw, dbeta, work, s, workers);
  check_launch();
}


// The blocked path's plan: nn::householder_chunk(T) steps a chunk, the CPU's
// tuned size (not yet tuned on a device).
ChunkPlan blocked_plan(const AttentionShape& s) {
  const ChunkPlan p = chunk_plan(s.T, s.hd, nn::householder_chunk(s.T));
  if (int64_t(s.B) * s.H * p.M > INT32_MAX)
    throw std::invalid_argument("cuda householder: " + std::to_string(int64_t(s.B) * s.H) + " heads of " +
                                std::to_string(p.M) + " chunks exceed one launch's grid");
  return p;
}

std::size_t scratch_limit = std::size_t(1) << 30;

// Heads a launch takes when each needs `floats` of scratch: all of them, or
// as many as fit under scratch_limit, at least one.
int64_t heads_per_launch(int64_t heads, std::size_t floats) {
  const int64_t fit = int64_t(scratch_limit / (floats * sizeof(float)));
  return std::max<int64_t>(1, std::min(heads, fit));
}

void blocked_forward(float* o, const float* q, const float* k, const float* v, const float* w, const float* beta,
                     const float* cum, bool values, AttentionShape s, DeviceBuffer<float>& scratch) {
  const int64_t heads = int64_t(s.B) * s.H;
  const ChunkPlan p = blocked_plan(s);
  // Forward workers per head: enough blocks to fill the device (about 2^10),
  // no more than the head has chunks.
  const int workers = int(std::max<int64_t>(1, std::min<int64_t>((int64_t(1) << 10) / heads, p.M)));
  const std::size_t area = p.M * chunk_floats(p), work = workers * chunk_work_floats(p, false);
  const int64_t group = heads_per_launch(heads, area + work);
  float* base = scratch_of(scratch, std::size_t(group) * (area + work));
  for (int64_t bh0 = 0; bh0 < heads; bh0 += group) {
    const int64_t n = std::min(group, heads - bh0);
    chunk_build_kernel<<<unsigned(n * p.M), kThreads>>>(q, k, v, w, beta, values, s, p, bh0, base);
    check_launch();
    chunk_forward_kernel<<<unsigned(n * workers), kThreads>>>(o, q, k, v, w, beta, cum, values, s, p, bh0, base,
                                                              base + group * area, workers);
    check_launch();
  }
}

void blocked_backward(float* dq, float* dk, float* dv, float* dw, float* dbeta, float* dcum, const float* d_o,
                      const float* q, const float* k, const float* v, const float* w, const float* beta,
                      const float* cum, bool values, AttentionShape s, DeviceBuffer<float>& scratch) {
  const int64_t heads = int64_t(s.B) * s.H;
  const ChunkPlan p = blocked_plan(s);
  const std::size_t area = p.M * chunk_floats(p), work = chunk_work_floats(p, true);
  const int64_t group = heads_per_launch(heads, area + work);
  float* base = scratch_of(scratch, std::size_t(group) * (area + work));
  for (int64_t bh0 = 0; bh0 < heads; bh0 += group) {
    const int64_t n = std::min(group, heads - bh0);
    // The chunk gradients start at 0.
    CUDA_CHECK(cudaMemset(base + group * area, 0, std::size_t(n) * work * sizeof(float)));
    chunk_build_kernel<<<unsigned(n * p.M), kThreads>>>(q, k, v, w, beta, values, s, p, bh0, base);
    check_launch();
    chunk_backward_kernel<<<unsigned(n), kThreads>>>(dq, dk, dv, dw, dbeta, dcum, d_o, q, k, v, w, beta, cum, values,
                                                     s, p, bh0, base, base + group * area);
    check_launch();
  }
}

// The head width (the model's limit, and the row kernels' coordinates per
// lane) and the path: tiles is the CPU's alone, and a forget gate's bias is
// the blocked path's.
void require_householder_call(const AttentionShape& s, nn::HouseholderPath path, const float* cum, const char* what) {
  if (s.hd < 1 || s.hd > kMaxHeadDim)
    throw std::invalid_argument(std::string(what) + ": head dimension " + std::to_string(s.hd) + " outside 1.." +
                                std::to_string(kMaxHeadDim));
  if (path == nn::HouseholderPath::tiles)
    throw std::invalid_argument(std::string(what) + ": path tiles is the CPU's; the GPU has blocked and rows");
  if (cum && path != nn::HouseholderPath::blocked)
    throw std::invalid_argument(std::string(what) + ": a forget gate's bias needs the blocked path");
}

}  // namespace

void householder_steps_forward(float* w, float* beta, const float* z, const float* beta_logit, AttentionShape s) {
  const int64_t n = int64_t(s.B) * s.T * s.H;
  if (n == 0) return;
  householder_steps_forward_kernel<<<grid_blocks(n), kThreads>>>(w, beta, z, beta_logit, s);
  check_launch();
}

void householder_steps_backward(float* dz, float* dbeta_logit, const float* dw, const float* dbeta, const float* z,
                                const float* beta, AttentionShape s) {
  const int64_t n = int64_t(s.B) * s.T * s.H;
  if (n == 0) return;
  householder_steps_backward_kernel<<<grid_blocks(n), kThreads>>>(dz, dbeta_logit, dw, dbeta, z, beta, s);
  check_launch();
}

std::size_t set_householder_scratch_limit(std::size_t bytes) {
  std::swap(scratch_limit, bytes);
  return bytes;
}

void householder_attention_forward(float* o, const float* q, const float* k, const float* v, const float* w,
                                   const float* beta, bool values, AttentionShape s, DeviceBuffer<float>& scratch,
                                   nn::HouseholderPath path, const float* cum) {
  require_householder_call(s, path, cum, "householder_attention_forward");
  if (int64_t(s.B) * s.H * s.T == 0) return;
  if (path == nn::HouseholderPath::blocked)
    blocked_forward(o, q, k, v, w, beta, cum, values, s, scratch);
  else
    rows_forward(o, q, k, v, w, beta, values, s, scratch);
}

void householder_attention_backward(float* dq, float* dk, float* dv, float* dw, float* dbeta, const float* d_o,
                                    const float* q, const float* k, const float* v, const float* w,
                                    const float* beta, bool values, AttentionShape s, DeviceBuffer<float>& scratch,
                                    nn::HouseholderPath path, const float* cum, float* dcum) {
  require_householder_call(s, path, cum, "householder_attention_backward");
  if (cum && !dcum) throw std::invalid_argument("householder_attention_backward: a forget gate's bias needs dcum");
  if (int64_t(s.B) * s.H * s.T == 0) return;
  if (path == nn::HouseholderPath::blocked)
    blocked_backward(dq, dk, dv, dw, dbeta, dcum, d_o, q, k, v, w, beta, cum, values, s, scratch);
  else
    rows_backward(dq, dk, dv, dw, dbeta, d_o, q, k, v, w, beta, values, s, scratch);
}

}  // namespace routelab::cuda
