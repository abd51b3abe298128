// CUDA kernels of the transformer's layers; the contract is in cuda/layers.h,
// the reference in nn/layers.cpp. Each kernel is the plain one: a thread per
// element, a warp per row, or a thread per output column for sums over rows.
#include "cuda/layers.h"

#include <climits>
#include <stdexcept>

#include "cuda/buffer.h"
#include "cuda/common.cuh"

namespace routelab::cuda {

namespace {

// ---------------------------------------------------------------- encoder

__global__ void encoder_forward_kernel(float* out, const int* tokens, const float* wte, int64_t N, int C) {
  for (int64_t i = grid_first(); i < N * C; i += grid_stride())
    out[i] = wte[int64_t(tokens[i / C]) * C + i % C];
}

// One thread per channel walks the rows in order: a token's rows add in
// position order, as on the CPU, and no two threads touch one address.
__global__ void encoder_backward_kernel(float* dwte, const float* dout, const int* tokens, int64_t N, int C) {
  // Grid-stride: grid_blocks caps the grid, and no column may be skipped.
  for (int64_t c = grid_first(); c < C; c += grid_stride())
    for (int64_t n = 0; n < N; ++n) dwte[int64_t(tokens[n]) * C + c] += dout[n * C + c];
}

// ---------------------------------------------------------------- layernorm

constexpr float kLayerNormEps = 1e-5f;

__global__ void layernorm_forward_kernel(float* out, float* mean, float* rstd, const float* inp, const float* w,
                                         const float* b, int64_t N, int C) {
  const int64_t n = warp_row();
  if (n >= N) return;
  const float* x = inp + n * C;
  float m = 0;
  for (int c = threadIdx.x; c < C; c += kWarpSize) m += x[c];
  m = warp_sum(m) / C;
  float v = 0;
  for (int c = threadIdx.x; c < C; c += kWarpSize) v += (x[c] - m) * (x[c] - m);
  v = warp_sum(v) / C;
  const float s = 1.0f / sqrtf(v + kLayerNormEps);
  float* o = out + n * C;
  for (int c = threadIdx.x; c < C; c += kWarpSize) o[c] = (x[c] - m) * s * w[c] + b[c];
  if (threadIdx.x == 0) {
    mean[n] = m;
    rstd[n] = s;
  }
}

__global__ void layernorm_backward_input_kernel(float* dinp, const float* dout, const float* inp, const float* w,
                                                const float* mean, const float* rstd, int64_t N, int C) {
  const int64_t n = warp_row();
  if (n >= N) return;
  const float* x = inp + n * C;
  const float* d = dout + n * C;
  const float m = mean[n], s = rstd[n];
  float dnorm_mean = 0, dnorm_norm_mean = 0;
  for (int c = threadIdx.x; c < C; c += kWarpSize) {
    const float dnorm = w[c] * d[c];
    dnorm_mean += dnorm;
    dnorm_norm_mean += dnorm * ((x[c] - m) * s);
  }
  dnorm_mean = warp_sum(dnorm_mean) / C;
  dnorm_norm_mean = warp_sum(dnorm_norm_mean) / C;
  float* di = dinp + n * C;
  for (int c = threadIdx.x; c < C; c += kWarpSize)
    di[c] += (w[c] * d[c] - dnorm_mean - (x[c] - m) * s * dnorm_norm_mean) * s;
}

// dw and db: one thread per channel sums the rows in order.
__global__ void layernorm_backward_params_kernel(float* dw, float* db, const float* dout, const float* inp,
                                                 const float* mean, const float* rstd, int64_t N, int C) {
  for (int64_t c = grid_first(); c < C; c += grid_stride()) {
    float aw = 0, ab = 0;
    for (int64_t n = 0; n < N; ++n) {
      aw += (inp[n * C + c] - mean[n]) * rstd[n] * dout[n * C + c];
      ab += dout[n * C + c];
    }
    dw[c] += aw;
    db[c] += ab;
  }
}

// ---------------------------------------------------------------- matmul

__global__ void add_bias_kernel(float* out, const float* bias, int64_t N, int OC) {
  for (int64_t i = grid_first(); i < N * OC; i += grid_stride()) out[i] += bias[i % OC];
}

// dst[c] += sum_n src[n, c], one thread per column, rows in order.
__global__ void add_column_sums_kernel(float* dst, const float* src, int64_t N, int C) {
  for (int64_t c = grid_first(); c < C; c += grid_stride()) {
    float acc = 0;
    for (int64_t n = 0; n < N; ++n) acc += src[n * C + c];
    dst[c] += acc;
  }
}

// C = op(A) op(B) + beta C in cuBLAS's column-major terms (m x n result, k
// the inner size). A row-major (R, S) buffer is a column-major (S, R) one, so
// each row-major product below is written as its transpose.
void gemm(cublasHandle_t handle, cublasOperation_t op_a, cublasOperation_t op_b, int m, int n, int k,
          const float* A, int lda, const float* B, int ldb, float beta, float* Cm, int ldc, MatmulMath math) {
  const float alpha = 1.0f;
  // fp32 assumes the handle's default math mode (no TF32 override).
  const cublasComputeType_t compute = math == MatmulMath::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  CUBLAS_CHECK(cublasGemmEx(handle, op_a, op_b, m, n, k, &alpha, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, &beta, Cm,
                            CUDA_R_32F, ldc, compute, CUBLAS_GEMM_DEFAULT));
}

int cublas_rows(int64_t N) {
  if (N > INT_MAX) throw std::invalid_argument("cuda matmul: more than 2^31 - 1 rows; split the batch");
  return int(N);
}

// ---------------------------------------------------------------- gelu

constexpr float kSqrt2OverPi = 0.7978845608028654f;  // sqrt(2 / pi)

// tanh(sqrt(2/pi) (x + 0.044715 x^3)), the tanh approximation's inner term.
__device__ inline float gelu_tanh(float x) { return tanhf(kSqrt2OverPi * (x + 0.044715f * (x * x * x))); }

__global__ void gelu_forward_kernel(float* out, const float* inp, int64_t n) {
  for (int64_t i = grid_first(); i < n; i += grid_stride()) {
    const float x = inp[i];
    out[i] = 0.5f * x * (1.0f + gelu_tanh(x));
  }
}

__global__ void gelu_backward_kernel(float* dinp, const float* inp, const float* dout, int64_t n) {
  for (int64_t i = grid_first(); i < n; i += grid_stride()) {
    const float x = inp[i], th = gelu_tanh(x);
    const float g = 0.5f * (1.0f + th) +
                    0.5f * x * (1.0f - th * th) * kSqrt2OverPi * (1.0f + float(3 * 0.044715) * (x * x));
    dinp[i] += g * dout[i];
  }
}

// ---------------------------------------------------------------- residual

__global__ void residual_forward_kernel(float* out, const float* a, const float* b, int64_t n) {
  for (int64_t i = grid_first(); i < n; i += grid_stride()) out[i] = a[i] + b[i];
}

__global__ void residual_backward_kernel(float* da, float* db, const float* dout, int64_t n) {
  for (int64_t i = grid_first(); i < n; i += grid_stride()) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

// ---------------------------------------------------------------- cross-entropy

// Row max and sum of exp(l - max) of one row of logits, in every lane.
struct SoftmaxStats {
  float max, sum;
};
__device__ inline SoftmaxStats softmax_stats(const float* l, int V) {
  float mx = -INFINITY;
  for (int v = threadIdx.x; v < V; v += kWarpSize) mx = fmaxf(mx, l[v]);
  mx = warp_max(mx);
  float sum = 0;
  for (int v = threadIdx.x; v < V; v += kWarpSize) sum += expf(l[v] - mx);
  return {mx, warp_sum(sum)};
}

__global__ void crossentropy_forward_kernel(float* losses, const float* logits, const int* targets, int64_t N,
                                            int V) {
  const int64_t n = warp_row();
  if (n >= N) return;
  const float* l = logits + n * V;
  const SoftmaxStats st = softmax_stats(l, V);
  if (threadIdx.x == 0) losses[n] = logf(st.sum) + st.max - l[targets[n]];
}

__global__ void crossentropy_backward_kernel(float* dlogits, const float* logits, const int* targets, float dloss,
                                             int64_t N, int V) {
  const int64_t n = warp_row();
  if (n >= N) return;
  const float* l = logits + n * V;
  const SoftmaxStats st = softmax_stats(l, V);
  const float scale = dloss / st.sum;
  const int target = targets[n];
  float* d = dlogits + n * V;
  for (int v = threadIdx.x; v < V; v += kWarpSize) d[v] = expf(l[v] - st.max) * scale - (v == target ? dloss : 0.0f);
}

}  // namespace

void encoder_forward(float* out, const int* tokens, const float* wte, int64_t N, int C) {
  if (N * C == 0) return;
  encoder_forward_kernel<<<grid_blocks(N * C), kThreads>>>(out, tokens, wte, N, C);
  check_launch();
}

void encoder_backward(float* dwte, const float* dout, const int* tokens, int64_t N, int C) {
  if (N * C == 0) return;
  encoder_backward_kernel<<<grid_blocks(C), kThreads>>>(dwte, dout, tokens, N, C);
  check_launch();
}

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b,
                       int64_t N, int C) {
  if (N == 0) return;
  layernorm_forward_kernel<<<row_warps_grid(N), row_warps_block()>>>(out, mean, rstd, inp, w, b, N, C);
  check_launch();
}

void layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                        const float* mean, const float* rstd, int64_t N, int C) {
  if (N == 0) return;
  layernorm_backward_input_kernel<<<row_warps_grid(N), row_warps_block()>>>(dinp, dout, inp, w, mean, rstd, N, C);
  check_launch();
  layernorm_backward_params_kernel<<<grid_blocks(C), kThreads>>>(dw, db, dout, inp, mean, rstd, N, C);
  check_launch();
}

