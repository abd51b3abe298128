#include "runs/run_dir.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/core.h>

#include "io/output.h"
#include "io/sha256.h"
#include "io/table.h"
#include "nn/model.h"
#include "stats/distributed.h"

namespace routelab::runs {

namespace fs = std::filesystem;

std::unique_ptr<RunLock> lock_run(const std::string& dir, const std::string& what) {
  std::unique_ptr<RunLock> lock;
  std::exception_ptr refusal;
  if (dist::is_root()) try {
      lock = std::make_unique<RunLock>(dir, what);
    } catch (...) {
      refusal = std::current_exception();
    }
  char refused = refusal != nullptr;
  dist::broadcast_bytes(&refused, 1);
  if (refusal) std::rethrow_exception(refusal);
  if (refused) throw OutputError(what + ": rank 0 could not lock " + dir);  // rank 0 says why
  return lock;
}

std::string run_identity(const std::string& run_dir) {
  if (run_dir.empty()) return "";
  std::error_code ec;
  const fs::path a = fs::absolute(run_dir, ec);
  if (ec) return fs::path(run_dir).lexically_normal().string();
  const fs::path p = fs::weakly_canonical(a, ec);
  return ec ? a.lexically_normal().string() : p.string();
}

std::vector<std::unique_ptr<RunLock>> lock_runs_written(const std::vector<std::string>& runs,
                                                        const std::vector<std::string>& outputs) {
  auto inside = [](const std::string& file, const std::string& dir) {
    const fs::path f = fs::path(run_identity(file)).parent_path(), d = run_identity(dir);
    return std::mismatch(d.begin(), d.end(), f.begin(), f.end()).first == d.end();
  };
  std::vector<std::unique_ptr<RunLock>> locks;
  for (const auto& run : runs)
    if (fs::is_directory(run) && std::any_of(outputs.begin(), outputs.end(), [&](const std::string& out) {
          return !out.empty() && inside(out, run);
        }))
      locks.push_back(lock_run(run, "--run"));
  return locks;
}

std::string checkpoint_path(const std::string& run_dir) { return (fs::path(run_dir) / "checkpoint.bin").string(); }
std::string config_path(const std::string& run_dir) { return (fs::path(run_dir) / "config.toml").string(); }

RunConfig load_run_dir_config(const std::string& run_dir) {
  if (!fs::exists(config_path(run_dir)))
    throw RunDirError(fmt::format("{} is not a run directory (no config.toml); train one with routelab train", run_dir));
  return load_run_config(config_path(run_dir));
}

namespace {

// Version 2 (issue 16): the sha256 trailer covers the whole file, header
// included. Version 1 files (its sha256 covered the weights only) still load,
// with their header's step and sizes checked.
constexpr const char* kMagic = "routelab-checkpoint 2";
constexpr const char* kMagicV1 = "routelab-checkpoint 1";
constexpr std::size_t kTrailer = 1 + 64;  // "\n" and the hex digest

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
                     const nn::AdamW& opt) {
  std::string payload(3 * params.size() * sizeof(float), '\0');
  char* p = payload.data();
  for (const auto* v : {&params, &opt.m, &opt.v}) {
    std::memcpy(p, v->data(), v->size() * sizeof(float));
    p += v->size() * sizeof(float);
  }
  const nlohmann::json header = {{"config", to_json(c)}, {"step", step}, {"params", params.size()}};
  const std::string body = std::string(kMagic) + "\n" + header.dump() + "\n" + payload;
  write_file_atomic(path, body + "\n" + sha256_hex(body.data(), body.size()));
}

Checkpoint load_checkpoint(const std::string& path, std::string* file_sha256) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw CheckpointError(fmt::format("checkpoint {} cannot be read", path));
  std::stringstream ss;
  ss << f.rdbuf();
  std::string all = ss.str();
  if (file_sha256) *file_sha256 = sha256_hex(all.data(), all.size());
  const std::size_t l1 = all.find('\n');
  const bool v2 = l1 != std::string::npos && all.compare(0, l1, kMagic) == 0;
  const bool v1 = l1 != std::string::npos && all.compare(0, l1, kMagicV1) == 0;
  if (!v1 && !v2)
    throw CheckpointError(fmt::format("{} is not a routelab checkpoint (expected first line '{}')", path, kMagic));
  auto damaged = [&](const std::string& what) {
    return CheckpointError(fmt::format("checkpoint {} is damaged ({}); train again or restore it", path, what));
  };
  if (v2) {
    if (all.size() < l1 + kTrailer || all[all.size() - kTrailer] != '\n') throw damaged("no checksum at its end");
    const std::string want = all.substr(all.size() - 64);
    all.resize(all.size() - kTrailer);
    if (sha256_hex(all.data(), all.size()) != want) throw damaged("its sha256 differs");
  }
  const std::size_t l2 = all.find('\n', l1 + 1);
  if (l2 == std::string::npos) throw damaged("no header line");
  Checkpoint ck;
  try {
    const nlohmann::json header = nlohmann::json::parse(all.substr(l1 + 1, l2 - l1 - 1));
    ck.config = header.at("config");
    const std::size_t bytes = all.size() - l2 - 1;
    const auto n = header.at("params").get<int64_t>();
    // Sizes before any allocation: three float tensors of n each.
    if (n < 0 || std::size_t(n) > bytes / (3 * sizeof(float)) || bytes != 3 * std::size_t(n) * sizeof(float))
      throw damaged("its size does not match its header");
    if (v1 && sha256_hex(all.data() + l2 + 1, bytes) != header.at("sha256")) throw damaged("its sha256 differs");
    ck.step = header.at("step").get<int>();
    const int steps = ck.config.at("train").at("steps").get<int>();
    if (ck.step < 0 || ck.step > steps)
      throw damaged(fmt::format("its step {} is outside [0, {}]", ck.step, steps));
    ck.params.resize(std::size_t(n));
    ck.opt = nn::AdamW(std::size_t(n));
    const char* p = all.data() + l2 + 1;
    for (auto* v : {&ck.params, &ck.opt.m, &ck.opt.v}) {
      std::memcpy(v->data(), p, std::size_t(n) * sizeof(float));
      p += std::size_t(n) * sizeof(float);
    }
  } catch (const nlohmann::json::exception&) {
    throw damaged("its header is not valid");
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
    if (j->contains("data")) (*j)["data"].erase("corpus");  // where the corpus lives; a task is the run's data
  }
  // A task's parameters that its task (or the corpus) does not read.
  const std::string task = want["data"].value("task", "");
  for (auto* j : {&want, &have})
    for (const char* key : {"flipflop_p", "recall_keys", "recall_values", "recall_query"})
      if (!data::task_reads(task, key) && j->contains("data")) (*j)["data"].erase(key);
  // Checkpoints written before a key existed had the value it was added with.
  // Not from_json's defaults: a default may change later (learned_init did).
  static const struct {
    const char *section, *key;
    nlohmann::json before;
  } added_keys[] = {
      {"model", "householder_beta", "path"},
      {"model", "learned_sigma", 1.0},  // issue 14
      {"model", "learned_shared", false},
      {"train", "passkey_fraction", 0.0},  // issue 35
      {"train", "data_seed", 0},
      {"data", "task", ""},  // issue 51
      {"data", "flipflop_p", 0.8},
      {"data", "recall_keys", 16},
      {"data", "recall_values", 10},
      {"data", "recall_query", 0.25},
  };
  for (const auto& a : added_keys)
    if (!have[a.section].contains(a.key) && want[a.section].contains(a.key)) have[a.section][a.key] = a.before;
  const std::string d = first_difference(have, want, "");
  if (!d.empty())
    throw CheckpointError(
        fmt::format("checkpoint {} was written for another configuration: {} (start a new run directory)", path,
                    d));
  if (ck.params.size() != nn::param_count(c.model))
    throw CheckpointError(fmt::format("checkpoint {} holds {} parameters, its configuration {}", path,
                                      ck.params.size(), nn::param_count(c.model)));
}

Checkpoint load_run_checkpoint(const std::string& run_dir, const RunConfig& c, std::string* file_sha256) {
  const std::string path = checkpoint_path(run_dir);
  if (!fs::exists(path))
    throw RunDirError(fmt::format("{} holds no checkpoint yet; train it first (routelab train --resume)", run_dir));
  Checkpoint ck = load_checkpoint(path, file_sha256);
  require_same_config(ck, c, path);
  return ck;
}

}  // namespace routelab::runs
