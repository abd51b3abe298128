// PaTH's blocked Householder attention on the GPU: the algorithm of
// nn/householder_blocked.cpp (chunks of c steps in UT form, P_n = I - W^T T W,
// scores down the key chunks, transported values up, backward replaying one
// query chunk at a time; its header comment has the algebra), written once
// over a thread-team policy `Team`:
//   - on the GPU a team is one thread block (cuda/householder.cu, BlockTeam);
//   - on the host one thread, or an OpenMP team (tests/test_householder_chunks.cpp
//     runs both against nn::householder_attention_*), so the order, indices,
//     scratch layout and work split of the kernels are checked on a machine
//     without a GPU.
// Team provides rank(), size() and sync() (a barrier for the whole team).
//
// Every step is one team operation on small row-major matrices in memory:
// each output entry is made by one thread, its sum in a fixed order, and the
// operation ends at the team's barrier. So the bytes do not depend on the
// team's size, and no thread reads an entry another thread writes in the same
// operation: a product's output must not overlap its inputs (checked on the
// host, where the tests run), and an elementwise step reads only the entry it
// writes, or entries the same thread wrote. Every multiply-add is an explicit
// fmaf: left to the compiler, whether a * b + c is fused depends on how each
// instantiation inlines and vectorises, and the host's one-thread and OpenMP
// teams (two instantiations) then differ in the last bits.
//
// Work split (cuda/householder.cu): one team builds one chunk; forward gives
// query chunk m of a head to worker m mod workers, each with its own
// workspace; backward is one team per head, its query chunks in order, the key
// chunks' gradients collected over them as on the CPU. No atomics: the same
// bytes on every run.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "base/host_device.h"
#include "cuda/householder_rows.h"  // HouseholderHead
#include "nn/attention.h"

