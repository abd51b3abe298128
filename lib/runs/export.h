// A trained run's weights as a safetensors file (io/safetensors.h) that other
// tools (PyTorch: bench/peers/model_torch.py) load without routelab. Every
// parameter under a stable name (docs/export.md lists each with its shape
// and meaning); the tensors in the file's data are the parameter buffer's
// floats in its own order, so the data's sha256 is the weights'. The header's
// metadata carries the run's configuration and what random angles need.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/shape.h"
#include "runs/config.h"

namespace routelab::runs {

// One exported tensor: its name and shape, and where its values lie in the
// flat parameter buffer (param_layout): floats [offset, offset + size).
struct ExportTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::size_t offset;
  std::size_t size() const { return std::size_t(element_count(shape)); }
};

// Every parameter of a model of configuration m, in buffer order, each float
// in exactly one tensor.
std::vector<ExportTensor> export_layout(const nn::ModelConfig& m);

// The file's bytes. Metadata (every value a string): format
// ("routelab-export 1"), scheme, model (the [model] table as JSON), config
// (the whole run configuration as JSON), seed (the run's seed: initial
// weights and random angles), step (steps trained), steps (steps
// configured), checkpoint_sha256 (sha256sum of the checkpoint file) and
// params_sha256 (of the data section: the float32 weights).
std::string export_safetensors(const RunConfig& c, int step, const std::string& checkpoint_sha256,
                               const std::vector<float>& params);

// The run configuration an exported file carries (its `config` metadata),
// so a model can be scored on its task's sets without its run folder. A file
// that is not a routelab export is refused with a ConfigError naming it.
RunConfig exported_config(const std::string& file);

// routelab export: RUN's checkpoint to `out`. A run without a checkpoint, a
// damaged checkpoint, a checkpoint of another configuration or an output
// that cannot be written (io/output.h), or one not named *.safetensors, is
// refused with one line before anything is written.
void export_run(const std::string& run_dir, const std::string& out);

}  // namespace routelab::runs
