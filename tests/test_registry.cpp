// The registries are the single source (docs/extending.md): every registered
// step-law family is walked through its closed forms and `routelab verify`'s
// checks, and every registered positional scheme through the meaning of its
// angles, the probe's reading of them and its routelab.torch peer. A new
// entry works everywhere or fails here, naming the place it is missing from.
// (The places tested elsewhere from the same registries: the laws' kernels,
// FamilyRegistry and StepLawTest in tests/test_step_laws.cpp over
// tests/law_cases.h, which tests/test_gpu_sims.cpp runs too; the CPU model's
// gradients, nn_grad in tests/test_nn_grad.cpp; the GPU model, GpuModel in
// tests/test_gpu_model.cpp; docs/training.md's table, nn_schemes in
// tests/test_nn_layers.cpp; export and torch parity, torch_parity.) A switch
// over nn::AngleKind or KernelFamily that misses a value does not compile
// (-Werror=switch), this file's included.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "groups/family.h"
#include "nn/model.h"
#include "nn/scheme.h"
#include "rng/stream.h"
#include "runs/probe.h"
#include "sim_cells.h"
#include "sims/runner.h"
#include "sims/sim.h"

namespace {

using namespace routelab;

// ---------------------------------------------------------------------------
// Families

std::vector<std::string> registered_family_names() {
  std::vector<std::string> out;
  for (const auto& f : families()) out.push_back(f.name);
  return out;
}

// The parameter points of `routelab verify`'s checks of `sim` that run the
// family, each with a tenth of its check's --quick samples (at least 2000):
// the tolerance is the z = 5 protocol's, so a closed form fails once it is a
// few entry standard errors off (a few thousandths), and the slowest family
// (dithered's heat walk) takes a second or two.
std::vector<std::pair<Params, long long>> verify_points(const std::string& sim, const std::string& family) {
  std::vector<std::pair<Params, long long>> out;
  for (const SimCheck& c : find_sim(sim).checks) {
    RunRequest req;
    req.sim = sim;
    req.given = c.flags;
    for (const Params& p : expand_points(req))
      if (p.at("family") == family) out.push_back({p, std::max(2000LL, c.quick_samples / 10)});
  }
  return out;
}

SimContext registry_context(long long point, long long samples) { return SimContext{5, 2, samples, point}; }

class RegisteredFamily : public ::testing::TestWithParam<std::string> {};

// Its closed forms E M and beta = gap() against samples at every point of its
// spectral-gap checks in `routelab verify` (each row against its own theory),
// and its trace moments (E M, E M (x) M) and determinant class against walks
// of 1 and 3 steps (haar-mixing's rows) at the first of them.
TEST_P(RegisteredFamily, closed_forms_pass_at_every_verify_check_point) {
  const auto points = verify_points("spectral-gap", GetParam());
  ASSERT_FALSE(points.empty()) << GetParam() << " has no check in spectral-gap's `checks` (sims/spectral_gap.cpp): "
                               << "`routelab verify` would not test its closed forms";
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& [params, samples] = points[i];
    std::string where;
    for (const auto& [k, v] : params) where += k + "=" + v + " ";
    SCOPED_TRACE(where);
    const auto law = make_step_law(params);
    ASSERT_TRUE(law->mean()) << "no closed-form mean(): spectral-gap checks nothing";
    ASSERT_TRUE(law->gap()) << "no gap()";
    for (const SimRow& r : spectral_gap_rows(*law, registry_context(static_cast<long long>(i), samples))) {
      EXPECT_NE(r.verdict, Verdict::none) << r.quantity << " has no verdict";
      EXPECT_EQ(r.verdict, Verdict::pass) << "spectral-gap " << r.quantity << ": estimate " << r.estimate
                                          << ", theory " << r.theory.value_or(NAN);
    }
    if (i > 0) continue;
    for (const SimRow& r : haar_mixing_rows(*law, {1, 3}, registry_context(100, samples))) {
      if (r.quantity == "first_n_indistinguishable_from_haar") continue;  // a question of longer walks
      EXPECT_NE(r.verdict, Verdict::fail) << "haar-mixing " << r.quantity << " n=" << routelab::testing::cell(r, "n")
                                          << ": estimate " << r.estimate << ", theory " << r.theory.value_or(NAN);
    }
  }
}

