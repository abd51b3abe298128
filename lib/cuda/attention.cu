// CUDA kernels of attention with positional transport; the contract is in
// cuda/attention.h, the reference in nn/attention.cpp, whose arithmetic each
// kernel repeats step for step (score = dot * scale, minus the ALiBi term
// computed in double, plus cum_i - cum_j; -inf above the diagonal).
#include "cuda/attention.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "cuda/buffer.h"
#include "cuda/common.cuh"

namespace routelab::cuda {

namespace {

// ---------------------------------------------------------------- split / merge

// Component `odd` of the pair (a, b) turned by the angle with cosine c and
// sine s: (a c - b s, a s + b c). Every rotation below, forward or transposed,
// is this with the sine's sign chosen by the caller.
__device__ inline float rotate_component(float a, float b, float c, float s, bool odd) {
  return odd ? a * s + b * c : a * c - b * s;
}

// d/dtheta of a loss through y = R(-theta) x, per pair: g_a y_b - g_b y_a.
// Through y = R(theta) x it is the negative.
__device__ inline float pair_angle_grad(float ga, float gb, float ya, float yb) { return ga * yb - gb * ya; }

// s.C() is host-only (nn/attention.h is a CPU header).
__host__ __device__ inline int64_t channels(const AttentionShape& s) { return int64_t(s.H) * s.hd; }

// Where element (b, t, h, e) of a per-head tensor (B, H, T, hd) lives.
__device__ inline int64_t head_index(int64_t b, int64_t t, int h, int e, const AttentionShape& s) {
  return ((b * s.H + h) * s.T + t) * s.hd + e;
}

// Element i of a merged tensor (B, T, width, C) (qkv: width 3; y: width 1):
// its position, and its place in the per-head layout.
struct MergedPlace {
  int64_t bt;        // b T + t
  int w;             // 0, 1, 2 for q, k, v (0 for y)
  int e;             // coordinate within the head
  int64_t head_at;   // index in the per-head tensor (B, H, T, hd)
  const float* rot;  // (cos, sin) of the pair e belongs to; null without rotation
};

__device__ inline MergedPlace merged_place(int64_t i, int width, const float* cs, const AttentionShape& s) {
  const int64_t C = channels(s), bt = i / (width * C), wc = i % (width * C);
  const int w = int(wc / C), h = int(wc % C / s.hd), e = int(wc % C % s.hd);
  return {bt, w, e, head_index(bt / s.T, bt % s.T, h, e, s), cs ? cs + (bt * (s.hd / 2) + e / 2) * 2 : nullptr};
}

// Component e of a's pair (which starts at at - (e & 1)) turned by R(theta)
// (sign 1) or R(-theta) (sign -1).
__device__ inline float turned(const float* a, int64_t at, int e, const float* rot, float sign) {
  const int64_t pair = at - (e & 1);
  return rotate_component(a[pair], a[pair + 1], rot[0], sign * rot[1], e & 1);
}

// One thread per element of qkv (B, T, 3, C): reads are coalesced.
__global__ void split_heads_forward_kernel(float* q, float* k, float* v, const float* qkv, const float* cs,
                                           bool rotate_v, AttentionShape s) {
  float* outs[3] = {q, k, v};
  for (int64_t i = grid_first(); i < int64_t(s.B) * s.T * 3 * channels(s); i += grid_stride()) {
    const MergedPlace p = merged_place(i, 3, cs, s);
    const bool rotated = p.rot && (p.w < 2 || rotate_v);
    outs[p.w][p.head_at] = rotated ? turned(qkv, i, p.e, p.rot, 1.0f) : qkv[i];
  }
}

// d qkv += R(-theta) dq (and dk, dv), one thread per element of dqkv.
__global__ void split_heads_backward_input_kernel(float* dqkv, const float* dq, const float* dk, const float* dv,
                                                  const float* cs, bool rotate_v, AttentionShape s) {
  const float* grads[3] = {dq, dk, dv};
  for (int64_t i = grid_first(); i < int64_t(s.B) * s.T * 3 * channels(s); i += grid_stride()) {
    const MergedPlace p = merged_place(i, 3, cs, s);
    const bool rotated = p.rot && (p.w < 2 || rotate_v);
    dqkv[i] += rotated ? turned(grads[p.w], p.head_at, p.e, p.rot, -1.0f) : grads[p.w][p.head_at];
  }
}

// dtheta[bt, j] += sum over heads and rotated tensors, one thread per (bt, j)
// adding in the CPU's order (head, then q, k, v), in double.
__global__ void split_heads_angle_grad_kernel(double* dtheta, const float* dq, const float* dk, const float* dv,
                                              const float* q, const float* k, const float* v, bool rotate_v,
                                              AttentionShape s) {
  const int64_t nb = s.hd / 2;
  const float* grads[3] = {dq, dk, dv};
  const float* outs[3] = {q, k, v};
  for (int64_t i = grid_first(); i < int64_t(s.B) * s.T * nb; i += grid_stride()) {
    const int64_t bt = i / nb;
    const int j = int(i % nb);
    double acc = dtheta[i];
    for (int h = 0; h < s.H; ++h)
      for (int w = 0; w < (rotate_v ? 3 : 2); ++w) {
        const int64_t at = head_index(bt / s.T, bt % s.T, h, 2 * j, s);
        acc += double(-pair_angle_grad(grads[w][at], grads[w][at + 1], outs[w][at], outs[w][at + 1]));
      }
    dtheta[i] = acc;
  }
}

// y = R(-theta) o per head, one thread per element of y (B, T, C).
__global__ void merge_heads_forward_kernel(float* y, const float* o, const float* cs, AttentionShape s) {
  for (int64_t i = grid_first(); i < int64_t(s.B) * s.T * channels(s); i += grid_stride()) {
    const MergedPlace p = merged_place(i, 1, cs, s);
    y[i] = p.rot ? turned(o, p.head_at, p.e, p.rot, -1.0f) : o[p.head_at];
  }
}

// d_o += R(theta) dy, one thread per element of dy.
__global__ void merge_heads_backward_input_kernel(float* d_o, const float* dy, const float* cs, AttentionShape s) {
  for (int64_t i = grid_first(); i < int64_t(s.B) * s.T * channels(s); i += grid_stride()) {
    const MergedPlace p = merged_place(i, 1, cs, s);
    d_o[p.head_at] += p.rot ? turned(dy, i, p.e, p.rot, 1.0f) : dy[i];
  }
}

__global__ void merge_heads_angle_grad_kernel(double* dtheta, const float* dy, const float* y, AttentionShape s) {
  const int64_t C = channels(s), nb = s.hd / 2;
  for (int64_t i = grid_first(); i < int64_t(s.B) * s.T * nb; i += grid_stride()) {
    const int64_t bt = i / nb;
    const int j = int(i % nb);
    double acc = dtheta[i];
    for (int h = 0; h < s.H; ++h) {
      const int64_t at = bt * C + int64_t(h) * s.hd + 2 * j;
      acc += double(pair_angle_grad(dy[at], dy[at + 1], y[at], y[at + 1]));
    }
    dtheta[i] = acc;
  }
}

// ---------------------------------------------------------------- attention

// Query rows per block, one per thread, and key rows per shared-memory tile.
constexpr int kTile = 32;

// What a block needs to know about its (batch, head) pair.
struct HeadView {
  int64_t bh;      // b H + h
  int64_t base;    // offset of row 0 in (B, H, T, hd) tensors
  double slope;    // ALiBi slope (0: none)
  const float* cum;  // this head's running sum of log forget gates (or null)
};

__device__ inline HeadView head_view(int64_t bh, const ScoreBias<float>& bias, const AttentionShape& s) {
  return {bh, bh * s.T * s.hd, bias.slopes ? bias.slopes[bh % s.H] : 0.0,
          bias.cum ? bias.cum + bh * s.T : nullptr};
}

__device__ inline float row_dot(const float* a, const float* b, int hd) {
  float acc = 0;
  for (int c = 0; c < hd; ++c) acc += a[c] * b[c];
  return acc;
}

// The score of query i against key j <= i, in the CPU's order of operations.
__device__ inline float attention_score(const float* q_row, const float* k_row, int hd, float scale, int64_t i,
                                        int64_t j, const HeadView& hv) {
  float score = row_dot(q_row, k_row, hd) * scale;
  if (hv.slope != 0) score -= float(hv.slope * double(i - j));
  if (hv.cum) score += hv.cum[i] - hv.cum[j];
  return score;
}

// The whole block copies `rows` rows of hd floats into shared memory.
__device__ inline void load_rows(float* dst, const float* src, int64_t rows, int hd) {
  for (int64_t x = threadIdx.x; x < rows * hd; x += blockDim.x) dst[x] = src[x];
}

// One thread's row into registers (zeros for a thread past the end).
__device__ inline void load_row(float* dst, const float* src, bool active, int hd) {
  for (int c = 0; c < hd; ++c) dst[c] = active ? src[c] : 0.0f;
}

// A block's (batch, head) and its tile of kTile rows (query rows, or key rows
// in the key-side backward), one per thread.
struct RowTile {
  HeadView hv;
  int64_t first;  // the tile's first row
  int64_t row;    // this thread's row
  int64_t end;    // one past the tile's last row (at most T)
  bool active;    // row < T; threads past the end still load and synchronise
};

__device__ inline RowTile row_tile(const ScoreBias<float>& bias, const AttentionShape& s) {
  const int64_t ntiles = (s.T + kTile - 1) / kTile, first = (blockIdx.x % ntiles) * kTile;
  const int64_t row = first + threadIdx.x;
  return {head_view(blockIdx.x / ntiles, bias, s), first, row, min(int64_t(s.T), first + kTile), row < s.T};
}

// The query-side kernels' shared memory: a tile of kTile keys and their values.
struct KeyTile {
  float* k;
  float* v;
};
__device__ inline KeyTile key_tile(int hd) {
  extern __shared__ float shared[];
  return {shared, shared + kTile * hd};
}

// Keys and values j0 .. j0 + cols - 1 into the tile, by the whole block.
__device__ inline void stage_key_tile(const KeyTile& tile, const float* k, const float* v, const HeadView& hv,
                                      int64_t j0, int cols, int hd) {
  __syncthreads();  // every thread is done with the previous tile
  load_rows(tile.k, k + hv.base + j0 * hd, cols, hd);
  load_rows(tile.v, v + hv.base + j0 * hd, cols, hd);
  __syncthreads();
}

// Block = (bh, query tile), thread = query row i. Keys stream through shared
// memory a tile at a time; each row keeps its running max m, sum l and
// unnormalised output acc (flash attention's online softmax).
__global__ void attention_forward_kernel(float* o, float* lse, const float* q, const float* k, const float* v,
                                         ScoreBias<float> bias, AttentionShape s, float scale) {
  const KeyTile tile = key_tile(s.hd);
  const RowTile t = row_tile(bias, s);
  const HeadView& hv = t.hv;
  const int64_t i = t.row;

  float q_row[kMaxHeadDim], acc[kMaxHeadDim] = {}, scores[kTile];
  load_row(q_row, q + hv.base + i * s.hd, t.active, s.hd);
  float m = -INFINITY, l = 0.0f;
  for (int64_t j0 = 0; j0 < t.end; j0 += kTile) {  // keys up to the tile's last query
    const int cols = int(min(int64_t(kTile), t.end - j0));
    stage_key_tile(tile, k, v, hv, j0, cols, s.hd);
    if (!t.active) continue;
    // Every tile up to this row's holds key j0 <= i, so the max is finite.
    float tile_max = -INFINITY;
    for (int c = 0; c < cols; ++c) {
      scores[c] = j0 + c <= i ? attention_score(q_row, tile.k + c * s.hd, s.hd, scale, i, j0 + c, hv) : -INFINITY;
      tile_max = fmaxf(tile_max, scores[c]);
    }
    const float m_new = fmaxf(m, tile_max);
    const float corr = expf(m - m_new);  // 0 on the first tile, where m = -inf
    for (int e = 0; e < s.hd; ++e) acc[e] *= corr;
    float p_sum = 0.0f;
    for (int c = 0; c < cols; ++c) {
      const float p = j0 + c <= i ? expf(scores[c] - m_new) : 0.0f;  // an exact zero above the diagonal
      p_sum += p;
      for (int e = 0; e < s.hd; ++e) acc[e] += p * tile.v[c * s.hd + e];
    }
    l = l * corr + p_sum;
    m = m_new;
  }
  if (!t.active) return;
  const float inv_l = 1.0f / l;
  for (int e = 0; e < s.hd; ++e) o[hv.base + i * s.hd + e] = inv_l * acc[e];
  lse[hv.bh * s.T + i] = m + logf(l);
}

// Backward, query side. Block = (bh, query tile), thread = query row i:
// dq_i += scale sum_j dS_ij k_j and dcum_i += sum_j dS_ij, with
// P_ij = exp(S_ij - lse_i), dS_ij = P_ij (dO_i . v_j - D_i), D_i = dO_i . O_i.
__global__ void attention_backward_query_kernel(float* dq, float* dcum, const float* d_o, const float* o,
                                                const float* lse, const float* q, const float* k, const float* v,
                                                ScoreBias<float> bias, AttentionShape s, float scale) {
  const KeyTile tile = key_tile(s.hd);
  const RowTile t = row_tile(bias, s);
  const HeadView& hv = t.hv;
  const int64_t i = t.row;

  float q_row[kMaxHeadDim], do_row[kMaxHeadDim], dq_acc[kMaxHeadDim] = {};
  load_row(q_row, q + hv.base + i * s.hd, t.active, s.hd);
  load_row(do_row, d_o + hv.base + i * s.hd, t.active, s.hd);
  const float D = t.active ? row_dot(d_o + hv.base + i * s.hd, o + hv.base + i * s.hd, s.hd) : 0.0f;
  const float lse_i = t.active ? lse[hv.bh * s.T + i] : 0.0f;
  float dcum_i = 0.0f;
  for (int64_t j0 = 0; j0 < t.end; j0 += kTile) {
    const int cols = int(min(int64_t(kTile), t.end - j0));
    stage_key_tile(tile, k, v, hv, j0, cols, s.hd);
    if (!t.active) continue;
    for (int c = 0; c < cols && j0 + c <= i; ++c) {
      const float* k_row = tile.k + c * s.hd;
      const float p = expf(attention_score(q_row, k_row, s.hd, scale, i, j0 + c, hv) - lse_i);
      const float ds = p * (row_dot(do_row, tile.v + c * s.hd, s.hd) - D);
      dcum_i += ds;
      for (int e = 0; e < s.hd; ++e) dq_acc[e] += ds * k_row[e];
    }
  }
  if (!t.active) return;
  for (int e = 0; e < s.hd; ++e) dq[hv.base + i * s.hd + e] += scale * dq_acc[e];
  if (hv.cum) dcum[hv.bh * s.T + i] += dcum_i;  // the bias cum_i - cum_j enters unscaled
}

// Backward, key side. Block = (bh, key tile), thread = key row j; query
// tiles from the diagonal on stream through shared memory with their dO rows,
// lse and D: dv_j += sum_i P_ij dO_i, dk_j += scale sum_i dS_ij q_i,
// dcum_j -= sum_i dS_ij.
__global__ void attention_backward_key_kernel(float* dk, float* dv, float* dcum, const float* d_o, const float* o,
                                              const float* lse, const float* q, const float* k, const float* v,
                                              ScoreBias<float> bias, AttentionShape s, float scale) {
  extern __shared__ float shared[];
  float* q_tile = shared;
  float* do_tile = shared + kTile * s.hd;
  float* lse_tile = shared + 2 * kTile * s.hd;
  float* D_tile = lse_tile + kTile;
  const RowTile t = row_tile(bias, s);
  const HeadView& hv = t.hv;
  const int64_t j = t.row;

  float k_row[kMaxHeadDim], v_row[kMaxHeadDim], dk_acc[kMaxHeadDim] = {}, dv_acc[kMaxHeadDim] = {};
  load_row(k_row, k + hv.base + j * s.hd, t.active, s.hd);
  load_row(v_row, v + hv.base + j * s.hd, t.active, s.hd);
  float dcum_j = 0.0f;
  for (int64_t i0 = t.first; i0 < s.T; i0 += kTile) {  // queries from this key tile's first on
    const int rows = int(min(int64_t(kTile), s.T - i0));
    __syncthreads();
    load_rows(q_tile, q + hv.base + i0 * s.hd, rows, s.hd);
    load_rows(do_tile, d_o + hv.base + i0 * s.hd, rows, s.hd);
    if (threadIdx.x < rows) {
      const int64_t at = hv.base + (i0 + threadIdx.x) * s.hd;
      lse_tile[threadIdx.x] = lse[hv.bh * s.T + i0 + threadIdx.x];
      D_tile[threadIdx.x] = row_dot(d_o + at, o + at, s.hd);
    }
    __syncthreads();
    if (!t.active) continue;
    for (int r = 0; r < rows; ++r) {
      const int64_t i = i0 + r;
      if (i < j) continue;  // causal: only queries at or after this key
      const float* q_row = q_tile + r * s.hd;
      const float* do_row = do_tile + r * s.hd;
      const float p = expf(attention_score(q_row, k_row, s.hd, scale, i, j, hv) - lse_tile[r]);
      const float ds = p * (row_dot(do_row, v_row, s.hd) - D_tile[r]);
      dcum_j += ds;
      for (int e = 0; e < s.hd; ++e) {
        dv_acc[e] += p * do_row[e];
        dk_acc[e] += ds * q_row[e];
      }
    }
  }
  if (!t.active) return;
  for (int e = 0; e < s.hd; ++e) {
    dk[hv.base + j * s.hd + e] += scale * dk_acc[e];
    dv[hv.base + j * s.hd + e] += dv_acc[e];
  }
  if (hv.cum) dcum[hv.bh * s.T + j] -= dcum_j;
}

// The attention kernels keep a head row per thread in registers, hence the
// cap; split and merge touch one element per thread and take any width.
void require_head_dim(const AttentionShape& s, bool rotated, const char* what, bool capped = true) {
  if (s.hd < 1 || (capped && s.hd > kMaxHeadDim))
    throw std::invalid_argument(std::string(what) + ": head dimension " + std::to_string(s.hd) +
                                (capped ? " outside 1.." + std::to_string(kMaxHeadDim) : std::string(" below 1")));
  if (rotated && s.hd % 2)
    throw std::invalid_argument(std::string(what) + ": odd head dimension " + std::to_string(s.hd) +
                                " cannot be rotated in pairs");
}

// The elementwise split/merge kernels' item count, after the shape checks:
// `tensors` head tensors (3 for q, k, v; 1 for o) of B T C floats.
int64_t split_merge_items(const AttentionShape& s, const float* cs, int tensors, const char* what) {
  require_head_dim(s, cs != nullptr, what, false);
  return int64_t(s.B) * s.T * tensors * s.C();
}

// Blocks of the attention kernels: (B H) x query (or key) tiles.
unsigned attention_blocks(const AttentionShape& s) {
  const int64_t n = int64_t(s.B) * s.H * ((s.T + kTile - 1) / kTile);
  if (n > INT32_MAX) throw std::invalid_argument("cuda attention: too many (batch, head, tile) blocks");
  return unsigned(n);
}

}  // namespace

void split_heads_forward(float* q, float* k, float* v, const float* qkv, const float* cs, bool rotate_v,
                         AttentionShape s) {
  const int64_t n = split_merge_items(s, cs, 3, "split_heads_forward");
  if (n == 0) return;
  split_heads_forward_kernel<<<grid_blocks(n), kThreads>>>(q, k, v, qkv, cs, rotate_v, s);
  check_launch();
}

void split_heads_backward(float* dqkv, double* dtheta, const float* dq, const float* dk, const float* dv,
                          const float* q, const float* k, const float* v, const float* cs, bool rotate_v,
                          AttentionShape s) {
  const int64_t n = split_merge_items(s, cs, 3, "split_heads_backward");
  if (n == 0) return;
  split_heads_backward_input_kernel<<<grid_blocks(n), kThreads>>>(dqkv, dq, dk, dv, cs, rotate_v, s);
  check_launch();
  if (cs && dtheta) {
    split_heads_angle_grad_kernel<<<grid_blocks(int64_t(s.B) * s.T * (s.hd / 2)), kThreads>>>(
        dtheta, dq, dk, dv, q, k, v, rotate_v, s);
    check_launch();
  }
}

void merge_heads_forward(float* y, const float* o, const float* cs, AttentionShape s) {
  const int64_t n = split_merge_items(s, cs, 1, "merge_heads_forward");
  if (n == 0) return;
  merge_heads_forward_kernel<<<grid_blocks(n), kThreads>>>(y, o, cs, s);
  check_launch();
}

void merge_heads_backward(float* d_o, double* dtheta, const float* dy, const float* y, const float* cs,
                          AttentionShape s) {
  const int64_t n = split_merge_items(s, cs, 1, "merge_heads_backward");
  if (n == 0) return;
  merge_heads_backward_input_kernel<<<grid_blocks(n), kThreads>>>(d_o, dy, cs, s);
  check_launch();
  if (cs && dtheta) {
    merge_heads_angle_grad_kernel<<<grid_blocks(int64_t(s.B) * s.T * (s.hd / 2)), kThreads>>>(dtheta, dy, y, s);
    check_launch();
  }
}

void attention_forward(float* o, float* lse, const float* q, const float* k, const float* v, ScoreBias<float> bias,
                       AttentionShape s) {
  require_head_dim(s, false, "attention_forward");
  if (int64_t(s.B) * s.H * s.T == 0) return;
  const float scale = 1.0f / sqrtf(float(s.hd));
  const std::size_t shared = 2 * kTile * s.hd * sizeof(float);
  attention_forward_kernel<<<attention_blocks(s), kTile, shared>>>(o, lse, q, k, v, bias, s, scale);
  check_launch();
}

void attention_backward(float* dq, float* dk, float* dv, float* dcum, const float* d_o, const float* o,
                        const float* lse, const float* q, const float* k, const float* v, ScoreBias<float> bias,
                        AttentionShape s) {
  require_head_dim(s, false, "attention_backward");
  if (int64_t(s.B) * s.H * s.T == 0) return;
  const float scale = 1.0f / sqrtf(float(s.hd));
  const std::size_t query_shared = 2 * kTile * s.hd * sizeof(float);
  attention_backward_query_kernel<<<attention_blocks(s), kTile, query_shared>>>(dq, dcum, d_o, o, lse, q, k, v,
                                                                                 bias, s, scale);
  check_launch();
  const std::size_t key_shared = (2 * kTile * s.hd + 2 * kTile) * sizeof(float);
  attention_backward_key_kernel<<<attention_blocks(s), kTile, key_shared>>>(dk, dv, dcum, d_o, o, lse, q, k, v,
                                                                             bias, s, scale);
  check_launch();
}

}  // namespace routelab::cuda
