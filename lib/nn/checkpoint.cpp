#include "nn/checkpoint.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/core.h>

#include "io/sha256.h"
#include "io/table.h"

namespace routelab::nn {

namespace {

constexpr const char* kMagic = "routelab-checkpoint 1";

// The first differing leaf, as "[model] scheme = \"rope\", not \"alibi\"".
std::string first_difference(const nlohmann::json& have, const nlohmann::json& want, const std::string& path) {
  if (have.is_object() && want.is_object()) {
    for (const auto& [k, v] : want.items()) {
      if (!have.contains(k)) return fmt::format("{} {} is missing", path, k);
      const std::string sub = path.empty() ? "[" + k + "]" : path + " " + k;
      std::string d = first_difference(have[k], v, sub);
      if (!d.empty()) return d;
    }
    return "";
  }
  return have == want ? "" : fmt::format("{} = {}, not {}", path, have.dump(), want.dump());
}

}  // namespace

void save_checkpoint(const std::string& path, const RunConfig& c, int step, const std::vector<float>& params,
                     const AdamW& opt) {
  std::string payload(3 * params.size() * sizeof(float), '\0');
  char* p = payload.data();
  for (const auto* v : {&params, &opt.m, &opt.v}) {
    std::memcpy(p, v->data(), v->size() * sizeof(float));
    p += v->size() * sizeof(float);
  }
  const nlohmann::json header = {{"config", to_json(c)},
                                 {"step", step},
                                 {"params", params.size()},
                                 {"sha256", sha256_hex(payload.data(), payload.size())}};
  write_file_atomic(path, std::string(kMagic) + "\n" + header.dump() + "\n" + payload);
}

Checkpoint load_checkpoint(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw CheckpointError(fmt::format("checkpoint {} cannot be read", path));
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string all = ss.str();
  const std::size_t l1 = all.find('\n');
  const std::size_t l2 = l1 == std::string::npos ? l1 : all.find('\n', l1 + 1);
  if (l2 == std::string::npos || all.compare(0, l1, kMagic) != 0)
    throw CheckpointError(fmt::format("{} is not a routelab checkpoint (expected first line '{}')", path, kMagic));
  Checkpoint ck;
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(all.substr(l1 + 1, l2 - l1 - 1));
    ck.config = header.at("config");
    ck.step = header.at("step").get<int>();
    const std::size_t n = header.at("params").get<std::size_t>();
    const std::string payload = all.substr(l2 + 1);
    if (payload.size() != 3 * n * sizeof(float) || sha256_hex(payload.data(), payload.size()) != header.at("sha256"))
      throw CheckpointError(fmt::format("checkpoint {} is damaged (size or sha256 of its weights differ)", path));
    ck.params.resize(n);
    ck.opt = AdamW(n);
    const char* p = payload.data();
    for (auto* v : {&ck.params, &ck.opt.m, &ck.opt.v}) {
      std::memcpy(v->data(), p, n * sizeof(float));
      p += n * sizeof(float);
    }
  } catch (const nlohmann::json::exception&) {
    throw CheckpointError(fmt::format("checkpoint {} is damaged (its header is not valid)", path));
  }
  return ck;
}

void require_same_config(const Checkpoint& ck, const RunConfig& c, const std::string& path) {
  nlohmann::json want = to_json(c);
  nlohmann::json have = ck.config;
  // Bookkeeping that does not change the weights may differ.
  for (auto* j : {&want, &have}) {
    (*j)["train"].erase("checkpoint_every");
    (*j)["train"].erase("log_every");
    j->erase("data");
  }
  // Checkpoints from before householder_beta existed had its default.
  if (have.contains("model") && !have["model"].contains("householder_beta")) have["model"]["householder_beta"] = "path";
  // ... and before learned_sigma and learned_shared (issue 14).
  if (have.contains("model") && !have["model"].contains("learned_sigma")) have["model"]["learned_sigma"] = 1.0;
  if (have.contains("model") && !have["model"].contains("learned_shared")) have["model"]["learned_shared"] = false;
  const std::string d = first_difference(have, want, "");
  if (!d.empty())
    throw CheckpointError(
        fmt::format("checkpoint {} was written for another configuration: {} (start a new run directory)", path,
                    d));
}

}  // namespace routelab::nn