// `routelab sim --help` and `routelab families` describe a flag by its help
// text: a family that reads a flag is named in it.
TEST_P(RegisteredFamily, every_flag_it_reads_names_it_in_its_help) {
  const FamilyInfo& f = family_info(GetParam());
  for (const std::string& flag : f.flags) {
    if (flag == "d") continue;
    const FlagSpec* spec = nullptr;
    for (const auto& s : family_flags())
      if (s.name == flag) spec = &s;
    ASSERT_NE(spec, nullptr) << "--" << flag << " is not in family_flags() (lib/groups/family.cpp)";
    EXPECT_NE(spec->help.find(f.name), std::string::npos)
        << "--" << flag << "'s help \"" << spec->help << "\" does not name " << f.name;
  }
}

INSTANTIATE_TEST_SUITE_P(families, RegisteredFamily, ::testing::ValuesIn(registered_family_names()),
                         [](const auto& info) { return info.param; });

// ---------------------------------------------------------------------------
// Schemes

std::vector<std::string> registered_scheme_names() {
  std::vector<std::string> out;
  for (const auto& s : nn::all_schemes()) out.push_back(s.name);
  return out;
}

// Two heads of 8 (4 blocks), RoPE base 100, angle_scale 2: a scale left out
// or applied twice changes every rate.
nn::ModelConfig scheme_config(const std::string& scheme) {
  nn::ModelConfig m;
  m.d_model = 16, m.heads = 2, m.layers = 2, m.mlp_ratio = 2, m.context = 16;
  m.scheme = scheme;
  m.rope_base = 100;
  m.angle_scale = 2;
  return m;
}

// f_b = base^(-2b/d_head), written out.
double known_frequency(const nn::ModelConfig& m, int b) { return std::pow(m.rope_base, -2.0 * b / m.head_dim()); }

// Angular distance, in (-pi, pi].
double angle_gap(double a, double b) { return std::abs(std::remainder(a - b, 2 * M_PI)); }

class RegisteredScheme : public ::testing::TestWithParam<std::string> {};

