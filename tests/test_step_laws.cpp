// Every step law: samples orthogonal to 1e-12, the stated determinant class,
// the vector path equal to the matrix path, draws a function of the stream.
#include <gtest/gtest.h>

#include <set>

#include "groups/family.h"
#include "groups/so2.h"
#include "law_cases.h"
#include "planted_law.h"
#include "step_law_checks.h"

using namespace routelab;
using routelab::testing::params_for;

namespace {

using routelab::testing::LawCase;
using routelab::testing::law_cases;

// The registry is the only list of families: a new one must carry its paper
// label and a d at which `routelab families` can build it, and must be among
// the cases below, or this fails.
TEST(FamilyRegistry, EveryFamilyIsComplete) {
  std::set<std::string> tested;
  for (const auto& c : law_cases()) tested.insert(c.params.at("family"));
  for (const auto& f : routelab::families()) {
    SCOPED_TRACE(f.name);
    EXPECT_FALSE(f.paper_label.empty());
    EXPECT_TRUE(tested.count(f.name)) << "no case in law_cases()";
    Params p = params_for(f.name, {});
    if (f.default_d) p["d"] = std::to_string(f.default_d);
    EXPECT_NO_THROW(make_step_law(p));
  }
}

class StepLawTest : public ::testing::TestWithParam<LawCase> {};

TEST_P(StepLawTest, SamplesAreOrthogonalWithTheirDeterminantClass) {
  routelab::testing::expect_valid_steps(*make_step_law(GetParam().params), 7, 200);
}

// Twenty steps walked on a vector and on a matrix end at the same point.
TEST_P(StepLawTest, VectorPathEqualsMatrixPath) {
  auto law = make_step_law(GetParam().params);
  const int d = law->dim();
  std::vector<double> step(law->step_size());
  Stream s(11, 3);
  Vec x = Vec::LinSpaced(d, -1.0, 2.0);
  Mat P = Mat::Identity(d, d);
  for (int t = 0; t < 20; ++t) {
    law->draw(s, step.data());
    Vec y = x;
    law->apply(step.data(), y.data());
    const Mat M = law->matrix(step.data());
    EXPECT_LT((y - M * x).cwiseAbs().maxCoeff(), 1e-12);
    law->apply_matrix(step.data(), P);
    x = y;
  }
  EXPECT_LT((P * Vec::LinSpaced(d, -1.0, 2.0) - x).cwiseAbs().maxCoeff(), 1e-11);
}

TEST_P(StepLawTest, DrawIsAFunctionOfSeedAndStream) {
  auto law = make_step_law(GetParam().params);
  std::vector<double> a(law->step_size()), b(law->step_size()), c(law->step_size());
  Stream s1(5, 9), s2(5, 9), s3(5, 10);
  law->draw(s1, a.data());
  law->draw(s2, b.data());
  law->draw(s3, c.data());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

// draw_steps (what walk_scores calls, a batch at a time) gives the values and
// consumes the words of one draw per step, for every law: the Householder
// laws' own override and the default alike.
TEST_P(StepLawTest, DrawStepsEqualsRepeatedDraws) {
  auto law = make_step_law(GetParam().params);
  const int m = law->step_size(), count = 7;
  std::vector<double> one(std::size_t(count) * m), many(std::size_t(count) * m);
  Stream s1(17, 2), s2(17, 2);
  (void)s1.normal(), (void)s2.normal();  // start mid-way through a chunk of normals
  for (int i = 0; i < count; ++i) law->draw(s1, one.data() + std::size_t(i) * m);
  law->draw_steps(s2, many.data(), count);
  EXPECT_EQ(one, many);
  EXPECT_EQ(s1.normal(), s2.normal());
  EXPECT_EQ(s1.next_u32(), s2.next_u32());
}

// The law's kernel (groups/step_kernels.h, what the GPU runs) on the host:
// the same words drawn and the same step matrix as the law's own draw and
// apply, to rounding (Eigen's products, and Eigen's exponential against
// exp_skew_taylor for lieball and the heat walk).
TEST_P(StepLawTest, KernelDrawsTheLawsSteps) {
  auto law = make_step_law(GetParam().params);
  const auto k = law->kernel();
  ASSERT_TRUE(k) << "every family has a GPU path";
  const int d = law->dim();
  std::vector<double> step(law->step_size()), kernel_step(k->step_size());
  for (uint64_t i = 0; i < 50; ++i) {
    Stream s1(13, i), s2(13, i);
    law->draw(s1, step.data());
    kernel_draw(*k, s2, kernel_step.data());
    EXPECT_EQ(s1.next_u32(), s2.next_u32()) << "sample " << i << ": other words drawn";
    Mat M = Mat::Identity(d, d);
    for (int j = 0; j < d; ++j) kernel_apply(*k, kernel_step.data(), M.col(j).data());
    EXPECT_LT((M - law->matrix(step.data())).cwiseAbs().maxCoeff(), 1e-13) << "sample " << i;
  }
}

// A law that says it is plane rotations, which score-tail walks as the phases
// of So2Blocks with those half-widths and drift, draws what that So2Blocks
// draws: the same words and the same steps.
TEST_P(StepLawTest, PlaneRotationsAreTheLaw) {
  auto law = make_step_law(GetParam().params);
  const auto planes = law->plane_rotations();
  if (!planes) return;
  const So2Blocks blocks(law->dim(), planes->half_widths, planes->omega);
  std::vector<double> step(law->step_size()), blocks_step(blocks.step_size());
  for (uint64_t i = 0; i < 50; ++i) {
    Stream s1(13, i), s2(13, i);
    law->draw(s1, step.data());
    blocks.draw(s2, blocks_step.data());
    EXPECT_EQ(s1.next_u32(), s2.next_u32()) << "sample " << i << ": other words drawn";
    EXPECT_EQ(law->matrix(step.data()), blocks.matrix(blocks_step.data())) << "sample " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(AllFamilies, StepLawTest, ::testing::ValuesIn(law_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(StepLawRegistry, EveryFamilyHasACase) {
  std::set<std::string> covered;
  for (const auto& c : law_cases()) covered.insert(c.params.at("family"));
  for (const auto& f : families()) EXPECT_TRUE(covered.count(f.name)) << f.name;
}

TEST(StepLawRegistry, ReorthonormalizeRestoresAndKeepsDeterminant) {
  Mat P = Mat::Identity(4, 4);
  P(0, 0) = -1.0;
  P(1, 2) = 1e-9;
  const double drift = reorthonormalize_if_drifted(P);
  EXPECT_GT(drift, 1e-10);
  EXPECT_LT((P.transpose() * P - Mat::Identity(4, 4)).cwiseAbs().maxCoeff(), 1e-14);
  EXPECT_LT(P.determinant(), 0);
}

}  // namespace
