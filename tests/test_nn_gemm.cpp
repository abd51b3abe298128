// The layers' register-tiled products and sums (nn/gemm.h): the naive
// product on ragged shapes in either layout, nothing written past the
// output's columns, and the property the layers' thread invariance rests on:
// a result's bytes do not depend on how rows, columns or k are split.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "nn/gemm.h"
#include "rng/stream.h"

namespace {

using namespace routelab;
using namespace routelab::nn;

template <class R>
std::vector<R> normals(std::size_t n, uint64_t seed) {
  Stream s(seed, 0);
  std::vector<R> v(n);
  for (auto& x : v) x = R(s.normal());
  return v;
}

// out = init + A B or out += A B in double, A(r, k) = a[r ar + k ak], B
// row-major (K x cols).
template <class R>
std::vector<double> naive(const std::vector<R>& out, int ldo, const R* a, int64_t ar, int64_t ak, const R* b,
                          int rows, int K, int cols, const R* init, bool accumulate) {
  std::vector<double> want(out.begin(), out.end());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      double s = accumulate ? double(out[r * ldo + c]) : init ? double(init[c]) : 0.0;
      for (int k = 0; k < K; ++k) s += double(a[r * ar + k * ak]) * double(b[k * cols + c]);
      want[r * ldo + c] = s;
    }
  return want;
}

template <class R>
void check_shapes(double tolerance) {
  const int row_counts[] = {1, 5, 6, 13};
  const int ks[] = {1, 7, 64, 70};
  const int col_counts[] = {1, 5, 16, 17, 33, 64, 65, 130};
  const R sentinel = R(1234.5);
  for (int rows : row_counts)
    for (int K : ks)
      for (int cols : col_counts)
        for (int variant = 0; variant < 4; ++variant) {
          const bool transposed_a = variant & 1, accumulate = variant & 2;
          const auto a = normals<R>(std::size_t(rows) * K, 1), b = normals<R>(std::size_t(K) * cols, 2);
          const auto init = normals<R>(std::size_t(cols), 3);
          // A stored as rows x K, or as its transpose K x rows.
          const int64_t ar = transposed_a ? 1 : K, ak = transposed_a ? rows : 1;
          const int ldo = cols + 3;  // columns past cols must stay untouched
          std::vector<R> out = normals<R>(std::size_t(rows) * ldo, 4);
          for (int r = 0; r < rows; ++r)
            for (int c = cols; c < ldo; ++c) out[r * ldo + c] = sentinel;
          const auto want = naive(out, ldo, a.data(), ar, ak, b.data(), rows, K, cols,
                                  accumulate ? nullptr : init.data(), accumulate);
          std::vector<R> scratch;
          const auto B = gemm::panels_of(b.data(), cols, 1, K, cols, scratch);
          gemm::multiply(out.data(), ldo, a.data(), ar, ak, B, rows, K, cols, accumulate ? nullptr : init.data(),
                         accumulate);
          double worst = 0;
          for (std::size_t i = 0; i < out.size(); ++i) worst = std::max(worst, std::abs(double(out[i]) - want[i]));
          EXPECT_LT(worst, tolerance * std::sqrt(double(K) + 1))
              << "rows " << rows << " K " << K << " cols " << cols << " variant " << variant;
          for (int r = 0; r < rows; ++r)
            for (int c = cols; c < ldo; ++c) ASSERT_EQ(out[r * ldo + c], sentinel) << "wrote past cols";
        }
}

TEST(nn_gemm, multiply_is_the_naive_product_on_ragged_shapes) {
  check_shapes<float>(2e-6);
  check_shapes<double>(1e-14);
}