void matmul_forward(cublasHandle_t handle, float* out, const float* inp, const float* w, const float* bias,
                    int64_t N, int C, int OC, MatmulMath math) {
  if (N == 0) return;
  // out^T (OC, N) = w (OC, C) inp^T (C, N), all column-major.
  gemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, OC, cublas_rows(N), C, w, C, inp, C, 0.0f, out, OC, math);
  if (bias) {
    add_bias_kernel<<<grid_blocks(N * OC), kThreads>>>(out, bias, N, OC);
    check_launch();
  }
}

void matmul_backward(cublasHandle_t handle, float* dinp, float* dw, float* dbias, const float* dout,
                     const float* inp, const float* w, int64_t N, int C, int OC, MatmulMath math) {
  if (N == 0) return;
  // dinp^T (C, N) += w^T (C, OC) dout^T (OC, N).
  gemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, C, cublas_rows(N), OC, w, C, dout, OC, 1.0f, dinp, C, math);
  // dw^T (C, OC) += inp^T (C, N) dout (N, OC).
  gemm(handle, CUBLAS_OP_N, CUBLAS_OP_T, C, OC, cublas_rows(N), inp, C, dout, OC, 1.0f, dw, C, math);
  if (dbias) {
    add_column_sums_kernel<<<grid_blocks(OC), kThreads>>>(dbias, dout, N, OC);
    check_launch();
  }
}

