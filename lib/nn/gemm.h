// The layers' matrix products, register-tiled: out = init + A B, or
// out += A B, over row-major buffers. B is first copied into panels of
// kPanel columns (zero-padded), so a tile reads it at unit stride whatever
// B's own layout: a transpose costs nothing more, and a row stride of a
// power of two cannot pile a tile's rows into a few L1 sets. A is read in
// place through two strides, so A or its transpose serves as is.
//
// Every output is its start plus the sum over k, in order, of
// A(r, k) B(k, c), one multiply-add at a time: a result does not depend on
// how rows, columns or a long k are split between calls and threads, which
// is how the layers give the same bytes at any thread count. Eigen's general
// product packs both operands on every call and ran the model's shapes (N x
// 64 by 64 x 256, attention's 64 x 32 x 64 tiles) at 50-63% of a Zen 4
// core's FMA peak; these tiles at 60-90%, the low end where a wide output's
// memory traffic binds (bench/README.md).
//
// Plain loops that the compiler keeps in registers: a tile is kRows rows by
// up to four vectors of columns, 24 accumulators of AVX-512's 32 registers
// (12 of AVX2's 16 with two vectors). sum_of() below gives the layers' row
// sums (LayerNorm's moments, attention's dO . O) the same kind of fixed,
// vectorised order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace routelab::nn::gemm {

// Bytes of the build's widest vector.
#if defined(__AVX512F__)
constexpr int kVectorBytes = 64;
constexpr int kVectorsPerTile = 4;
#elif defined(__AVX__)
constexpr int kVectorBytes = 32;
constexpr int kVectorsPerTile = 2;
#else
constexpr int kVectorBytes = 16;
constexpr int kVectorsPerTile = 2;
#endif

constexpr int kRows = 6;  // rows of A per tile
template <class R>
constexpr int kLanes = kVectorBytes / int(sizeof(R));
template <class R>
constexpr int kPanel = kVectorsPerTile * kLanes<R>;  // columns of B per panel

// Elements that the panels of a K x cols matrix take.
template <class R>
int64_t panels_size(int K, int cols) {
  return int64_t(K) * ((cols + kPanel<R> - 1) / kPanel<R>) * kPanel<R>;
}

// B(k, c) = b[k bk + c bc], K x cols, into panels[p][k][j] = B(k, p kPanel + j),
// columns past cols zero.
template <class R>
void pack(R* panels, const R* b, int64_t bk, int64_t bc, int K, int cols) {
  constexpr int P = kPanel<R>;
  for (int p = 0; p * P < cols; ++p) {
    const int width = std::min(P, cols - p * P);
    for (int k = 0; k < K; ++k) {
      R* dst = panels + (int64_t(p) * K + k) * P;
      const R* src = b + k * bk + int64_t(p) * P * bc;
      for (int j = 0; j < width; ++j) dst[j] = src[j * bc];
      std::fill(dst + width, dst + P, R(0));
    }
  }
}