TEST(nn_gemm, packed_and_in_place_panels_give_the_same_bytes) {
  // B with whole vectors per row is read in place; the same B packed (read
  // through a column stride, which forces the copy) must give the same bits.
  const int rows = 11, K = 40, cols = 2 * gemm::kLanes<float>;
  const auto a = normals<float>(std::size_t(rows) * K, 5), b = normals<float>(std::size_t(K) * cols, 6);
  std::vector<float> bt(b.size());  // B^T, so B(k, c) = bt[c K + k]
  for (int k = 0; k < K; ++k)
    for (int c = 0; c < cols; ++c) bt[c * K + k] = b[k * cols + c];
  std::vector<float> s1, s2, o1(std::size_t(rows) * cols), o2(o1.size());
  const auto in_place = gemm::panels_of(b.data(), cols, 1, K, cols, s1);
  const auto packed = gemm::panels_of(bt.data(), 1, K, K, cols, s2);
  EXPECT_EQ(in_place.b, b.data());
  EXPECT_NE(packed.b, bt.data());
  gemm::multiply(o1.data(), cols, a.data(), K, 1, in_place, rows, K, cols, static_cast<const float*>(nullptr), false);
  gemm::multiply(o2.data(), cols, a.data(), K, 1, packed, rows, K, cols, static_cast<const float*>(nullptr), false);
  EXPECT_EQ(std::memcmp(o1.data(), o2.data(), o1.size() * sizeof(float)), 0);
}

TEST(nn_gemm, a_result_does_not_depend_on_how_the_work_is_split) {
  const int rows = 29, K = 300, cols = 150;
  const auto a = normals<float>(std::size_t(rows) * K, 7), b = normals<float>(std::size_t(K) * cols, 8);
  const auto bias = normals<float>(std::size_t(cols), 9);
  std::vector<float> scratch;
  const auto B = gemm::panels_of(b.data(), cols, 1, K, cols, scratch);
  std::vector<float> whole(std::size_t(rows) * cols), split(whole.size());
  gemm::multiply(whole.data(), cols, a.data(), K, 1, B, rows, K, cols, bias.data(), false);
  // Rows in uneven blocks; within each, k in blocks added in order, the
  // first starting from the bias; columns one panel at a time.
  const int row_cuts[] = {0, 4, 17, 18, rows}, k_cuts[] = {0, 1, 97, 200, K};
  for (int i = 0; i + 1 < int(std::size(row_cuts)); ++i)
    for (int j = 0; j + 1 < int(std::size(k_cuts)); ++j)
      for (int c0 = 0; c0 < cols; c0 += gemm::kPanel<float>) {
        const int r0 = row_cuts[i], k0 = k_cuts[j], width = std::min(gemm::kPanel<float>, cols - c0);
        const gemm::Panels<float> part{B.b + k0 * B.row + c0 / gemm::kPanel<float> * B.panel, B.row, B.panel};
        gemm::multiply(split.data() + r0 * cols + c0, cols, a.data() + r0 * K + k0, K, 1, part, row_cuts[i + 1] - r0,
                       k_cuts[j + 1] - k0, width, j == 0 ? bias.data() + c0 : nullptr, j > 0);
      }
  EXPECT_EQ(std::memcmp(whole.data(), split.data(), whole.size() * sizeof(float)), 0);
}

TEST(nn_gemm, sums_take_one_fixed_order_wherever_the_data_lies) {
  const int n = 77;
  const auto x = normals<float>(n, 10);
  // The order sum_of promises: lane j adds i = j mod kLanes in order, then
  // the lanes in order.
  constexpr int L = gemm::kLanes<float>;
  float lanes[L] = {};
  for (int i = 0; i < n; ++i) lanes[i % L] += x[i];
  float want = 0;
  for (float l : lanes) want += l;
  for (int offset = 0; offset < 16; ++offset) {
    std::vector<float> shifted(n + 16);
    std::copy(x.begin(), x.end(), shifted.begin() + offset);
    const float* p = shifted.data() + offset;
    const float got = gemm::sum_of<float>(n, [&](int i) { return p[i]; });
    EXPECT_EQ(std::memcmp(&got, &want, sizeof got), 0) << "offset " << offset;
  }
}

}  // namespace
