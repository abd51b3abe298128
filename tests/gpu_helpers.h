// What the GPU tests share: a fixture that skips without a CUDA device,
// random inputs, device copies, and the one error measure every comparison
// uses: RMS of the difference over RMS of the CPU reference (scale-aware, per
// quantity, as in fla's kernel tests).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/buffer.h"
#include "cuda/device.h"
#include "rms_error.h"
#include "rng/stream.h"

namespace routelab::testing {

using cuda::DeviceBuffer;

// Every GPU test derives from this: without a device it reports SKIPPED
// (ctest counts it as skipped, not failed) and says why.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::cuda_available()) GTEST_SKIP() << "no CUDA device: " << cuda::cuda_unavailable_reason();
  }
};

// n standard normals times `scale`, from stream (seed, 0); the seed is in
// each test's body so a failure can be rerun with the same inputs.
inline std::vector<float> random_floats(std::size_t n, uint64_t seed, double scale = 1.0) {
  Stream s(seed, 0);
  std::vector<float> v(n);
  for (auto& x : v) x = float(scale * s.normal());
  return v;
}

inline std::vector<int> random_tokens(std::size_t n, int vocab, uint64_t seed) {
  Stream s(seed, 1);
  std::vector<int> v(n);
  for (auto& x : v) x = int(s.uniform() * vocab) % vocab;
  return v;
}

// RMS relative errors a kernel may show against the CPU's reference: an
// exact rewrite in float (same sums, other order), a float forward, a float
// backward (longer chains of sums).
inline constexpr double kExact = 1e-6, kForward = 1e-5, kBackward = 5e-5;

// Downloads a device result and checks it against the CPU's within `tol`.
template <class T>
void expect_close(const std::string& what, const DeviceBuffer<T>& got, const std::vector<T>& want, double tol) {
  const double err = rms_relative_error(got.download(), want);
  EXPECT_LT(err, tol) << what << ": RMS relative error " << err << " (tolerance " << tol << ")";
}

}  // namespace routelab::testing