void gelu_forward(float* out, const float* inp, int64_t n) {
  if (n == 0) return;
  gelu_forward_kernel<<<grid_blocks(n), kThreads>>>(out, inp, n);
  check_launch();
}

void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t n) {
  if (n == 0) return;
  gelu_backward_kernel<<<grid_blocks(n), kThreads>>>(dinp, inp, dout, n);
  check_launch();
}

void residual_forward(float* out, const float* a, const float* b, int64_t n) {
  if (n == 0) return;
  residual_forward_kernel<<<grid_blocks(n), kThreads>>>(out, a, b, n);
  check_launch();
}

void residual_backward(float* da, float* db, const float* dout, int64_t n) {
  if (n == 0) return;
  residual_backward_kernel<<<grid_blocks(n), kThreads>>>(da, db, dout, n);
  check_launch();
}

void crossentropy_forward(float* losses, const float* logits, const int* targets, int64_t N, int V) {
  if (N == 0) return;
  crossentropy_forward_kernel<<<row_warps_grid(N), row_warps_block()>>>(losses, logits, targets, N, V);
  check_launch();
}

void crossentropy_backward(float* dlogits, const float* logits, const int* targets, float dloss, int64_t N, int V) {
  if (N == 0) return;
  crossentropy_backward_kernel<<<row_warps_grid(N), row_warps_block()>>>(dlogits, logits, targets, dloss, N, V);
  check_launch();
}

}  // namespace routelab::cuda