// What each kind of angles means, computed here from its definition (the
// comment at the top of nn/scheme.h), against the angle source the CPU
// model, the GPU model's policy (nn::angle_rates) and the probe read.
// Planted (tried, issue 55's scratch branch): RoPE with position
// interpolation whose rates leave out s fails here (and the probe's test).
TEST_P(RegisteredScheme, angles_mean_what_the_scheme_says) {
  const nn::ModelConfig m = scheme_config(GetParam());
  const nn::SchemeInfo& s = *nn::find_scheme(m.scheme);
  const auto source = nn::make_angle_source<float>(m, 7);
  const int nb = m.head_dim() / 2, B = 2, T = 400;
  std::vector<int> tokens(B * T);
  Stream ts(3, 0);
  for (int& t : tokens) t = int(ts.below(256));
  std::vector<float> inputs(std::size_t(std::max<int>(256, B * T)) * nb);  // a learned table, or projected psi
  for (std::size_t i = 0; i < inputs.size(); ++i) inputs[i] = float(0.37 * std::sin(0.7 * double(i) + 0.1));
  std::vector<double> theta(std::size_t(B) * T * nb);
  if (source) source->angles(theta.data(), tokens.data(), B, T, 1, 5, inputs.data(), 0);
  auto at = [&](int b, int t, int j) { return theta[(std::size_t(b) * T + t) * nb + j]; };
  switch (s.angles) {
    case nn::AngleKind::none:
      EXPECT_EQ(source, nullptr) << "a scheme without angles has no angle source";
      break;
    case nn::AngleKind::rope:  // theta_{t,b} = t f_b
      ASSERT_NE(source, nullptr);
      for (int b = 0; b < B; ++b)
        for (int t = 0; t < T; ++t)
          for (int j = 0; j < nb; ++j) ASSERT_LT(angle_gap(at(b, t, j), t * known_frequency(m, j)), 1e-9) << t;
      break;
    case nn::AngleKind::random: {  // running sum of psi ~ U(-s f_b, s f_b): the steps fill that interval
      ASSERT_NE(source, nullptr);
      for (int j = 0; j < nb; ++j) {
        const double a = m.angle_scale * known_frequency(m, j);
        double widest = 0;
        for (int b = 0; b < B; ++b)
          for (int t = 0; t < T; ++t) {
            const double psi = std::remainder(at(b, t, j) - (t ? at(b, t - 1, j) : 0.0), 2 * M_PI);
            ASSERT_LE(std::abs(psi), a + 1e-9) << "block " << j << " t " << t;
            widest = std::max(widest, std::abs(psi));
          }
        EXPECT_GT(widest, 0.98 * a) << "block " << j << ": no step near the half width s f_b";  // 800 steps
      }
      break;
    }
    case nn::AngleKind::learned:  // theta_t = sum_{s <= t} table[x_s][b]
    case nn::AngleKind::projected: {  // theta_t = sum_{s <= t} psi_s
      ASSERT_NE(source, nullptr);
      for (int b = 0; b < B; ++b)
        for (int j = 0; j < nb; ++j) {
          double sum = 0;
          for (int t = 0; t < T; ++t) {
            const std::size_t row = s.angles == nn::AngleKind::learned ? std::size_t(tokens[b * T + t])
                                                                       : std::size_t(b) * T + t;
            sum += double(inputs[row * nb + j]);
            ASSERT_LT(angle_gap(at(b, t, j), sum), 1e-9) << "block " << j << " t " << t;
          }
        }
      break;
    }
  }
  // The GPU model reads its rates from nn::angle_rates: for random angles the
  // half widths above, for the others f_b.
  const std::vector<double> rates = nn::angle_rates(m);
  ASSERT_EQ(int(rates.size()), nb);
  for (int j = 0; j < nb; ++j)
    EXPECT_NEAR(rates[j], (s.angles == nn::AngleKind::random ? m.angle_scale : 1.0) * known_frequency(m, j), 1e-15);
}

// The probe reads each block's step law (beta and drift, the first harmonic
// E e^{i psi_b}) as the scheme's angles make it: its closed form or table
// against the harmonic measured on the angles themselves, over i.i.d. bytes
// of 8 values. 8 x 2047 steps: a measured harmonic is within 5 standard
// errors (0.03) of its mean.
TEST_P(RegisteredScheme, probe_reads_the_step_law_its_angles_have) {
  const nn::ModelConfig m = scheme_config(GetParam());
  const nn::SchemeInfo& s = *nn::find_scheme(m.scheme);
  EXPECT_EQ(runs::probe_unreadable(s), "");
  const nn::Model<float> model(m, 1);
  std::vector<double> byte_freq(256, 0.0);
  for (int x = 0; x < 8; ++x) byte_freq[40 + x] = 1.0 / 8;
  const int nb = m.head_dim() / 2, B = 8, T = 2048;
  std::vector<int> tokens(B * T);
  Stream ts(4, 0);
  for (int& t : tokens) t = 40 + int(ts.below(8));
  const auto source = nn::make_angle_source<float>(m, 1);
  runs::PhaseStats measured(m.layers, nb, {1});
  std::vector<double> theta(std::size_t(B) * T * nb);
  std::vector<float> psi(std::size_t(B) * T * nb);
  for (std::size_t i = 0; i < psi.size(); ++i) psi[i] = float(0.8 * std::sin(1.3 * double(i)));
  for (int l = 0; source && l < m.layers; ++l) {
    const nn::LayerParams lp = nn::layer_params(model.tensors(), l);
    const float* inputs = s.angles == nn::AngleKind::projected ? psi.data()
                          : lp.angles == std::size_t(-1)      ? nullptr
                                                              : model.params.data() + lp.angles;
    source->angles(theta.data(), tokens.data(), B, T, l, 3, inputs, 0);
    measured.add(l, theta.data(), B, T);
  }
  const std::vector<std::complex<double>> harmonic = measured.step_harmonics();
  const std::vector<runs::BlockGap> gaps = runs::angle_gaps(model, byte_freq, 0.05, harmonic);
  if (!source) {
    EXPECT_TRUE(gaps.empty());
    return;
  }
  ASSERT_EQ(gaps.size(), std::size_t(m.layers) * nb);
  for (const runs::BlockGap& g : gaps) {
    const std::complex<double> read = std::polar(g.beta, g.drift), seen = harmonic[std::size_t(g.layer) * nb + g.block];
    EXPECT_LT(std::abs(read - seen), 0.03) << "layer " << g.layer << " block " << g.block << ": the probe reads beta "
                                           << g.beta << " drift " << g.drift << " (" << g.source
                                           << "), the angles have " << std::abs(seen) << " drift " << std::arg(seen);
  }
}