namespace routelab::cuda {

// A matrix view: entry (i, j) at p[i rs + j cs]. Inputs are viewed through it
// too (const_cast at the edge): an operation writes only its output.
struct Mat {
  float* p;
  int rows, cols;
  int64_t rs, cs;
  ROUTELAB_HOST_DEVICE float& operator()(int i, int j) const { return p[i * rs + j * cs]; }
  ROUTELAB_HOST_DEVICE Mat t() const { return {p, cols, rows, cs, rs}; }
  ROUTELAB_HOST_DEVICE Mat cols_from(int64_t c0, int nc) const { return {p + c0 * cs, rows, nc, rs, cs}; }
};

// rows x cols, row-major with leading dimension ld.
ROUTELAB_HOST_DEVICE inline Mat row_major(const float* p, int rows, int cols, int64_t ld) {
  return {const_cast<float*>(p), rows, cols, ld, 1};
}

// Which entries of a product's output are kept; the rest are 0 (assigned) or
// left as they are (added).
enum class Keep { all, strict_upper, upper, lower };

ROUTELAB_HOST_DEVICE inline bool kept(Keep k, int i, int j) {
  switch (k) {
    case Keep::strict_upper: return j > i;
    case Keep::upper: return j >= i;
    case Keep::lower: return j <= i;
    default: return true;
  }
}

#ifndef __CUDA_ARCH__
// The memory a view spans (strides are positive).
inline bool views_overlap(const Mat& a, const Mat& b) {
  if (a.rows == 0 || a.cols == 0 || b.rows == 0 || b.cols == 0) return false;
  const float* a_end = a.p + (a.rows - 1) * a.rs + (a.cols - 1) * a.cs + 1;
  const float* b_end = b.p + (b.rows - 1) * b.rs + (b.cols - 1) * b.cs + 1;
  return a.p < b_end && b.p < a_end;
}
#endif

// f(e) for e = 0 .. n - 1 over the team, then the barrier.
ROUTELAB_EXEC_CHECK_DISABLE
template <class Team, class F>
ROUTELAB_HOST_DEVICE inline void team_each(const Team& team, int64_t n, F&& f) {
  for (int64_t e = team.rank(); e < n; e += team.size()) f(e);
  team.sync();
}

// C = alpha A B, or C += alpha A B when `add`; entries outside `keep` are 0
// (or untouched when adding).
ROUTELAB_EXEC_CHECK_DISABLE
template <class Team>
ROUTELAB_HOST_DEVICE inline void team_product(const Team& team, const Mat& C, const Mat& A, const Mat& B, float alpha,
                                              bool add, Keep keep = Keep::all) {
#ifndef __CUDA_ARCH__
  if (A.rows != C.rows || B.cols != C.cols || A.cols != B.rows)
    throw std::logic_error("team_product: shapes do not chain");
  if (views_overlap(C, A) || views_overlap(C, B)) throw std::logic_error("team_product: output overlaps an input");
#endif
  team_each(team, int64_t(C.rows) * C.cols, [&](int64_t e) {
    const int i = int(e / C.cols), j = int(e % C.cols);
    if (!kept(keep, i, j)) {
      if (!add) C(i, j) = 0.0f;
      return;
    }
    float s = 0.0f;
    for (int k = 0; k < A.cols; ++k) s = fmaf(A(i, k), B(k, j), s);
    C(i, j) = add ? fmaf(alpha, s, C(i, j)) : alpha * s;
  });
}

// C = A, or C += alpha A when `add`.
ROUTELAB_EXEC_CHECK_DISABLE
template <class Team>
ROUTELAB_HOST_DEVICE inline void team_copy(const Team& team, const Mat& C, const Mat& A, bool add = false,
                                           float alpha = 1.0f) {
  team_each(team, int64_t(C.rows) * C.cols, [&](int64_t e) {
    const int i = int(e / C.cols), j = int(e % C.cols);
    C(i, j) = add ? fmaf(alpha, A(i, j), C(i, j)) : A(i, j);
  });
}

// Sizes of one head's chunks and of one worker's workspace, shared by the
// kernels' launches and the host tests. C: steps per chunk, M chunks.
struct ChunkPlan {
  int64_t T;
  int d, C, M;
};
ROUTELAB_HOST_DEVICE inline ChunkPlan chunk_plan(int64_t T, int d, int C) {
  return {T, d, C, int((T + C - 1) / C)};
}
// One chunk: N, T, KW, VW (C x C), TW, TtW, Kt, Vt (C x d), P (d x d).
ROUTELAB_HOST_DEVICE inline std::size_t chunk_floats(const ChunkPlan& p) {
  return 4 * std::size_t(p.C) * p.C + 4 * std::size_t(p.C) * p.d + std::size_t(p.d) * p.d;
}
// One chunk's gradients: dW, dKt, dVt (C x d), dT (C x C), dP (d x d).
ROUTELAB_HOST_DEVICE inline std::size_t chunk_grad_floats(const ChunkPlan& p) {
  return 3 * std::size_t(p.C) * p.d + std::size_t(p.C) * p.C + std::size_t(p.d) * p.d;
}
// A worker: S (C x T) and, backward, dP (C x T); WQ and four temporaries (C x
// C); X, X2, Z, Z2, O and two temporaries (C x d); D (C). Backward adds U and
// acc at every key chunk (M x C x d each) and the head's chunk gradients.
ROUTELAB_HOST_DEVICE inline std::size_t chunk_work_floats(const ChunkPlan& p, bool backward) {
  const std::size_t cc = std::size_t(p.C) * p.C, cd = std::size_t(p.C) * p.d;
  std::size_t n = std::size_t(p.C) * p.T + 5 * cc + 7 * cd + p.C;
  if (backward) n += std::size_t(p.C) * p.T + 2 * std::size_t(p.M) * cd + std::size_t(p.M) * chunk_grad_floats(p);
  return n;
}

// Chunk n of a head: its rows of the inputs and its products in `area`
// (chunk_floats each, chunk n at n chunk_floats).
struct ChunkMats {
  int64_t a;
  int c;
  Mat W, Q, K, V;
  const float* beta;
  Mat N, T, KW, VW, TW, TtW, Kt, Vt, P;
};
ROUTELAB_HOST_DEVICE inline ChunkMats chunk_mats(const ChunkPlan& p, const HouseholderHead& h, float* area, int n) {
  const int64_t a = int64_t(n) * p.C;
  const int c = int(p.T - a < p.C ? p.T - a : p.C), d = p.d, C = p.C;
  float* x = area + std::size_t(n) * chunk_floats(p);
  auto cc = [&](int i) { return row_major(x + std::size_t(i) * C * C, c, c, C); };
  float* y = x + 4 * std::size_t(C) * C;
  auto cd = [&](int i) { return row_major(y + std::size_t(i) * C * d, c, d, d); };
  return {a,
          c,
          row_major(h.w + a * d, c, d, d),
          row_major(h.q + a * d, c, d, d),
          row_major(h.k + a * d, c, d, d),
          row_major(h.v + a * d, c, d, d),
          h.beta + a,
          cc(0),
          cc(1),
          cc(2),
          cc(3),
          cd(0),
          cd(1),
          cd(2),
          cd(3),
          row_major(y + 4 * std::size_t(C) * d, d, d, d)};
}

struct ChunkGrads {
  Mat dW, dKt, dVt, dT, dP;
};
ROUTELAB_HOST_DEVICE inline ChunkGrads chunk_grads(const ChunkPlan& p, float* base, int n, int c) {
  float* x = base + std::size_t(n) * chunk_grad_floats(p);
  const std::size_t cd = std::size_t(p.C) * p.d;
  return {row_major(x, c, p.d, p.d), row_major(x + cd, c, p.d, p.d), row_major(x + 2 * cd, c, p.d, p.d),
          row_major(x + 3 * cd, c, c, p.C), row_major(x + 3 * cd + std::size_t(p.C) * p.C, p.d, p.d, p.d)};
}

// A worker's workspace, carved from `base` (chunk_work_floats of it).
struct ChunkWork {
  float *S, *dP, *WQ, *tmp[4], *X, *X2, *Z, *Z2, *O, *u[2], *D, *U, *acc, *grads;
};
ROUTELAB_HOST_DEVICE inline ChunkWork chunk_work(const ChunkPlan& p, float* base, bool backward) {
  const std::size_t cc = std::size_t(p.C) * p.C, cd = std::size_t(p.C) * p.d, ct = std::size_t(p.C) * p.T;
  ChunkWork w{};
  float* x = base;
  w.S = x, x += ct;
  w.WQ = x, x += cc;
  for (auto& t : w.tmp) t = x, x += cc;
  w.X = x, x += cd;
  w.X2 = x, x += cd;
  w.Z = x, x += cd;
  w.Z2 = x, x += cd;
  w.O = x, x += cd;
  for (auto& u : w.u) u = x, x += cd;
  w.D = x, x += p.C;
  if (backward) {
    w.dP = x, x += ct;
    w.U = x, x += std::size_t(p.M) * cd;
    w.acc = x, x += std::size_t(p.M) * cd;
    w.grads = x;
  }
  return w;
}

// Chunk n's products: N = I + diag(beta) striu(W W^T), T = N^{-1} diag(beta),
// TW, TtW, P = I - W^T T W, KW = striu(K W^T), Kt = K - KW T W (the keys
// carried to the chunk's last step), and the same for the values.
ROUTELAB_EXEC_CHECK_DISABLE
template <class Team>
ROUTELAB_HOST_DEVICE inline void chunk_build(const Team& team, const ChunkPlan& p, const HouseholderHead& h, float* area,
                                             int n, bool values) {
  const ChunkMats ch = chunk_mats(p, h, area, n);
  const int c = ch.c;
  team_product(team, ch.N, ch.W, ch.W.t(), 1.0f, false, Keep::strict_upper);
  team_each(team, int64_t(c) * c, [&](int64_t e) {
    const int i = int(e / c), j = int(e % c);
    if (j > i) ch.N(i, j) *= ch.beta[i];
    if (j == i) ch.N(i, j) = 1.0f;
  });
  // T column by column by back substitution (N is unit upper triangular).
  team_each(team, c, [&](int64_t col) {
    const int i = int(col);
    for (int r = c - 1; r > i; --r) ch.T(r, i) = 0.0f;
    ch.T(i, i) = ch.beta[i];
    for (int r = i - 1; r >= 0; --r) {
      float acc = 0.0f;
      for (int s = r + 1; s <= i; ++s) acc = fmaf(ch.N(r, s), ch.T(s, i), acc);
      ch.T(r, i) = -acc;
    }
  });
  team_product(team, ch.TW, ch.T, ch.W, 1.0f, false);
  team_product(team, ch.TtW, ch.T.t(), ch.W, 1.0f, false);
  team_product(team, ch.P, ch.W.t(), ch.TW, -1.0f, false);
  team_each(team, p.d, [&](int64_t i) { ch.P(int(i), int(i)) += 1.0f; });
  team_product(team, ch.KW, ch.K, ch.W.t(), 1.0f, false, Keep::strict_upper);
  team_copy(team, ch.Kt, ch.K);
  team_product(team, ch.Kt, ch.KW, ch.TW, -1.0f, true);
  if (values) {
    team_product(team, ch.VW, ch.V, ch.W.t(), 1.0f, false, Keep::strict_upper);
    team_copy(team, ch.Vt, ch.V);
    team_product(team, ch.Vt, ch.VW, ch.TW, -1.0f, true);
  }
}

// Query chunk m's forward into w.O (c x d): raw scores down the key chunks,
// the chunk's own, softmax (w.S holds the probabilities after), then values
// up the key chunks. With `keep` (backward), U[n] (the queries carried to the
// end of key chunk n) and acc[n] (the values gathered through chunk n).
ROUTELAB_EXEC_CHECK_DISABLE
template <class Team>
ROUTELAB_HOST_DEVICE inline void query_chunk_forward(const Team& team, const ChunkPlan& p, const HouseholderHead& h,
                                                     float* area, int m, bool values, bool keep, const ChunkWork& w) {
  const int d = p.d, C = p.C;
  const ChunkMats ch = chunk_mats(p, h, area, m);
  const int rows = ch.c;
  const int64_t a = ch.a, width = a + rows;
  const Mat WQ = row_major(w.WQ, rows, rows, C), S = row_major(w.S, rows, int(width), p.T);
  const Mat O = row_major(w.O, rows, d, d);
  Mat X = row_major(w.X, rows, d, d), X2 = row_major(w.X2, rows, d, d);
  auto U = [&](int n) { return row_major(w.U + std::size_t(n) * C * d, rows, d, d); };
  auto acc = [&](int n) { return row_major(w.acc + std::size_t(n) * C * d, rows, d, d); };
  team_product(team, WQ, ch.W, ch.Q.t(), 1.0f, false, Keep::upper);
  if (m > 0) {
    team_copy(team, X, ch.Q);  // carried to the chunk's start: Q - triu(W Q^T)^T T^T W
    team_product(team, X, WQ.t(), ch.TtW, -1.0f, true);
    for (int n = m - 1; n >= 0; --n) {
      const ChunkMats kn = chunk_mats(p, h, area, n);
      team_product(team, S.cols_from(kn.a, kn.c), X, kn.Kt.t(), 1.0f, false);
      if (keep) team_copy(team, U(n), X);
      if (n > 0) {
        team_product(team, X2, X, kn.P.t(), 1.0f, false);
        const Mat t = X;
        X = X2, X2 = t;
      }
    }
  }
  // In chunk: q_i.k_j - (striu(K W^T) T triu(W Q^T))_ji for j <= i.
  const Mat M1T = row_major(w.tmp[0], rows, rows, C), Sm = S.cols_from(a, rows);
  team_product(team, M1T, ch.KW, ch.T, 1.0f, false);
  team_product(team, Sm, ch.Q, ch.K.t(), 1.0f, false, Keep::lower);
  team_product(team, Sm, WQ.t(), M1T.t(), -1.0f, true, Keep::lower);
  // Each row's causal softmax, one thread a row; a forget gate adds
  // cum_i - cum_j to the scaled scores.
  team_each(team, rows, [&](int64_t l) {
    const int i = int(l);
    const int64_t n = a + i + 1;
    float mx = -INFINITY, sum = 0.0f;
    for (int64_t j = 0; j < n; ++j) {
      float& x = S(i, int(j));
      x = h.cum ? fmaf(x, h.scale, h.cum[a + i] - h.cum[j]) : x * h.scale;
      mx = fmaxf(mx, x);
    }
    for (int64_t j = 0; j < n; ++j) sum += (S(i, int(j)) = expf(S(i, int(j)) - mx));
    for (int64_t j = 0; j < n; ++j) S(i, int(j)) /= sum;
    for (int64_t j = n; j < width; ++j) S(i, int(j)) = 0.0f;
  });
  if (!values) {
    team_product(team, O, S, row_major(h.v, int(width), d, d), 1.0f, false);
    return;
  }
  Mat Z = row_major(w.Z, rows, d, d), Z2 = row_major(w.Z2, rows, d, d);
  for (int n = 0; n < m; ++n) {
    const ChunkMats kn = chunk_mats(p, h, area, n);
    team_product(team, Z2, S.cols_from(kn.a, kn.c), kn.Vt, 1.0f, false);
    if (n > 0) team_product(team, Z2, Z, kn.P, 1.0f, true);
    const Mat t = Z;
    Z = Z2, Z2 = t;
    if (keep) team_copy(team, acc(n), Z);
  }
  // In chunk: S V - ((S striu(V W^T) T) masked to s <= i) W.
  const Mat VT = row_major(w.tmp[0], rows, rows, C), Y = row_major(w.tmp[1], rows, rows, C);
  team_product(team, VT, ch.VW, ch.T, 1.0f, false);
  team_product(team, Y, Sm, VT, 1.0f, false, Keep::lower);
  team_product(team, O, Sm, ch.V, 1.0f, false);
  team_product(team, O, Y, ch.W, -1.0f, true);
  if (m > 0) {  // the values from before the chunk, carried through its steps
    const Mat G = row_major(w.tmp[2], rows, rows, C);
    team_copy(team, O, Z, true);
    team_product(team, G, ch.TtW, Z.t(), 1.0f, false, Keep::upper);
    team_product(team, O, G.t(), ch.W, -1.0f, true);
  }
}

// Query chunk m's forward, written to o (the head's T x d output).
ROUTELAB_EXEC_CHECK_DISABLE
template <class Team>
ROUTELAB_HOST_DEVICE inline void chunk_forward(const Team& team, const ChunkPlan& p, const HouseholderHead& h, float* area,
                                               int m, bool values, const ChunkWork& w, float* o) {
  query_chunk_forward(team, p, h, area, m, values, false, w);
  const ChunkMats ch = chunk_mats(p, h, area, m);
  team_copy(team, row_major(o + ch.a * p.d, ch.c, p.d, p.d), row_major(w.O, ch.c, p.d, p.d));
}

// Adds d loss / d (x carried to the chunk's end) dXt back through Xt = X - E T W,
// E = striu(X W^T): into dX and the chunk's dT, dW.
ROUTELAB_EXEC_CHECK_DISABLE
template <class Team>
ROUTELAB_HOST_DEVICE inline void carry_to_end_backward(const Team& team, const ChunkMats& ch, const ChunkGrads& g,
                                                       const Mat& dX, const Mat& X, const Mat& E, const Mat& dXt,
                                                       const ChunkWork& w, int C) {
  const Mat dE = row_major(w.tmp[0], ch.c, ch.c, C), dTW = row_major(w.u[0], ch.c, dX.cols, dX.cols);
  team_product(team, dE, dXt, ch.TW.t(), -1.0f, false, Keep::strict_upper);
  team_product(team, dTW, E.t(), dXt, -1.0f, false);
  team_product(team, g.dT, dTW, ch.W.t(), 1.0f, true);
  team_product(team, g.dW, ch.T.t(), dTW, 1.0f, true);
  team_copy(team, dX, dXt, true);
  team_product(team, dX, dE, ch.W, 1.0f, true);
  team_product(team, g.dW, dE.t(), X, 1.0f, true);
}

// d loss / d w and d beta of chunk n from its dP, dT and dW: through
// P = I - W^T T W, T = N^{-1} diag(beta), N = I + diag(beta) striu(W W^T).
ROUTELAB_EXEC_CHECK_DISABLE
template <class Team>
ROUTELAB_HOST_DEVICE inline void chunk_steps_backward(const Team& team, const ChunkPlan& p, const ChunkMats& ch,
                                                      const ChunkGrads& g, const ChunkWork& w, float* dw,
                                                      float* dbeta) {
  const int c = ch.c, d = p.d, C = p.C;
  const Mat WdP = row_major(w.u[0], c, d, d);
  team_product(team, WdP, ch.W, g.dP, 1.0f, false);
  team_product(team, g.dT, WdP, ch.W.t(), -1.0f, true);
  team_product(team, g.dW, ch.TW, g.dP.t(), -1.0f, true);
  team_product(team, g.dW, ch.TtW, g.dP, -1.0f, true);
  // X = N^{-T} dT (upper part of dT only: T is upper triangular), column by
  // column by forward substitution (N^T is unit lower triangular).
  const Mat X = row_major(w.tmp[0], c, c, C), dN = row_major(w.tmp[1], c, c, C);
  const Mat S = row_major(w.tmp[2], c, c, C), dS = row_major(w.tmp[3], c, c, C);
  team_each(team, c, [&](int64_t col) {
    const int j = int(col);
    for (int r = 0; r < c; ++r) {
      float x = r <= j ? g.dT(r, j) : 0.0f;
      for (int s = 0; s < r; ++s) x = fmaf(-ch.N(s, r), X(s, j), x);
      X(r, j) = x;
    }
  });
  team_product(team, dN, X, ch.T.t(), -1.0f, false, Keep::strict_upper);
  team_product(team, S, ch.W, ch.W.t(), 1.0f, false, Keep::strict_upper);
  team_each(team, c, [&](int64_t row) {
    const int r = int(row);
    float db = X(r, r);
    for (int j = r + 1; j < c; ++j) db = fmaf(dN(r, j), S(r, j), db);
    dbeta[ch.a + r] += db;
    for (int j = 0; j < c; ++j) dS(r, j) = j > r ? ch.beta[r] * dN(r, j) : 0.0f;
  });
  team_each(team, int64_t(c) * c, [&](int64_t e) {  // dN is free: dS + dS^T
    const int i = int(e / c), j = int(e % c);
    dN(i, j) = dS(i, j) + dS(j, i);
  });
  team_product(team, g.dW, dN, ch.W, 1.0f, true);
  team_copy(team, row_major(dw + ch.a * d, c, d, d), g.dW, true);
}

// Adds one head's d loss / d q, k, v, w, beta (dq .. dbeta: the head's blocks)
// given d_o, and d loss / d cum into dcum (the head's T) under a forget gate;
// the chunks are built in `area`, w.grads start at 0.
ROUTELAB_EXEC_CHECK_DISABLE
template <class Team>
ROUTELAB_HOST_DEVICE inline void chunk_head_backward(const Team& team, const ChunkPlan& p, const HouseholderHead& h,
                                                     float* area, bool values, const ChunkWork& w, const float* d_o,
                                                     float* dq, float* dk, float* dv, float* dw, float* dbeta,
                                                     float* dcum = nullptr) {
  const int d = p.d, C = p.C;
  for (int m = 0; m < p.M; ++m) {
    query_chunk_forward(team, p, h, area, m, values, true, w);
    const ChunkMats ch = chunk_mats(p, h, area, m);
    const ChunkGrads g = chunk_grads(p, w.grads, m, ch.c);
    const int rows = ch.c;
    const int64_t a = ch.a, width = a + rows;
    const Mat S = row_major(w.S, rows, int(width), p.T), dP = row_major(w.dP, rows, int(width), p.T);
    const Mat Sm = S.cols_from(a, rows), dPm = dP.cols_from(a, rows);
    const Mat dO = row_major(d_o + a * d, rows, d, d), O = row_major(w.O, rows, d, d);
    const Mat dqm = row_major(dq + a * d, rows, d, d), dkm = row_major(dk + a * d, rows, d, d);
    const Mat dvm = row_major(dv + a * d, rows, d, d), WQ = row_major(w.WQ, rows, rows, C);
    auto tmp = [&](int i) { return row_major(w.tmp[i], rows, rows, C); };
    auto U = [&](int n) { return row_major(w.U + std::size_t(n) * C * d, rows, d, d); };
    auto acc = [&](int n) { return row_major(w.acc + std::size_t(n) * C * d, rows, d, d); };
    Mat dX = row_major(w.X, rows, d, d), dX2 = row_major(w.X2, rows, d, d);
    // D_i = dO_i . o_i: the softmax's row correction.
    team_each(team, rows, [&](int64_t l) {
      float s = 0.0f;
      for (int c = 0; c < d; ++c) s = fmaf(dO(int(l), c), O(int(l), c), s);
      w.D[l] = s;
    });
    if (values) {
      // In chunk: O = S V - Y W, Y = lower(S striu(V W^T) T).
      team_product(team, tmp(0), Sm, ch.VW, 1.0f, false);                   // S M1
      team_product(team, tmp(1), tmp(0), ch.T, 1.0f, false, Keep::lower);   // Y
      team_product(team, dPm, dO, ch.V.t(), 1.0f, false);
      team_product(team, dvm, Sm.t(), dO, 1.0f, true);
      team_product(team, tmp(2), dO, ch.W.t(), -1.0f, false, Keep::lower);  // dY
      team_product(team, g.dW, tmp(1).t(), dO, -1.0f, true);
      team_product(team, tmp(3), tmp(2), ch.T.t(), 1.0f, false);
      team_product(team, dPm, tmp(3), ch.VW.t(), 1.0f, true);
      team_product(team, tmp(1), Sm.t(), tmp(2), 1.0f, false);
      team_product(team, tmp(3), tmp(1), ch.T.t(), 1.0f, false, Keep::strict_upper);  // dM1
      team_product(team, g.dT, tmp(0).t(), tmp(2), 1.0f, true);
      team_product(team, dvm, tmp(3), ch.W, 1.0f, true);
      team_product(team, g.dW, tmp(3).t(), ch.V, 1.0f, true);
      if (m > 0) {
        // O += Y0 - triu(T^T W Y0^T)^T W, Y0 = acc[m - 1]: into dX = d loss / d Y0.
        const Mat Y0 = acc(m - 1);
        team_product(team, tmp(0), ch.W, Y0.t(), 1.0f, false);                    // H
        team_product(team, tmp(1), ch.TtW, Y0.t(), 1.0f, false, Keep::upper);     // G
        team_product(team, tmp(2), ch.W, dO.t(), -1.0f, false, Keep::upper);      // dG
        team_product(team, g.dW, tmp(1), dO, -1.0f, true);
        team_product(team, tmp(3), ch.T, tmp(2), 1.0f, false);                    // dH
        team_product(team, g.dT, tmp(0), tmp(2).t(), 1.0f, true);
        team_product(team, g.dW, tmp(3), Y0, 1.0f, true);
        team_copy(team, dX, dO);
        team_product(team, dX, tmp(3).t(), ch.W, 1.0f, true);
        for (int n = m - 1; n >= 0; --n) {
          const ChunkMats kn = chunk_mats(p, h, area, n);
          const ChunkGrads gn = chunk_grads(p, w.grads, n, kn.c);
          team_product(team, dP.cols_from(kn.a, kn.c), dX, kn.Vt.t(), 1.0f, false);
          team_product(team, gn.dVt, S.cols_from(kn.a, kn.c).t(), dX, 1.0f, true);
          if (n > 0) {
            team_product(team, gn.dP, acc(n - 1).t(), dX, 1.0f, true);
            team_product(team, dX2, dX, kn.P.t(), 1.0f, false);
            const Mat t = dX;
            dX = dX2, dX2 = t;
          }
        }
      }
    } else {
      const Mat V = row_major(h.v, int(width), d, d), dV = row_major(dv, int(width), d, d);
      team_product(team, dP, dO, V.t(), 1.0f, false);
      team_product(team, dV, S.t(), dO, 1.0f, true);
    }
    // dS (raw scores) = scale p (dp - D), in place of dP. Under a forget
    // gate p (dp - D) is d loss / d (cum_i - cum_j) first: its row sums go to
    // cum_i, its column sums from cum_j (one thread a row, then a column).
    if (h.cum) {
      team_each(team, int64_t(rows) * width, [&](int64_t e) {
        const int i = int(e / width), j = int(e % width);
        dP(i, j) = S(i, j) * (dP(i, j) - w.D[i]);
      });
      team_each(team, rows, [&](int64_t i) {
        float s = 0.0f;
        for (int64_t j = 0; j < width; ++j) s += dP(int(i), int(j));
        dcum[a + i] += s;
      });
      team_each(team, width, [&](int64_t j) {
        float s = 0.0f;
        for (int i = 0; i < rows; ++i) s += dP(i, int(j));
        dcum[j] -= s;
      });
    }
    team_each(team, int64_t(rows) * width, [&](int64_t e) {
      const int i = int(e / width), j = int(e % width);
      dP(i, j) = h.cum ? h.scale * dP(i, j) : h.scale * S(i, j) * (dP(i, j) - w.D[i]);
    });
    // In chunk: s = Q K^T - (M1 T M2)^T, M1 = striu(K W^T), M2 = triu(W Q^T).
    const Mat D = dPm.t();  // (j, i)
    team_product(team, dkm, D, ch.Q, 1.0f, true);
    team_product(team, dqm, dPm, ch.K, 1.0f, true);
    team_product(team, tmp(0), D, WQ.t(), 1.0f, false);
    team_product(team, tmp(1), tmp(0), ch.T.t(), -1.0f, false, Keep::strict_upper);  // dM1
    team_product(team, tmp(2), ch.KW.t(), D, 1.0f, false);
    team_product(team, g.dT, tmp(2), WQ.t(), -1.0f, true);
    team_product(team, tmp(3), ch.T.t(), tmp(2), -1.0f, false, Keep::upper);  // dM2
    team_product(team, dkm, tmp(1), ch.W, 1.0f, true);
    team_product(team, g.dW, tmp(1).t(), ch.K, 1.0f, true);
    team_product(team, g.dW, tmp(3), ch.Q, 1.0f, true);
    team_product(team, dqm, tmp(3).t(), ch.W, 1.0f, true);
    if (m > 0) {
      // Scores down the key chunks: dX = d loss / d (queries at the end of
      // key chunk n - 1), then back through the chunk's own steps.
      for (int n = 0; n < m; ++n) {
        const ChunkMats kn = chunk_mats(p, h, area, n);
        const ChunkGrads gn = chunk_grads(p, w.grads, n, kn.c);
        const Mat dSn = dP.cols_from(kn.a, kn.c);
        team_product(team, gn.dKt, dSn.t(), U(n), 1.0f, true);
        team_product(team, dX2, dSn, kn.Kt, 1.0f, false);
        if (n > 0) {
          team_product(team, gn.dP, dX.t(), U(n), 1.0f, true);
          team_product(team, dX2, dX, kn.P, 1.0f, true);
        }
        const Mat t = dX;
        dX = dX2, dX2 = t;
      }
      // U = Q - E^T T^T W, E = triu(W Q^T).
      const Mat dF = row_major(w.u[1], rows, d, d);
      team_product(team, tmp(0), ch.TtW, dX.t(), -1.0f, false, Keep::upper);  // dE
      team_product(team, dF, WQ, dX, -1.0f, false);
      team_product(team, g.dT, ch.W, dF.t(), 1.0f, true);
      team_product(team, g.dW, ch.T, dF, 1.0f, true);
      team_product(team, g.dW, tmp(0), ch.Q, 1.0f, true);
      team_copy(team, dqm, dX, true);
      team_product(team, dqm, tmp(0).t(), ch.W, 1.0f, true);
    }
  }
  for (int n = 0; n < p.M; ++n) {
    const ChunkMats kn = chunk_mats(p, h, area, n);
    const ChunkGrads gn = chunk_grads(p, w.grads, n, kn.c);
    carry_to_end_backward(team, kn, gn, row_major(dk + kn.a * d, kn.c, d, d), kn.K, kn.KW, gn.dKt, w, C);
    if (values)
      carry_to_end_backward(team, kn, gn, row_major(dv + kn.a * d, kn.c, d, d), kn.V, kn.VW, gn.dVt, w, C);
    chunk_steps_backward(team, p, kn, gn, w, dw, dbeta);
  }
}

#ifndef __CUDA_ARCH__
// The host policy: one thread.
struct HostTeam {
  int rank() const { return 0; }
  int size() const { return 1; }
  void sync() const {}
};
#endif

}  // namespace routelab::cuda
