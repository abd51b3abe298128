#include "runs/export.h"

#include <fmt/core.h>

#include "io/output.h"
#include "io/safetensors.h"
#include "io/sha256.h"
#include "io/table.h"
#include "nn/model.h"
#include "runs/run_dir.h"

namespace routelab::runs {

namespace {

// Exported names of param_layout's leaf names (the part after "layerN.", or
// the whole name of a tensor outside the layers). qkvw and qkvb split into
// their q, k and v thirds.
struct LeafName {
  const char* leaf;
  const char* name;
};
const LeafName kLeaves[] = {
    {"ln1w", "ln1.weight"},    {"ln1b", "ln1.bias"},     {"attprojw", "attn.wo"},    {"attprojb", "attn.bo"},
    {"ln2w", "ln2.weight"},    {"ln2b", "ln2.bias"},     {"fcw", "mlp.wfc"},         {"fcb", "mlp.bfc"},
    {"fcprojw", "mlp.wproj"},  {"fcprojb", "mlp.bproj"}, {"angles", "angles"},       {"psiw", "psi.w"},
    {"psib", "psi.b"},         {"fgw", "forget.w"},      {"fgb", "forget.b"},        {"hhw", "householder.w"},
    {"hhb", "householder.b"},  {"hhu", "householder.u"}, {"hhc", "householder.c"},   {"wte", "embed"},
    {"lnfw", "ln_f.weight"},   {"lnfb", "ln_f.bias"},    {"hhw1", "householder.w1"}, {"hhw2", "householder.w2"},
    {"hhconv", "householder.conv"},
};

}  // namespace

std::vector<ExportTensor> export_layout(const nn::ModelConfig& m) {
  std::vector<ExportTensor> out;
  for (const nn::ParamTensor& t : nn::param_layout(m)) {
    const std::size_t dot = t.name.find('.');
    const std::string leaf = dot == std::string::npos ? t.name : t.name.substr(dot + 1);
    const std::string prefix = dot == std::string::npos ? "" : "layers." + t.name.substr(5, dot - 5) + ".";
    if (leaf == "qkvw" || leaf == "qkvb") {
      // (3C, C) and (3C): three (C, C) and (C) tensors, q then k then v.
      std::vector<int64_t> shape = t.shape;
      shape[0] /= 3;
      const std::size_t third = std::size_t(element_count(shape));
      for (int i = 0; i < 3; ++i)
        out.push_back({prefix + "attn." + (leaf == "qkvw" ? 'w' : 'b') + "qkv"[i], shape, t.offset + i * third});
    } else {
      const char* name = nullptr;
      for (const LeafName& l : kLeaves)
        if (leaf == l.leaf) name = l.name;
      if (!name) throw std::logic_error("export_layout: no exported name for parameter " + t.name);
      out.push_back({prefix + name, t.shape, t.offset});
    }
  }
  return out;
}

std::string export_safetensors(const RunConfig& c, int step, const std::string& checkpoint_sha256,
                               const std::vector<float>& params) {
  std::vector<SafetensorsTensor> tensors;
  for (const ExportTensor& t : export_layout(c.model))
    tensors.push_back({t.name, t.shape, std::vector<float>(params.begin() + t.offset, params.begin() + t.offset + t.size())});
  const nlohmann::json j = to_json(c);
  const std::map<std::string, std::string> metadata = {
      {"format", "routelab-export 1"},
      {"scheme", c.model.scheme},
      {"model", j.at("model").dump()},
      {"config", j.dump()},
      {"seed", std::to_string(c.train.seed)},
      {"step", std::to_string(step)},
      {"steps", std::to_string(c.train.steps)},
      {"checkpoint_sha256", checkpoint_sha256},
      {"params_sha256", sha256_hex(params.data(), params.size() * sizeof(float))},
  };
  return safetensors_bytes(tensors, metadata);
}

RunConfig exported_config(const std::string& file) {
  const auto bytes = read_file_bytes(file);
  if (!bytes) throw ConfigError(fmt::format("{}: cannot be read", file));
  SafetensorsHeader h;
  try {
    h = parse_safetensors(*bytes);
  } catch (const SafetensorsError& e) {
    throw ConfigError(fmt::format("{}: {}", file, e.what()));
  }
  const auto format = h.metadata.find("format"), config = h.metadata.find("config");
  if (format == h.metadata.end() || format->second != "routelab-export 1" || config == h.metadata.end())
    throw ConfigError(fmt::format("{}: not a routelab export (its metadata lacks format 'routelab-export 1' and config)",
                                  file));
  const nlohmann::json j = nlohmann::json::parse(config->second, nullptr, false);
  if (j.is_discarded()) throw ConfigError(fmt::format("{}: its config metadata is not JSON", file));
  return from_json(j, file);
}

void export_run(const std::string& run_dir, const std::string& out) {
  const RunConfig c = load_run_dir_config(run_dir);  // a missing run is named first
  if (!out.ends_with(".safetensors") || out.size() == std::string(".safetensors").size())
    throw OutputError(fmt::format("export: --out '{}' is not accepted; name a file FILE.safetensors", out));
  const auto locks = lock_runs_written({run_dir}, {out});
  OutputFiles files("export");
  files.input(config_path(run_dir));
  files.input(checkpoint_path(run_dir));
  files.output(out, "--out");
  std::string file_sha256;  // of the bytes the weights came from, for the metadata
  const Checkpoint ck = load_run_checkpoint(run_dir, c, &file_sha256);
  files.set(out, export_safetensors(c, ck.step, file_sha256, ck.params));
  files.commit();
}

}  // namespace routelab::runs
