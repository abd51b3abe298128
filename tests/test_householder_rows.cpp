// The GPU's Householder row algorithm (cuda/householder_rows.h), run on the
// host with HostRowOps in place of a warp: forward and every gradient against
// nn/householder.h's CPU path in float, with the rows of each head split over
// several workers and the workers' partial gradients summed as the GPU's
// reduction kernel does. This checks the kernels' order, indices, scratch
// layout and partial sums without a GPU; only the warp policy (lanes,
// shuffles) is left to tests/test_gpu_attention.cpp.
// Tolerance (RMS difference over RMS reference): 1e-5, float dots summed in
// another order over up to T terms (measured: at most 4.4e-7 here, 1.4e-6 at
// T = 600, hd = 128, five workers); a planted error (value transport switched)
// must exceed it 100 times.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cuda/householder_rows.h"
#include "householder_cases.h"
#include "nn/householder.h"

namespace {

using namespace routelab;
using routelab::nn::AttentionShape;

using Inputs = routelab::testing::HouseholderInputs;
using Grads = routelab::testing::HouseholderGrads;
using routelab::testing::worst_error;

// The kernels' work on the host: worker `worker` of head bh takes rows
// worker, worker + workers, ...; each worker has its own scratch and partials.
Grads rows_on_host(const Inputs& in, bool values, int workers) {
  const AttentionShape& s = in.s;
  const std::size_t per_head = std::size_t(s.T) * s.hd;
  const cuda::HostRowOps ops{s.hd};
  Grads g = routelab::testing::householder_zeros(in);
  const std::size_t fwd_floats = cuda::householder_work_floats(s.T, s.hd, false);
  const std::size_t floats = cuda::householder_work_floats(s.T, s.hd, true);
  for (int64_t bh = 0; bh < int64_t(s.B) * s.H; ++bh) {
    const cuda::HouseholderHead h =
        cuda::householder_head(in.q.data(), in.k.data(), in.v.data(), in.w.data(), in.beta.data(), bh, s);
    std::vector<float> fwd(fwd_floats * workers), work(floats * workers, 0.0f);
    for (int worker = 0; worker < workers; ++worker) {
      const cuda::HouseholderWork wk = cuda::householder_work(work.data() + worker * floats, s.T, s.hd, true);
      for (int64_t i = worker; i < s.T; i += workers) {
        const std::size_t row = (bh * s.T + i) * s.hd;
        cuda::householder_row_forward(ops, h, i, values, fwd.data() + worker * fwd_floats, g.o.data() + row);
        cuda::householder_row_backward(ops, h, i, values, in.d_o.data() + row, g.dq.data() + row, wk);
      }
    }
    const cuda::HouseholderWork first = cuda::householder_work(work.data(), s.T, s.hd, true);
    for (std::size_t r = 0; r < per_head; ++r) {
      cuda::householder_partials_sum(g.dk.data() + bh * per_head, first.dk, workers, floats, r);
      cuda::householder_partials_sum(g.dv.data() + bh * per_head, first.dv, workers, floats, r);
      cuda::householder_partials_sum(g.dw.data() + bh * per_head, first.dw, workers, floats, r);
    }
    for (int64_t r = 0; r < s.T; ++r)
      cuda::householder_partials_sum(g.dbeta.data() + bh * s.T, first.dbeta, workers, floats, std::size_t(r));
  }
  return g;
}

Grads cpu_reference(const Inputs& in, bool values) {
  return routelab::testing::householder_cpu(in, values, nn::HouseholderPath::blocked);
}

// Lengths that are not multiples of the worker count; head widths below,
// at and past one warp's 32 lanes (the GPU's 1, 2 and 4 coordinates a lane).
const AttentionShape kShapes[] = {{2, 13, 2, 8}, {1, 37, 1, 32}, {1, 21, 2, 48}};

TEST(householder_rows, host_run_of_the_gpu_rows_matches_the_cpu) {
  for (const AttentionShape& s : kShapes)
    for (bool reflections : {false, true})
      for (bool values : {false, true})
        for (int workers : {1, 3, 4}) {
          const Inputs in = routelab::testing::householder_inputs(s, reflections, 7);
          worst_error(rows_on_host(in, values, workers), cpu_reference(in, values),
                      "T " + std::to_string(s.T) + " hd " + std::to_string(s.hd) + " reflections " +
                          std::to_string(reflections) + " values " + std::to_string(values) + " workers " +
                          std::to_string(workers),
                      kHouseholderTolerance);
        }
}

// Planted error: the rows run without value transport against a CPU with it
// (and the converse) must miss by far more than the tolerance.
TEST(householder_rows, planted_error_value_transport_switched_fails) {
  const Inputs in = routelab::testing::householder_inputs(kShapes[0], false, 7);
  for (bool values : {false, true})
    EXPECT_GT(worst_error(rows_on_host(in, !values, 3), cpu_reference(in, values), "planted", 0),
              100 * kHouseholderTolerance);
}

}  // namespace
