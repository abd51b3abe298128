// Weights out (issue 18): the safetensors writer read back (header length,
// offsets, alignment, metadata, values), its refusals and the reader's, the
// exported names covering every parameter of every scheme once, and
// `routelab export` as a user meets it, refusals included.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "cli_helpers.h"
#include "io/safetensors.h"
#include "io/sha256.h"
#include "nn/model.h"
#include "nn/scheme.h"
#include "runs/export.h"

namespace {

using namespace routelab;
using namespace routelab::testing;

std::vector<SafetensorsTensor> two_tensors() {
  return {{"a.w", {2, 3}, {1, 2, 3, 4, 5, 6}}, {"b", {3}, {-1.5f, 0.25f, 7}}};
}

TEST(export_safetensors, header_reads_back_with_aligned_contiguous_data) {
  const std::string bytes = safetensors_bytes(two_tensors(), {{"scheme", "rope"}, {"step", "12"}});
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u) << "the data must start 8-byte aligned";
  const std::string json = bytes.substr(8, n);
  EXPECT_EQ(json.find_last_not_of(' '), json.rfind('}')) << "padding is spaces only";
  const auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j["__metadata__"]["scheme"], "rope");
  EXPECT_EQ(j["a.w"]["dtype"], "F32");
  EXPECT_EQ(j["a.w"]["shape"], (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(j["a.w"]["data_offsets"], (std::vector<uint64_t>{0, 24}));
  EXPECT_EQ(j["b"]["data_offsets"], (std::vector<uint64_t>{24, 36}));
  EXPECT_EQ(bytes.size(), 8 + n + 36);

  const SafetensorsHeader h = parse_safetensors(bytes);
  EXPECT_EQ(h.data_start, 8 + n);
  ASSERT_EQ(h.tensors.size(), 2u);
  EXPECT_EQ(h.tensors[0].name, "a.w");
  EXPECT_EQ(h.metadata.at("step"), "12");
  EXPECT_EQ(safetensors_values(bytes, h, "b"), (std::vector<float>{-1.5f, 0.25f, 7}));
  EXPECT_EQ(safetensors_values(bytes, h, "a.w"), two_tensors()[0].values);
  // Little-endian IEEE floats: -1.5f is bfc00000.
  const unsigned char* b = reinterpret_cast<const unsigned char*>(bytes.data() + h.data_start + 24);
  EXPECT_EQ((std::vector<int>{b[0], b[1], b[2], b[3]}), (std::vector<int>{0x00, 0x00, 0xc0, 0xbf}));
}

TEST(export_safetensors, a_scalar_and_an_empty_tensor_are_written) {
  const std::string bytes = safetensors_bytes({{"s", {}, {3}}, {"e", {0, 4}, {}}}, {});
  const SafetensorsHeader h = parse_safetensors(bytes);
  EXPECT_EQ(safetensors_values(bytes, h, "s"), std::vector<float>{3});
  EXPECT_TRUE(safetensors_values(bytes, h, "e").empty());
}

TEST(export_safetensors, writer_refuses_bad_tensor_lists) {
  auto refuses = [](std::vector<SafetensorsTensor> ts, const std::string& says) {
    try {
      safetensors_bytes(ts, {});
      ADD_FAILURE() << "accepted; expected: " << says;
    } catch (const SafetensorsError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refuses({{"a", {2}, {1, 2}}, {"a", {1}, {3}}}, "named twice");
  refuses({{"", {1}, {1}}}, "empty name");
  refuses({{"__metadata__", {1}, {1}}}, "reserved");
  refuses({{"a", {2, 2}, {1, 2, 3}}}, "has 3 values, its shape holds 4");
  refuses({{"a", {-1}, {}}}, "negative");
}

TEST(export_safetensors, reader_refuses_broken_files) {
  const std::string good = safetensors_bytes(two_tensors(), {});
  uint64_t n = 0;
  std::memcpy(&n, good.data(), 8);
  auto refuses = [](const std::string& bytes, const std::string& says) {
    try {
      parse_safetensors(bytes);
      ADD_FAILURE() << "accepted; expected: " << says;
    } catch (const SafetensorsError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refuses(good.substr(0, 5), "shorter than");
  refuses(good.substr(0, 8 + n / 2), "passes the file's end");
  refuses(good.substr(0, good.size() - 4), "passes the file's end");
  refuses(good + "xxxx", "its data holds 40 bytes, its tensors 36");
  std::string not_json = good;
  not_json[8] = '[';
  refuses(not_json, "not a JSON object");
  auto with_header = [](const std::string& json) {
    std::string h = json;
    uint64_t len = h.size();
    std::string out(8, '\0');
    std::memcpy(out.data(), &len, 8);
    return out + h + std::string(8, '\0');
  };
  refuses(with_header(R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})"), "only F32");
  refuses(with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})"), "gap");
  refuses(with_header(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})"), "do not match its shape");
  refuses(with_header(R"({"a":{"dtype":"F32","shape":[1]}})"), "lacks");
}

std::vector<nn::ModelConfig> every_model() {
  std::vector<nn::ModelConfig> out;
  for (const auto& s : nn::all_schemes()) {
    nn::ModelConfig m;
    m.d_model = 24, m.heads = 3, m.layers = 2, m.mlp_ratio = 2, m.context = 16, m.scheme = s.name;
    out.push_back(m);
    if (s.angles == nn::AngleKind::learned) m.learned_shared = true, out.push_back(m);
    if (s.householder) m.householder_beta = "reflection", out.push_back(m);
  }
  return out;
}

TEST(export_layout, every_parameter_is_in_exactly_one_named_tensor) {
  for (const nn::ModelConfig& m : every_model()) {
    SCOPED_TRACE(m.scheme + (m.learned_shared ? " shared" : "") + " " + m.householder_beta);
    const auto layout = nn::param_layout(m);
    const std::size_t n = nn::param_count(m);
    std::size_t at = 0;
    std::set<std::string> names;
    for (const runs::ExportTensor& t : runs::export_layout(m)) {
      EXPECT_EQ(t.offset, at) << t.name << " does not follow the tensor before it";
      EXPECT_TRUE(names.insert(t.name).second) << t.name << " twice";
      at += t.size();
    }
    EXPECT_EQ(at, n);
    EXPECT_TRUE(names.count("embed") && names.count("ln_f.weight") && names.count("layers.1.attn.wv"));
    EXPECT_EQ(names.count("angles"), m.learned_shared ? 1u : 0u);
    const auto* s = nn::find_scheme(m.scheme);
    EXPECT_EQ(names.count("layers.0.householder.u"), s->householder && m.householder_beta == "path" ? 1u : 0u);
    EXPECT_EQ(names.count("layers.1.forget.w"), s->forget ? 1u : 0u);
    EXPECT_EQ(names.count("layers.1.psi.w"), s->angles == nn::AngleKind::projected ? 1u : 0u);
    EXPECT_EQ(names.count("layers.1.householder.w"), s->householder && !s->path_w ? 1u : 0u);
    EXPECT_EQ(names.count("layers.1.householder.conv"), s->path_w ? 1u : 0u);
  }
}

TEST(export_layout, q_k_and_v_are_the_thirds_of_the_projection) {
  nn::ModelConfig m;
  m.d_model = 8, m.heads = 2, m.layers = 1, m.mlp_ratio = 2, m.scheme = "rope";
  const nn::LayerParams lp = nn::layer_params(nn::param_layout(m), 0);
  int seen = 0;
  for (const auto& t : runs::export_layout(m)) {
    if (t.name == "layers.0.attn.wk") {
      EXPECT_EQ(t.offset, lp.qkvw + 64);
      EXPECT_EQ(t.shape, (std::vector<int64_t>{8, 8}));
      ++seen;
    }
    if (t.name == "layers.0.attn.bv") {
      EXPECT_EQ(t.offset, lp.qkvb + 16);
      EXPECT_EQ(t.shape, std::vector<int64_t>{8});
      ++seen;
    }
    if (t.name == "layers.0.mlp.wfc") {
      EXPECT_EQ(t.shape, (std::vector<int64_t>{16, 8}));
      ++seen;
    }
  }
  EXPECT_EQ(seen, 3);
}

TEST(export_safetensors, the_data_is_the_parameter_buffer_and_the_metadata_the_run) {
  runs::RunConfig c;
  c.model.d_model = 16, c.model.heads = 2, c.model.layers = 2, c.model.scheme = "random_qkv";
  c.train.seed = 1234567890123ull;
  nn::Model<float> model(c.model, c.train.seed);
  const std::vector<float> params(model.params.begin(), model.params.end());
  const std::string bytes = runs::export_safetensors(c, 7, std::string(64, 'a'), params);
  const SafetensorsHeader h = parse_safetensors(bytes);
  ASSERT_EQ(bytes.size() - h.data_start, params.size() * sizeof(float));
  EXPECT_EQ(std::memcmp(bytes.data() + h.data_start, params.data(), params.size() * sizeof(float)), 0);
  EXPECT_EQ(h.metadata.at("format"), "routelab-export 1");
  EXPECT_EQ(h.metadata.at("scheme"), "random_qkv");
  EXPECT_EQ(h.metadata.at("seed"), "1234567890123");
  EXPECT_EQ(h.metadata.at("step"), "7");
  EXPECT_EQ(h.metadata.at("steps"), std::to_string(c.train.steps));
  EXPECT_EQ(h.metadata.at("checkpoint_sha256"), std::string(64, 'a'));
  EXPECT_EQ(h.metadata.at("params_sha256"), sha256_hex(params.data(), params.size() * sizeof(float)));
  EXPECT_EQ(nlohmann::json::parse(h.metadata.at("model")), runs::to_json(c)["model"]);
  EXPECT_EQ(nlohmann::json::parse(h.metadata.at("config")), runs::to_json(c));
  const std::vector<float> wte = safetensors_values(bytes, h, "embed");
  EXPECT_EQ(wte, std::vector<float>(params.begin(), params.begin() + 256 * 16));
}

TEST(export_cli, writes_the_checkpoint_and_refuses_bad_input) {
  TempDir tmp;
  spit(tmp / "c.toml", tiny_config("learned_qkv", 3, 3));
  ASSERT_EQ(run_routelab("train --config c.toml --out run --quiet", tmp.path, tmp.path).status, 0);
  const auto r = run_routelab("export --run run --out m.safetensors", tmp.path, tmp.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.out.empty() && r.err.empty()) << r.out << r.err;
  const std::string bytes = slurp(tmp / "m.safetensors");
  const SafetensorsHeader h = parse_safetensors(bytes);
  const std::string ck = slurp(tmp / "run/checkpoint.bin");
  EXPECT_EQ(h.metadata.at("checkpoint_sha256"), sha256_hex(ck.data(), ck.size()));
  EXPECT_EQ(h.metadata.at("step"), "3");
  EXPECT_EQ(h.metadata.at("scheme"), "learned_qkv");

  fs::create_directories(tmp / "empty");
  spit(tmp / "empty/config.toml", slurp(tmp / "c.toml"));
  std::string damaged = ck;
  damaged[damaged.size() / 2] ^= 1;
  fs::create_directories(tmp / "damaged");
  spit(tmp / "damaged/config.toml", slurp(tmp / "run/config.toml"));
  spit(tmp / "damaged/checkpoint.bin", damaged);
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"export --run run --out m.bin", "name a file FILE.safetensors"},
      {"export --run run --out .safetensors", "name a file FILE.safetensors"},
      {"export --run run --out nodir/m.safetensors", "does not exist"},
      {"export --run run --out ''", "FILE.safetensors"},
      {"export --run run --out m.safetensors/", "FILE.safetensors"},
      {"export --run missing --out x.safetensors", "not a run directory"},
      {"export --run empty --out x.safetensors", "holds no checkpoint"},
      {"export --run damaged --out x.safetensors", "damaged"},
      {"export --run run", "--out is required"},
      {"export --out x.safetensors", "--run is required"},
      {"export --run run --out x.safetensors --steps 3", "--steps"},
  };
  expect_refusals_touch_nothing(cases, tmp.path);
}

TEST(export_cli, eval_losses_are_every_position_and_change_no_other_output) {
  TempDir tmp;
  spit(tmp / "c.toml", tiny_config("random_qkv", 3, 3));
  ASSERT_EQ(run_routelab("train --config c.toml --out run --quiet", tmp.path, tmp.path).status, 0);
  const auto plain = run_routelab("eval --run run --lengths 1x,40 --out a.csv --quiet", tmp.path, tmp.path);
  ASSERT_EQ(plain.status, 0) << plain.err;
  const auto with = run_routelab("eval --run run --lengths 1x,40 --out b.csv --losses l.csv --quiet", tmp.path,
                                 tmp.path);
  ASSERT_EQ(with.status, 0) << with.err;
  EXPECT_EQ(plain.out, with.out);
  EXPECT_EQ(slurp(tmp / "a.csv"), slurp(tmp / "b.csv"));
  EXPECT_EQ(slurp(tmp / "a-positions.csv"), slurp(tmp / "b-positions.csv"));
  // Rows: eval_len,window,position,nats; their mean is the CSV's bits per byte.
  std::istringstream rows(slurp(tmp / "l.csv"));
  std::string line;
  std::getline(rows, line);
  EXPECT_EQ(line, "eval_len,window,position,nats");
  std::map<int64_t, std::pair<int64_t, double>> per_length;  // rows, nats
  int64_t expect_window = 0, expect_position = 0, last_len = 0;
  while (std::getline(rows, line)) {
    int64_t len = 0, w = 0, t = 0;
    double nats = 0;
    ASSERT_EQ(std::sscanf(line.c_str(), "%ld,%ld,%ld,%lf", &len, &w, &t, &nats), 4) << line;
    if (len != last_len) expect_window = expect_position = 0, last_len = len;
    EXPECT_EQ(w, expect_window);
    EXPECT_EQ(t, expect_position);
    if (++expect_position == len) expect_position = 0, ++expect_window;
    per_length[len].first++;
    per_length[len].second += nats;
  }
  std::istringstream eval(slurp(tmp / "a.csv"));
  std::getline(eval, line);
  int lengths = 0;
  while (std::getline(eval, line)) {
    // scheme,seed,train_len,eval_len,windows,tokens,bits_per_byte,ppl
    char scheme[32];
    int64_t seed, train_len, len, windows, tokens;
    double bpb;
    ASSERT_EQ(std::sscanf(line.c_str(), "%31[^,],%ld,%ld,%ld,%ld,%ld,%lf", scheme, &seed, &train_len, &len, &windows,
                          &tokens, &bpb),
              7)
        << line;
    EXPECT_EQ(per_length[len].first, tokens);
    EXPECT_NEAR(per_length[len].second / double(tokens) / std::log(2.0), bpb, 1e-7 * bpb);
    ++lengths;
  }
  EXPECT_EQ(lengths, 2);

  const std::vector<std::pair<const char*, const char*>> cases = {
      {"eval --run run --lengths 1x --out c.csv --losses ''", "--losses: an empty path"},
      {"eval --run run --lengths 1x --out c.csv --losses run/checkpoint.bin", "also an input"},
      {"eval --run run --lengths 1x --out c.csv --losses c.csv", "--losses"},
      {"eval --run run --lengths 1x --out c.csv --losses nodir/l.csv", "does not exist"},
  };
  expect_refusals_touch_nothing(cases, tmp.path);
}

}  // namespace