namespace detail {

// R's vector of the build's width, read and written at any alignment (GCC's
// and Clang's vector extension: plain arithmetic on whole registers).
template <class R>
using Vec [[gnu::vector_size(kVectorBytes), gnu::aligned(alignof(R))]] = R;

// RB rows by V vectors of columns: out = init + A B (init null: 0) or
// out += A B, the first `cols` columns read and written. b is the tile's
// panel, at unit stride.
template <class R, int RB, int V>
inline void tile(R* out, int64_t ldo, const R* a, int64_t ar, int64_t ak, const R* b, int64_t b_row, int K,
                 const R* init, bool accumulate, int cols) {
  constexpr int L = kLanes<R>;
  Vec<R> acc[RB][V];
  R edge[L];  // a vector's columns past `cols`: zeros in, dropped out
  for (int r = 0; r < RB; ++r)
    for (int v = 0; v < V; ++v) {
      const R* src = accumulate ? out + r * ldo + v * L : init ? init + v * L : nullptr;
      if (!src) {
        acc[r][v] = Vec<R>{};
      } else if ((v + 1) * L <= cols) {
        acc[r][v] = *reinterpret_cast<const Vec<R>*>(src);
      } else {
        for (int j = 0; j < L; ++j) edge[j] = v * L + j < cols ? src[j] : R(0);
        acc[r][v] = *reinterpret_cast<const Vec<R>*>(edge);
      }
    }
  for (int k = 0; k < K; ++k) {
    const Vec<R>* bk = reinterpret_cast<const Vec<R>*>(b + k * b_row);
    for (int r = 0; r < RB; ++r) {
      const R x = a[r * ar + k * ak];
      for (int v = 0; v < V; ++v) acc[r][v] += x * bk[v];
    }
  }
  for (int r = 0; r < RB; ++r)
    for (int v = 0; v < V; ++v) {
      R* dst = out + r * ldo + v * L;
      if ((v + 1) * L <= cols) {
        *reinterpret_cast<Vec<R>*>(dst) = acc[r][v];
      } else {
        *reinterpret_cast<Vec<R>*>(edge) = acc[r][v];
        for (int j = 0; j < std::min(L, cols - v * L); ++j) dst[j] = edge[j];
      }
    }
}

// One panel's columns (cols <= kPanel, in V vectors) over all rows: whole
// tiles of kRows, then one tile of the rows left.
template <class R, int V>
void panel_rows(R* out, int64_t ldo, const R* a, int64_t ar, int64_t ak, const R* b, int64_t b_row, int rows,
                int K, const R* init, bool accumulate, int cols) {
  int r = 0;
  for (; r + kRows <= rows; r += kRows)
    tile<R, kRows, V>(out + int64_t(r) * ldo, ldo, a + r * ar, ar, ak, b, b_row, K, init, accumulate, cols);
  auto rest = [&]<int RB>() {
    tile<R, RB, V>(out + int64_t(r) * ldo, ldo, a + r * ar, ar, ak, b, b_row, K, init, accumulate, cols);
  };
  switch (rows - r) {
    case 1: rest.template operator()<1>(); break;
    case 2: rest.template operator()<2>(); break;
    case 3: rest.template operator()<3>(); break;
    case 4: rest.template operator()<4>(); break;
    case 5: rest.template operator()<5>(); break;
    default: break;
  }
}

}  // namespace detail

// B as multiply() reads it: B(k, c) = b[k row + c] in column panels of
// kPanel, panel p starting at b + p panel.
template <class R>
struct Panels {
  const R* b;
  int64_t row, panel;
};

// B(k, c) = b[k bk + c bc] (K x cols) for multiply(): read in place where
// its rows hold whole vectors at unit stride, else packed into `scratch`.
template <class R, class Scratch>
Panels<R> panels_of(const R* b, int64_t bk, int64_t bc, int K, int cols, Scratch& scratch) {
  if (bc == 1 && cols % kLanes<R> == 0) return {b, bk, kPanel<R>};
  scratch.resize(std::size_t(panels_size<R>(K, cols)));
  pack(scratch.data(), b, bk, bc, K, cols);
  return {scratch.data(), kPanel<R>, int64_t(K) * kPanel<R>};
}

// out[r ldo + c] for r < rows, c < cols: init[c] (0 where init is null) plus
// the sum over k < K of A(r, k) B(k, c), or that sum added to out when
// `accumulate`. A(r, k) = a[r ar + k ak]; B from panels_of() (K rows from
// its first).
template <class R>
void multiply(R* out, int64_t ldo, const R* a, int64_t ar, int64_t ak, Panels<R> B, int rows, int K, int cols,
              const R* init, bool accumulate) {
  constexpr int P = kPanel<R>, L = kLanes<R>;
  for (int p = 0; p * P < cols; ++p) {
    const int width = std::min(P, cols - p * P);
    const R* b = B.b + p * B.panel;
    R* o = out + int64_t(p) * P;
    const R* in = init ? init + int64_t(p) * P : nullptr;
    auto run = [&]<int V>() {
      detail::panel_rows<R, V>(o, ldo, a, ar, ak, b, B.row, rows, K, in, accumulate, width);
    };
    // The narrowest tile that covers the panel's columns.
    switch ((width + L - 1) / L) {
      case 1: run.template operator()<1>(); break;
      case 2: run.template operator()<2>(); break;
      case 3: run.template operator()<std::min(3, kVectorsPerTile)>(); break;
      default: run.template operator()<kVectorsPerTile>(); break;
    }
  }
}

// sum_{i < n} term(i) in kLanes running sums, lane j taking i = j mod kLanes
// in order, then the lanes added in order: a fixed order, which the
// compiler vectorizes (a sequential sum it may not reorder).
template <class R, class F>
R sum_of(int n, F term) {
  constexpr int L = kLanes<R>;
  R lanes[L] = {};
  int i = 0;
  for (; i + L <= n; i += L)
    for (int j = 0; j < L; ++j) lanes[j] += term(i + j);
  for (int j = 0; i + j < n; ++j) lanes[j] += term(i + j);
  R s = 0;
  for (int j = 0; j < L; ++j) s += lanes[j];
  return s;
}

}  // namespace routelab::nn::gemm
