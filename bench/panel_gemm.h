// C = A B or C -= A B on the small panels of a compact-WY product (W6): a
// register-tiled multiply over column-major panels that already sit in
// L1/L2. Nothing is copied: A's tiles are read in place (a caller whose A
// has a leading dimension of a multiple of 512 bytes pads it, or a tile's
// columns share a few L1 sets), and B through strides, so a transposed
// operand needs no copy. At 128 x 128 x 32 this runs at
// 85-95% of the FMA peak with AVX-512, where Eigen's general product, which
// packs both operands on every call, ran at 60-65% (bench/README.md, W6).
//
// A is m x k, column-major with leading dimension lda, and m a multiple of
// kLanes (callers pad their panels with zero rows); B is read as
// B(p, j) = B[p * bk + j * bj], so B, or a transpose of it, serves as is.
// The vector width is the build's (AVX-512, AVX2 with FMA, else scalar).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <type_traits>
#include <utility>

namespace routelab::panel {

// One vector type and its six operations, by the intrinsics' width W
// (_mm256_*, _mm512_*).
#define ROUTELAB_PANEL_VECTOR(W)                                                              \
  using Reg = __m##W##d;                                                                      \
  inline Reg load(const double* p) { return _mm##W##_loadu_pd(p); }                          \
  inline void store(double* p, Reg v) { _mm##W##_storeu_pd(p, v); }                          \
  inline Reg splat(double x) { return _mm##W##_set1_pd(x); }                                 \
  inline Reg zero() { return _mm##W##_setzero_pd(); }                                        \
  inline Reg fmadd(Reg a, Reg b, Reg c) { return _mm##W##_fmadd_pd(a, b, c); }               \
  inline Reg fnmadd(Reg a, Reg b, Reg c) { return _mm##W##_fnmadd_pd(a, b, c); }

#if defined(__AVX512F__)
constexpr const char* kPath = "avx512";
constexpr int kLanes = 8;
ROUTELAB_PANEL_VECTOR(512)
constexpr int kTileRows = 2, kTileCols = 8;  // 16 accumulators of 32 registers
#elif defined(__AVX2__) && defined(__FMA__)
constexpr const char* kPath = "avx2";
constexpr int kLanes = 4;
ROUTELAB_PANEL_VECTOR(256)
// 12 accumulators, 3 vectors of A and a broadcast: all 16 registers, so no
// A vector is read from memory twice. Timed alone (a loop of each, Zen 4),
// W6's Z = Q V and Q -= Y V^T ran at 84% and 67% of the FMA peak with 4 x 3
// (one A vector an operand of each FMA) and at 99% and 80% with 3 x 4;
// inside W6 itself the two shapes were level.
constexpr int kTileRows = 3, kTileCols = 4;
#else
constexpr const char* kPath = "scalar";
constexpr int kLanes = 1;
using Reg = double;
inline Reg load(const double* p) { return *p; }
inline void store(double* p, Reg v) { *p = v; }
inline Reg splat(double x) { return x; }
inline Reg zero() { return 0.0; }
inline Reg fmadd(Reg a, Reg b, Reg c) { return a * b + c; }
inline Reg fnmadd(Reg a, Reg b, Reg c) { return c - a * b; }
constexpr int kTileRows = 4, kTileCols = 4;
#endif
#undef ROUTELAB_PANEL_VECTOR

// Rows padded to whole vectors.
inline int padded_rows(int m) { return (m + kLanes - 1) / kLanes * kLanes; }

enum class Op { set, sub };  // C = AB, C -= AB

// One tile: R vectors of rows by N columns, every accumulator in a register.
template <Op kOp, int R, int N>
inline void tile(double* C, int ldc, const double* A, int lda, const double* B, std::ptrdiff_t bk,
                 std::ptrdiff_t bj, int k) {
  Reg acc[R][N];
  for (int j = 0; j < N; ++j)
    for (int r = 0; r < R; ++r) acc[r][j] = kOp == Op::set ? zero() : load(C + j * ldc + r * kLanes);
  for (int p = 0; p < k; ++p) {
    Reg a[R];
    for (int r = 0; r < R; ++r) a[r] = load(A + std::ptrdiff_t(p) * lda + r * kLanes);
    const double* b = B + p * bk;
    for (int j = 0; j < N; ++j) {
      const Reg bv = splat(b[j * bj]);
      for (int r = 0; r < R; ++r) acc[r][j] = kOp == Op::sub ? fnmadd(a[r], bv, acc[r][j]) : fmadd(a[r], bv, acc[r][j]);
    }
  }
  for (int j = 0; j < N; ++j)
    for (int r = 0; r < R; ++r) store(C + j * ldc + r * kLanes, acc[r][j]);
}

// Which part of the product a caller needs, when a factor is triangular.
enum class Shape {
  full,
  upper_b,  // B upper triangular: column j needs p <= j only
  upper_c,  // only C's upper triangle (rows i <= j) is wanted; the rest is garbage
};

// Which tiles run first. rows_outside: a tile's rows of A stay in L1 while
// every column of B passes them, for a long k (Z = Q V, k = d).
// columns_outside: a strip of C's columns is read and written top to bottom
// while its few rows of B stay in L1, for a short k, where C's traffic
// outweighs A's. kShortOrder is the one a short k runs faster with: with
// AVX-512 on a Zen 4, W6's Q -= Y V^T (k = 32) took 1.03 of Z = Q V's time
// with columns outside and 1.16-1.21 with rows outside; with AVX2 (4 x 3
// tiles), 1.34-1.41 and 1.33-1.37 (rdtsc around each product, three runs
// each).
enum class Order { rows_outside, columns_outside };
constexpr Order kShortOrder = kLanes == 8 ? Order::columns_outside : Order::rows_outside;

// f(std::integral_constant<int, w>()) for a w in [1, kMax] known only at run time.
template <int kMax, class F>
inline void with_width(int w, F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) {
    ((w == I + 1 ? f(std::integral_constant<int, I + 1>()) : void()), ...);
  }(std::make_integer_sequence<int, kMax>());
}

// C (m x n, leading dimension ldc, m a multiple of kLanes) = or -= A B, k terms.
template <Op kOp, Shape kShape = Shape::full, Order kOrder = Order::rows_outside>
void gemm(double* C, int ldc, const double* A, int lda, const double* B, std::ptrdiff_t bk, std::ptrdiff_t bj,
          int m, int n, int k) {
  auto one = [&](int i, int j, auto vectors, auto width) {
    constexpr int R = decltype(vectors)::value, N = decltype(width)::value;
    if (kShape == Shape::upper_c && i >= j + N) return;
    const int kk = kShape == Shape::upper_b ? std::min(k, j + N) : k;
    tile<kOp, R, N>(C + std::ptrdiff_t(j) * ldc + i, ldc, A + i, lda, B + j * bj, bk, bj, kk);
  };
  // f(i, R) over row tiles of R vectors, g(j, N) over column tiles of N
  // columns; what is left over is one narrower tile, not single vectors or
  // columns, whose few accumulators would wait on the FMA latency.
  auto over_rows = [&](auto f) {
    int i = 0;
    for (; i + kTileRows * kLanes <= m; i += kTileRows * kLanes) f(i, std::integral_constant<int, kTileRows>());
    if (i < m) with_width<kTileRows - 1>((m - i) / kLanes, [&](auto r) { f(i, r); });
  };
  auto over_columns = [&](auto g) {
    int j = 0;
    for (; j + kTileCols <= n; j += kTileCols) g(j, std::integral_constant<int, kTileCols>());
    if (j < n) with_width<kTileCols - 1>(n - j, [&](auto w) { g(j, w); });
  };
  if constexpr (kOrder == Order::rows_outside)
    over_rows([&](int i, auto r) { over_columns([&](int j, auto w) { one(i, j, r, w); }); });
  else
    over_columns([&](int j, auto w) { over_rows([&](int i, auto r) { one(i, j, r, w); }); });
}

}  // namespace routelab::panel
