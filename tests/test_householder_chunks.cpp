// The GPU's blocked Householder algorithm (cuda/householder_chunks.h), run on
// the host: forward and every gradient against nn/householder.h's tiled
// reference in float, with the kernels' work split (one team a chunk to build
// them, query chunks over several forward workers, one team a head backward)
// and their scratch layout. The team is one thread, or an OpenMP team of
// three standing for a thread block: its bytes must equal the one thread's
// (each entry is one thread's sum in a fixed order), and a missing barrier
// would show as a race here. Lengths below one chunk, at a ragged end and over
// many chunks; both modes; with and without value transport. Only the block
// policy (cuda/householder.cu's BlockTeam) is left to
// tests/test_gpu_householder.cpp.
// Tolerance (RMS difference over RMS reference): 1e-5, as for the CPU's own
// blocked path against the tiles (nn_householder): float sums in another
// order (measured: at most 8.7e-7 over these cases). A planted error (value
// transport switched) must exceed it 100 times.
#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cuda/householder_chunks.h"
#include "householder_cases.h"
#include "nn/householder.h"

namespace {

using namespace routelab;
using routelab::nn::AttentionShape;

// A team of OpenMP threads, as a thread block on the GPU.
struct OmpTeam {
  int rank() const { return omp_get_thread_num(); }
  int size() const { return omp_get_num_threads(); }
  void sync() const {
#pragma omp barrier
  }
};

using Inputs = routelab::testing::HouseholderInputs;
using Grads = routelab::testing::HouseholderGrads;
using routelab::testing::worst_error;

// f(team) on one host thread, or on an OpenMP team of `threads`.
template <class F>
void on_team(int threads, F&& f) {
  if (threads == 1) return f(cuda::HostTeam{});
#pragma omp parallel num_threads(threads)
  f(OmpTeam{});
}

// The kernels' work on the host: chunks built one team each; query chunk m to
// forward worker m mod workers, each with its own workspace; backward one
// team a head, on chunks built again and gradients starting at 0. With a
// forget gate's cum (B, H, T), its gradient goes to dcum.
Grads chunks_on_host(const Inputs& in, bool values, int C, int workers, int threads,
                     const std::vector<float>& cum = {}, std::vector<float>* dcum = nullptr) {
  const AttentionShape& s = in.s;
  const cuda::ChunkPlan p = cuda::chunk_plan(s.T, s.hd, C);
  Grads g = routelab::testing::householder_zeros(in);
  for (int64_t bh = 0; bh < int64_t(s.B) * s.H; ++bh) {
    const cuda::HouseholderHead h = cuda::householder_head(in.q.data(), in.k.data(), in.v.data(), in.w.data(),
                                                           in.beta.data(), bh, s, cum.empty() ? nullptr : cum.data());
    const int64_t at = bh * s.T * s.hd;
    std::vector<float> area(p.M * cuda::chunk_floats(p), NAN);
    for (int n = 0; n < p.M; ++n)
      on_team(threads, [&](const auto& team) { cuda::chunk_build(team, p, h, area.data(), n, values); });
    for (int worker = 0; worker < workers; ++worker) {
      std::vector<float> work(cuda::chunk_work_floats(p, false), NAN);
      const cuda::ChunkWork wk = cuda::chunk_work(p, work.data(), false);
      for (int m = worker; m < p.M; m += workers)
        on_team(threads,
                [&](const auto& team) { cuda::chunk_forward(team, p, h, area.data(), m, values, wk, g.o.data() + at); });
    }
    std::vector<float> area2(area.size(), NAN), work(cuda::chunk_work_floats(p, true), NAN);
    const cuda::ChunkWork wk = cuda::chunk_work(p, work.data(), true);
    std::fill(wk.grads, work.data() + work.size(), 0.0f);
    on_team(threads, [&](const auto& team) {
      for (int n = 0; n < p.M; ++n) cuda::chunk_build(team, p, h, area2.data(), n, values);
      cuda::chunk_head_backward(team, p, h, area2.data(), values, wk, in.d_o.data() + at, g.dq.data() + at,
                                g.dk.data() + at, g.dv.data() + at, g.dw.data() + at, g.dbeta.data() + bh * s.T,
                                dcum ? dcum->data() + bh * s.T : nullptr);
    });
  }
  return g;
}

Grads tiles_reference(const Inputs& in, bool values) {
  return routelab::testing::householder_cpu(in, values, nn::HouseholderPath::tiles);
}

struct Case {
  AttentionShape s;
  int C;
};
// T below one chunk (13 < 16), ragged ends (13 = 3 x 4 + 1, 37, 100), many
// chunks (100 / 8), the model's chunk at 100, and head widths past the
// chunk size (hd = 48 > C).
const Case kCases[] = {{{2, 13, 2, 8}, 16}, {{2, 13, 2, 8}, 4},   {{1, 37, 1, 32}, 16},
                       {{1, 100, 1, 16}, 8}, {{1, 100, 2, 32}, nn::householder_chunk(100)}, {{1, 21, 1, 48}, 8}};

std::string describe(const Case& c, bool reflections, bool values, int workers) {
  return "T " + std::to_string(c.s.T) + " hd " + std::to_string(c.s.hd) + " C " + std::to_string(c.C) +
         (reflections ? " reflections" : " path beta") + (values ? " values" : "") + " workers " +
         std::to_string(workers);
}

TEST(householder_chunks, host_run_of_the_gpu_blocked_path_matches_the_tiles) {
  for (const Case& c : kCases)
    for (bool reflections : {false, true})
      for (bool values : {false, true}) {
        const Inputs in = routelab::testing::householder_inputs(c.s, reflections, 11);
        const Grads want = tiles_reference(in, values);
        for (int workers : {1, 3})
          worst_error(chunks_on_host(in, values, c.C, workers, 1), want,
                      describe(c, reflections, values, workers), kHouseholderTolerance);
      }
}

// Three OpenMP threads as one team: the same bytes as one thread.
TEST(householder_chunks, a_team_of_threads_gives_the_bytes_of_one) {
  for (const Case& c : {kCases[1], kCases[3], kCases[5]})
    for (bool values : {false, true}) {
      const Inputs in = routelab::testing::householder_inputs(c.s, false, 12);
      const Grads one = chunks_on_host(in, values, c.C, 2, 1), team = chunks_on_host(in, values, c.C, 2, 3);
      for (int x = 0; x < 6; ++x)
        EXPECT_TRUE(routelab::testing::householder_result(one, x) == routelab::testing::householder_result(team, x))
            << describe(c, false, values, 2) << ": " << routelab::testing::kHouseholderResults[x];
    }
}

// A forget gate's bias (path_qk_forget) against the CPU's blocked path with
// the same chunk size, o, every gradient and dcum; one thread and a team of
// three give the same bytes; dcum sums to 0 over a head, which a dcum
// missing either share of the bias (cum_i's or cum_j's) would not.
TEST(householder_chunks, a_forget_gates_bias_matches_the_cpu) {
  for (const Case& c : {kCases[0], kCases[3], kCases[5]})
    for (bool values : {false, true}) {
      const Inputs in = routelab::testing::householder_inputs(c.s, false, 13);
      Stream rs(14, 0);
      const std::size_t n = in.beta.size();
      std::vector<float> cum(n);
      for (std::size_t i = 0; i < n; ++i)
        cum[i] = (i % c.s.T ? cum[i - 1] : 0.0f) - float(0.4 * std::abs(rs.normal()));
      Grads want = routelab::testing::householder_zeros(in);
      nn::HouseholderCache<float>* const no_cache = nullptr;
      std::vector<float> want_dcum(n, 0.0f), dcum(n, 0.0f), team_dcum(n, 0.0f);
      nn::householder_attention_forward(want.o.data(), in.q.data(), in.k.data(), in.v.data(), in.w.data(),
                                        in.beta.data(), values, c.s, nn::HouseholderPath::blocked, c.C, no_cache,
                                        cum.data());
      nn::householder_attention_backward(want.dq.data(), want.dk.data(), want.dv.data(), want.dw.data(),
                                         want.dbeta.data(), in.d_o.data(), in.q.data(), in.k.data(), in.v.data(),
                                         in.w.data(), in.beta.data(), values, c.s, nn::HouseholderPath::blocked, c.C,
                                         no_cache, cum.data(), want_dcum.data());
      const std::string where = describe(c, false, values, 2) + " forget gate";
      const Grads got = chunks_on_host(in, values, c.C, 2, 1, cum, &dcum);
      worst_error(got, want, where, kHouseholderTolerance);
      EXPECT_LT(routelab::testing::rms_relative_error(dcum, want_dcum), kHouseholderTolerance) << where << ": dcum";
      const Grads team = chunks_on_host(in, values, c.C, 2, 3, cum, &team_dcum);
      EXPECT_TRUE(team.dq == got.dq && team.o == got.o && team_dcum == dcum) << where << ": a team of three";
      // d loss / d cum sums to 0 over each head: the bias is a difference,
      // so a constant added to a head's cum changes nothing.
      for (int64_t bh = 0; bh < int64_t(c.s.B) * c.s.H; ++bh) {
        double total = 0, scale = 0;
        for (int64_t i = 0; i < c.s.T; ++i) total += dcum[bh * c.s.T + i], scale += std::abs(dcum[bh * c.s.T + i]);
        EXPECT_LT(std::abs(total), 1e-5 * scale) << where << ": dcum's sum over head " << bh;
      }
    }
}

// Planted error: the chunks without value transport against a reference with
// it (and the converse) must miss by far more than the tolerance.
TEST(householder_chunks, planted_error_value_transport_switched_fails) {
  const Inputs in = routelab::testing::householder_inputs(kCases[3].s, false, 11);
  for (bool values : {false, true})
    EXPECT_GT(worst_error(chunks_on_host(in, !values, kCases[3].C, 1, 1), tiles_reference(in, values), "planted", 0),
              100 * kHouseholderTolerance);
}

}  // namespace