// lib/nn/scheme.cpp's registry, parsed from routelab.torch's SCHEMES
// (python/routelab/torch/attention.py): name -> "angles values alibi forget
// steps", as SchemeInfo would give them.
std::map<std::string, std::string> torch_schemes() {
  std::ifstream in(std::string(ROUTELAB_SOURCE_DIR) + "/python/routelab/torch/attention.py");
  std::map<std::string, std::string> out;
  std::string line;
  bool in_table = false;
  const std::regex entry(R"re(^\s*"(\w+)": Scheme\((.*)\),\s*$)re");
  while (std::getline(in, line)) {
    if (!in_table) {
      in_table = line.rfind("SCHEMES = {", 0) == 0;
      continue;
    }
    if (line.rfind("}", 0) == 0) break;
    std::smatch match;
    if (!std::regex_match(line, match, entry)) {
      ADD_FAILURE() << "routelab.torch SCHEMES: cannot read the line: " << line;
      continue;
    }
    // Scheme(angles, transport_values=False, alibi=False, forget_gate=False, steps="none")
    std::vector<std::string> fields = {"", "False", "False", "False", "none"};
    const std::vector<std::string> names = {"angles", "transport_values", "alibi", "forget_gate", "steps"};
    std::stringstream args(match[2].str());
    std::string arg;
    for (std::size_t k = 0; std::getline(args, arg, ',');) {
      arg = std::regex_replace(arg, std::regex(R"(^\s+|\s+$|")"), "");
      const auto eq = arg.find('=');
      if (eq == std::string::npos) {
        if (k < fields.size()) fields[k++] = arg;
        continue;
      }
      for (std::size_t n = 0; n < names.size(); ++n)
        if (names[n] == arg.substr(0, eq)) fields[n] = arg.substr(eq + 1);
    }
    out[match[1].str()] = fields[0] + " " + fields[1] + " " + fields[2] + " " + fields[3] + " " + fields[4];
  }
  return out;
}

// The PyTorch peer (routelab.torch) knows every scheme with the same meaning,
// so torch_parity, which walks routelab.torch's list, walks the registry.
TEST_P(RegisteredScheme, torch_peer_has_it_with_the_same_meaning) {
  const nn::SchemeInfo& s = *nn::find_scheme(GetParam());
  const auto py = [](bool b) { return std::string(b ? "True" : "False"); };
  const std::string steps = !s.householder ? "none" : s.path_w ? "path" : "householder";
  const std::string want = std::string(nn::angle_kind_name(s.angles)) + " " + py(s.values) + " " + py(s.alibi) + " " +
                           py(s.forget) + " " + steps;
  const auto torch = torch_schemes();
  const auto it = torch.find(s.name);
  ASSERT_NE(it, torch.end()) << s.name << " is missing from SCHEMES in python/routelab/torch/attention.py";
  EXPECT_EQ(it->second, want) << "routelab.torch's " << s.name << " (angles values alibi forget steps)";
}

INSTANTIATE_TEST_SUITE_P(schemes, RegisteredScheme, ::testing::ValuesIn(registered_scheme_names()),
                         [](const auto& info) { return info.param; });

TEST(Registry, torch_peer_has_no_scheme_the_registry_lacks) {
  const auto torch = torch_schemes();
  ASSERT_FALSE(torch.empty()) << "no SCHEMES table in python/routelab/torch/attention.py";
  for (const auto& [name, meaning] : torch) EXPECT_NE(nn::find_scheme(name), nullptr) << name;
}

}  // namespace
